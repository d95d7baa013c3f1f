package events

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Delivery headers. HeaderSignature is the spec's (section 6): HMAC-SHA256 of the raw body.
// HeaderTimestamp and HeaderSignatureTimestamped go beyond it, in the manner of Stripe's
// scheme: the timestamp is the attempt's, and the timestamped signature covers
// "<timestamp>.<body>", so a captured delivery cannot be replayed later under a fresh
// timestamp, and a receiver can refuse one older than DefaultTolerance.
const (
	HeaderContentType          = "Content-Type"
	HeaderDeliveryID           = "X-Svc-Delivery-Id"
	HeaderSignature            = "X-Svc-Signature"
	HeaderTimestamp            = "X-Svc-Timestamp"
	HeaderSignatureTimestamped = "X-Svc-Signature-Timestamped"
)

// SignaturePrefix starts every signature header value: "sha256=<lowercase hex>".
const SignaturePrefix = "sha256="

// DefaultTolerance is how far a delivery's X-Svc-Timestamp may be from the receiver's clock,
// either way, before Verify refuses it as a replay.
const DefaultTolerance = 5 * time.Minute

// Errors of Body, Verify and VerifyBody. Verify's window error is a *TimestampError, which
// is ErrTimestampOutOfWindow under errors.Is.
var (
	// ErrNoSignature: the delivery carries no signature header to check (or, for Verify, no
	// X-Svc-Timestamp). The catch-all webhook_url is sent unsigned.
	ErrNoSignature = errors.New("events: delivery is not signed")
	// ErrBadSignature: a signature or timestamp that is malformed or does not match the
	// body (tampered body or timestamp, or another secret).
	ErrBadSignature = errors.New("events: delivery signature does not match")
	// ErrTimestampOutOfWindow: the signature is good but its timestamp is further than the
	// tolerance from now: an old delivery replayed, or a clock far off.
	ErrTimestampOutOfWindow = errors.New("events: delivery timestamp outside the tolerance window")
	// ErrNoSecret: Verify or VerifyBody was called without a secret; an empty key would
	// accept what anyone can sign.
	ErrNoSecret = errors.New("events: no secret to verify with")
	// ErrPayloadNotObject: a delivery payload must encode as a JSON object.
	ErrPayloadNotObject = errors.New("events: payload is not a JSON object")
)

// TimestampError is Verify's answer to a well-signed delivery whose timestamp is outside the
// window; errors.Is(err, ErrTimestampOutOfWindow) holds.
type TimestampError struct {
	Timestamp time.Time     // the delivery's X-Svc-Timestamp
	Now       time.Time     // the receiver's clock
	Tolerance time.Duration // the window, either way
}

func (e *TimestampError) Error() string {
	return fmt.Sprintf("events: delivery timestamp %s is %s from now, more than %s",
		e.Timestamp.UTC().Format(time.RFC3339), e.Now.Sub(e.Timestamp).Round(time.Second), e.Tolerance)
}

// Is makes a TimestampError match ErrTimestampOutOfWindow.
func (e *TimestampError) Is(target error) bool { return target == ErrTimestampOutOfWindow }

// timestampLayout is RFC 3339 in UTC with exactly three fractional digits, so every body's
// timestamp has the same shape (time.RFC3339Nano drops trailing zeros).
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Body encodes a delivery's JSON body: {"delivery_id", "event", "timestamp", "payload"} in
// that order, the timestamp being at in UTC with milliseconds (2026-01-02T03:04:05.678Z).
// Encode it once, when the delivery is created, and store the bytes: every attempt sends
// exactly them, so the body signature stays the same and a receiver can compare retries.
//
// payload is anything encoding/json encodes to an object (a map, a struct, a
// json.RawMessage holding an object); nil is {}. HTML characters are not escaped: the body
// is never embedded in HTML, and the payload's strings arrive as they were written.
func Body(deliveryID, event string, at time.Time, payload any) ([]byte, error) {
	if deliveryID == "" || event == "" {
		return nil, errors.New("events: a delivery body needs a delivery id and an event")
	}
	p, err := marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("events: encoding the %s payload: %w", event, err)
	}
	p = bytes.TrimSpace(p)
	switch {
	case string(p) == "null":
		p = []byte("{}")
	case len(p) == 0 || p[0] != '{':
		return nil, fmt.Errorf("%w (event %s)", ErrPayloadNotObject, event)
	}
	return marshal(WebhookDelivery{DeliveryID: deliveryID, Event: event, Timestamp: at.UTC().Format(timestampLayout), Payload: p})
}

