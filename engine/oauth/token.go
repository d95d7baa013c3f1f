package oauth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/svcflow/svcflow/engine/outbound"
)

// expiryOf is when a token answer says its access token expires; nil when it does not say.
func expiryOf(tok *oauth2.Token) *time.Time {
	if tok.Expiry.IsZero() {
		return nil
	}
	t := tok.Expiry.UTC()
	return &t
}

// tokenScopes reads the scopes a token answer granted (space-separated, or Slack's commas).
func tokenScopes(tok *oauth2.Token) []string {
	s, _ := tok.Extra("scope").(string)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// tokenError words a failure of the token endpoint without the request's secrets: oauth2's
// RetrieveError quotes the whole answer, which is replaced by its status and error code.
func tokenError(provider, doing string, err error, secrets ...string) error {
	var msg string
	var re *oauth2.RetrieveError
	var oe *outbound.Error
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		msg = fmt.Sprintf("the token endpoint answered %d", status)
		if re.ErrorCode != "" {
			msg += " " + clip(re.ErrorCode, 100)
		}
		if re.ErrorDescription != "" {
			msg += ": " + clip(re.ErrorDescription, 200)
		}
	case errors.As(err, &oe):
		msg = oe.Error()
	default:
		msg = clip(err.Error(), 300)
	}
	for _, s := range secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return fmt.Errorf("%w: %s: %s: %s", ErrOAuthProvider, provider, doing, msg)
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
