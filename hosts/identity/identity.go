// Package identity carries a signed-in person from the gateway to the runtime. The gateway
// authenticates the person (an email and a one-time code) and adds a token to the request
// it forwards; the runtime believes the token only when it verifies under the key the two
// share, so a caller that reaches the runtime directly cannot claim to be anyone.
//
// A token is base64url(claims JSON) "." base64url(HMAC-SHA256(key, label || claims part)).
// Claims name the person (sub), the organization the session belongs to (org) and an expiry
// (exp, Unix seconds); the gateway mints one per forwarded request, so it lives seconds.
package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Header is the request header that carries the token.
const Header = "X-Svc-Identity"

// MinKeyBytes is the shortest key Sign and Verify accept.
const MinKeyBytes = 32

// MaxLifetime is the longest a token may have left to live when it is verified: the gateway
// mints one per forwarded request, so a token that claims to last longer was not made for
// one and is refused (a leaked token is worthless within minutes).
const MaxLifetime = 5 * time.Minute

// label separates these MACs from any other use of the key.
const label = "svcflow identity v1\x00"

// Identity is a signed-in person as the gateway vouches for them.
type Identity struct {
	// Subject is the person: the email they signed in with.
	Subject string
	// OrgID is the organization whose form or SDK session they signed in to.
	OrgID string
	// Expires is when the token stops being accepted.
	Expires time.Time
}

type claims struct {
	Sub string `json:"sub"`
	Org string `json:"org"`
	Exp int64  `json:"exp"`
}

// Errors of Verify.
var (
	ErrMalformed = errors.New("identity: malformed token")
	ErrSignature = errors.New("identity: the token's signature does not verify")
	ErrExpired   = errors.New("identity: the token expired")
	ErrLifetime  = fmt.Errorf("identity: the token lives longer than %s", MaxLifetime)
	ErrShortKey  = fmt.Errorf("identity: the key must be at least %d bytes", MinKeyBytes)
)

// Sign returns the token for id under key.
func Sign(key []byte, id Identity) (string, error) {
	if len(key) < MinKeyBytes {
		return "", ErrShortKey
	}
	if id.Subject == "" || id.OrgID == "" {
		return "", errors.New("identity: subject and organization are required")
	}
	b, err := json.Marshal(claims{Sub: id.Subject, Org: id.OrgID, Exp: id.Expires.Unix()})
	if err != nil {
		return "", err
	}
	part := base64.RawURLEncoding.EncodeToString(b)
	return part + "." + base64.RawURLEncoding.EncodeToString(mac(key, part)), nil
}

// Verify checks token under key at now and returns the identity it carries.
func Verify(key []byte, token string, now time.Time) (Identity, error) {
	if len(key) < MinKeyBytes {
		return Identity{}, ErrShortKey
	}
	part, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 4096 {
		return Identity{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Identity{}, ErrMalformed
	}
	if !hmac.Equal(got, mac(key, part)) {
		return Identity{}, ErrSignature
	}
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return Identity{}, ErrMalformed
	}
	var c claims
	if err := json.Unmarshal(b, &c); err != nil || c.Sub == "" || c.Org == "" {
		return Identity{}, ErrMalformed
	}
	id := Identity{Subject: c.Sub, OrgID: c.Org, Expires: time.Unix(c.Exp, 0).UTC()}
	if !now.Before(id.Expires) {
		return Identity{}, ErrExpired
	}
	if id.Expires.Sub(now) > MaxLifetime {
		return Identity{}, ErrLifetime
	}
	return id, nil
}

func mac(key []byte, part string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(label))
	h.Write([]byte(part))
	return h.Sum(nil)
}