// WebhookDelivery is the JSON body of every delivery, in its fields' order: what Body encodes and
// what the OpenAPI documents declare (the 3.1 documents' webhooks give each event's payload
// its own schema).
type WebhookDelivery struct {
	DeliveryID string          `json:"delivery_id" doc:"The delivery's id, also in X-Svc-Delivery-Id: the same on every retry of the delivery." example:"dlv_6f1c9d2e-8a4b-4c1e-9f3a-2b7d5e8c0a14"`
	Event      string          `json:"event" doc:"The event's canonical name (never an alias)." example:"workflow_run_completed"`
	Timestamp  string          `json:"timestamp" format:"date-time" doc:"When the event happened, UTC with milliseconds." example:"2026-01-02T03:04:05.678Z"`
	Payload    json.RawMessage `json:"payload" doc:"The event's payload (its schema is the event's), with the registration's auto_payload keys added where the event has none of that name."`
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Sign returns the signature headers of one attempt: X-Svc-Timestamp (sentAt in Unix
// seconds) always, and with a secret X-Svc-Signature (the body's HMAC-SHA256, the spec's)
// and X-Svc-Signature-Timestamped (the HMAC-SHA256 of "<timestamp>.<body>"). Without a
// secret (the catch-all webhook_url, or a registration without one) nothing is signed.
// Call it for every attempt: the body is the same, the timestamp is the attempt's.
func Sign(secret, body []byte, sentAt time.Time) http.Header {
	h := http.Header{}
	ts := strconv.FormatInt(sentAt.Unix(), 10)
	h.Set(HeaderTimestamp, ts)
	if len(secret) > 0 {
		h.Set(HeaderSignature, SignaturePrefix+hex.EncodeToString(bodyMAC(secret, body)))
		h.Set(HeaderSignatureTimestamped, SignaturePrefix+hex.EncodeToString(timestampedMAC(secret, ts, body)))
	}
	return h
}

// Headers is the whole header set of one attempt: Content-Type: application/json,
// X-Svc-Delivery-Id, and Sign's headers. The sender adds its own (User-Agent,
// Idempotency-Key if it sends one) and nothing that changes the body.
func Headers(deliveryID string, secret, body []byte, sentAt time.Time) http.Header {
	h := Sign(secret, body, sentAt)
	h.Set(HeaderContentType, "application/json")
	h.Set(HeaderDeliveryID, deliveryID)
	return h
}

// Verify is for receivers written in Go: it checks X-Svc-Signature-Timestamped against the
// raw body and X-Svc-Timestamp, then that the timestamp is within tolerance of now, either
// way (tolerance <= 0 means DefaultTolerance). It compares in constant time. Errors:
// ErrNoSecret, ErrNoSignature, ErrBadSignature, and a *TimestampError (ErrTimestampOutOfWindow).
// A receiver should also keep the X-Svc-Delivery-Id values it has handled, for at least the
// tolerance: a retry, and a replay inside the window, carry the same one.
func Verify(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, sig := header.Get(HeaderTimestamp), header.Get(HeaderSignatureTimestamped)
	if ts == "" || sig == "" {
		return ErrNoSignature
	}
	secs, ok := unixSeconds(ts)
	if !ok {
		return ErrBadSignature
	}
	mac, ok := parseSignature(sig)
	if !ok || !hmac.Equal(mac, timestampedMAC(secret, ts, body)) {
		return ErrBadSignature
	}
	at := time.Unix(secs, 0)
	if d := now.Sub(at); d > tolerance || d < -tolerance {
		return &TimestampError{Timestamp: at, Now: now, Tolerance: tolerance}
	}
	return nil
}

// VerifyBody checks the spec's X-Svc-Signature value ("sha256=<hex>", HMAC-SHA256 of the raw
// body) in constant time. It cannot tell a replay from a delivery: prefer Verify.
func VerifyBody(secret []byte, signatureHeader string, body []byte) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	if signatureHeader == "" {
		return ErrNoSignature
	}
	mac, ok := parseSignature(signatureHeader)
	if !ok || !hmac.Equal(mac, bodyMAC(secret, body)) {
		return ErrBadSignature
	}
	return nil
}

func bodyMAC(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

func timestampedMAC(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

func parseSignature(v string) ([]byte, bool) {
	h, ok := strings.CutPrefix(strings.TrimSpace(v), SignaturePrefix)
	if !ok || len(h) != 2*sha256.Size {
		return nil, false
	}
	mac, err := hex.DecodeString(h)
	return mac, err == nil
}

// unixSeconds accepts ASCII digits only (no sign, no space): what Sign writes and what the
// README's receivers accept, so the three agree on every input.
func unixSeconds(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
