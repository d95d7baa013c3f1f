package outbound

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Sentinel errors. Every error Do returns is an *Error wrapping one of them (or a network
// error); check with errors.Is.
var (
	// ErrTargetNotAllowed: the URL's scheme is not http or https, or its host is (or
	// resolves to) an address this deployment may not call: loopback, private, link-local,
	// CGNAT, multicast, unspecified, reserved. Nothing was sent.
	ErrTargetNotAllowed = errors.New("target not allowed")
	// ErrStatus: the final answer's status was not 2xx (after any retries). Do returns the
	// *Response as well, so the caller can record what the server said.
	ErrStatus = errors.New("unsuccessful status")
	// ErrBodyTooLarge: the response body is longer than the client's limit (10 MiB by
	// default). The body is not returned cut short: a truncated JSON document is not data.
	ErrBodyTooLarge = errors.New("response body too large")
	// ErrTimeout: an attempt took longer than its timeout and the retries (if any) did too.
	ErrTimeout = errors.New("timed out")
	// ErrInvalidRequest: the request cannot be sent as written (malformed URL or method, a
	// body that does not encode as JSON).
	ErrInvalidRequest = errors.New("invalid request")
)

// Machine codes, snake_case like the API's error codes, for step failures and evidence.
const (
	CodeTargetNotAllowed = "target_not_allowed"
	CodeHTTPStatus       = "http_status"
	CodeBodyTooLarge     = "body_too_large"
	CodeTimeout          = "timeout"
	CodeConnection       = "connection_failed"
	CodeInvalidRequest   = "invalid_request"
	CodeCanceled         = "canceled"
)

// TargetError is a refused target: the host as the URL named it (no credentials, no path,
// no query), the address it was refused at when it got as far as one, and why.
type TargetError struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

func (e *TargetError) Error() string {
	var b strings.Builder
	b.WriteString("target ")
	if e.Host != "" {
		b.WriteString(e.Host + " ")
	}
	b.WriteString("not allowed: ")
	if e.Addr.IsValid() && !strings.Contains(e.Host, e.Addr.String()) {
		b.WriteString(e.Addr.String() + " is a ") // what the name resolved to
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Is makes every TargetError an ErrTargetNotAllowed.
func (e *TargetError) Is(target error) bool { return target == ErrTargetNotAllowed }

// Code is the machine code: target_not_allowed.
func (e *TargetError) Code() string { return CodeTargetNotAllowed }

// Error is what Do returns when a call fails. It names the method and the host, never the
// path, the query, credentials, header values or the request body; the excerpt of a non-2xx
// answer has the request's header values (and URL secrets) blanked out in case the server
// echoed them.
type Error struct {
	Code   string // one of the Code* constants
	Method string
	Host   string // host[:port] of the URL
	// Status is the final answer's status, 0 when there was none.
	Status int
	// Excerpt is the start of a non-2xx answer's body (at most 256 bytes, one line).
	Excerpt string
	// RetryAfter is what the final answer's Retry-After asked for, when it had one: a caller
	// that can wait (a step that snoozes) may use it.
	RetryAfter time.Duration
	// Attempts is every attempt made, in order.
	Attempts []Attempt
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "outbound: %s %s: ", e.Method, e.Host)
	switch {
	case e.Code == CodeHTTPStatus:
		fmt.Fprintf(&b, "status %d", e.Status)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString(e.Code)
	}
	if n := len(e.Attempts); n > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", n)
	}
	if e.Excerpt != "" {
		b.WriteString(": " + e.Excerpt)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the machine code of an error from this package ("" for another error).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var t *TargetError
	if errors.As(err, &t) {
		return t.Code()
	}
	return ""
}

// Attempt is one try of a call, for the caller's evidence: its answer's status, or why it
// failed, and how long it took (to the response headers).
type Attempt struct {
	Status   int           `json:"status,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
}

// causeText is err's message without what net/http's url.Error adds (the method and the
// URL, whose path and query may carry secrets).
func causeText(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var u *url.Error
	if errors.As(err, &u) {
		err = u.Err
	}
	return err.Error()
}
