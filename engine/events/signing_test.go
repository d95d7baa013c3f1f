package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/events"
)

var (
	secret  = []byte("whsec_test_0123456789")
	eventAt = time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("CET", 3600))
	sentAt  = time.Date(2026, 3, 4, 4, 6, 9, 0, time.UTC)
)

func body(t *testing.T) []byte {
	t.Helper()
	b, err := events.Body("dlv_1", "workflow_run_completed", eventAt,
		map[string]any{"run_id": "run-1", "workflow_id": "wfl-1", "result": map[string]any{"note": "a<b & c>d"}})
	require.NoError(t, err)
	return b
}

func TestBody(t *testing.T) {
	t.Parallel()

	b := body(t)
	require.Equal(t, `{"delivery_id":"dlv_1","event":"workflow_run_completed","timestamp":"2026-03-04T04:06:07.891Z",`+
		`"payload":{"result":{"note":"a<b & c>d"},"run_id":"run-1","workflow_id":"wfl-1"}}`, string(b))
	require.Equal(t, b, body(t), "the same delivery encodes to the same bytes")

	var got struct {
		DeliveryID string         `json:"delivery_id"`
		Event      string         `json:"event"`
		Timestamp  time.Time      `json:"timestamp"`
		Payload    map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.True(t, got.Timestamp.Equal(eventAt.Truncate(time.Millisecond)))

	t.Run("payloads", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name    string
			payload any
			want    string // the payload as encoded; "" for ErrPayloadNotObject
		}{
			{"nil", nil, `{}`},
			{"raw object", json.RawMessage(" {\"b\": 1,\n \"a\": [true]} "), `{"b":1,"a":[true]}`},
			{"struct", struct {
				RunID string `json:"run_id"`
			}{"run-2"}, `{"run_id":"run-2"}`},
			{"empty map", map[string]int{}, `{}`},
			{"array", []int{1}, ""},
			{"string", "x", ""},
			{"raw null", json.RawMessage("null"), `{}`},
		} {
			b, err := events.Body("d", "step.started", time.Unix(10, 0), tc.payload)
			if tc.want == "" {
				require.ErrorIs(t, err, events.ErrPayloadNotObject, tc.name)
				continue
			}
			require.NoError(t, err, tc.name)
			require.Equal(t, `{"delivery_id":"d","event":"step.started","timestamp":"1970-01-01T00:00:10.000Z","payload":`+tc.want+`}`, string(b), tc.name)
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		_, err := events.Body("", "step.started", eventAt, nil)
		require.Error(t, err)
		_, err = events.Body("d", "", eventAt, nil)
		require.Error(t, err)
		_, err = events.Body("d", "step.started", eventAt, map[string]any{"f": func() {}})
		require.Error(t, err)
	})
}

func TestHeaders(t *testing.T) {
	t.Parallel()

	b := body(t)
	h := events.Headers("dlv_1", secret, b, sentAt)
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.Equal(t, "dlv_1", h.Get("X-Svc-Delivery-Id"))
	require.Equal(t, "1772597169", h.Get("X-Svc-Timestamp"))
	require.Regexp(t, `^sha256=[0-9a-f]{64}$`, h.Get("X-Svc-Signature"))
	require.Regexp(t, `^sha256=[0-9a-f]{64}$`, h.Get("X-Svc-Signature-Timestamped"))
	require.NotEqual(t, h.Get("X-Svc-Signature"), h.Get("X-Svc-Signature-Timestamped"))
	require.Len(t, h, 5)

	later := events.Headers("dlv_1", secret, b, sentAt.Add(2*time.Second))
	require.Equal(t, h.Get("X-Svc-Signature"), later.Get("X-Svc-Signature"), "a retry's body signature is the same")
	require.NotEqual(t, h.Get("X-Svc-Signature-Timestamped"), later.Get("X-Svc-Signature-Timestamped"))

	t.Run("no secret", func(t *testing.T) {
		t.Parallel()
		for _, s := range [][]byte{nil, {}} {
			h := events.Headers("dlv_1", s, b, sentAt)
			require.Equal(t, http.Header{
				"Content-Type":      {"application/json"},
				"X-Svc-Delivery-Id": {"dlv_1"},
				"X-Svc-Timestamp":   {"1772597169"},
			}, h)
			require.Equal(t, http.Header{"X-Svc-Timestamp": {"1772597169"}}, events.Sign(s, b, sentAt))
		}
	})
}

func TestVerify(t *testing.T) {
	t.Parallel()

	b := body(t)
	h := events.Headers("dlv_1", secret, b, sentAt)
	with := func(key, value string) http.Header {
		c := h.Clone()
		if value == "" {
			c.Del(key)
		} else {
			c.Set(key, value)
		}
		return c
	}
	tampered := bytes.Replace(b, []byte("run-1"), []byte("run-2"), 1)

	for _, tc := range []struct {
		name   string
		secret []byte
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"round trip", secret, h, b, sentAt, nil},
		{"tampered body", secret, h, tampered, sentAt, events.ErrBadSignature},
		{"body with a trailing newline", secret, h, append(bytes.Clone(b), '\n'), sentAt, events.ErrBadSignature},
		{"other secret", []byte("whsec_other"), h, b, sentAt, events.ErrBadSignature},
		{"no secret", nil, h, b, sentAt, events.ErrNoSecret},
		{"timestamp moved forward", secret, with("X-Svc-Timestamp", "1772597469"), b, sentAt, events.ErrBadSignature},
		{"timestamp with a sign", secret, with("X-Svc-Timestamp", "+1772597169"), b, sentAt, events.ErrBadSignature},
		{"timestamp not a number", secret, with("X-Svc-Timestamp", "yesterday"), b, sentAt, events.ErrBadSignature},
		{"no timestamp", secret, with("X-Svc-Timestamp", ""), b, sentAt, events.ErrNoSignature},
		{"no timestamped signature", secret, with("X-Svc-Signature-Timestamped", ""), b, sentAt, events.ErrNoSignature},
		{"body signature in its place", secret, with("X-Svc-Signature-Timestamped", h.Get("X-Svc-Signature")), b, sentAt, events.ErrBadSignature},
		{"no prefix", secret, with("X-Svc-Signature-Timestamped", strings.TrimPrefix(h.Get("X-Svc-Signature-Timestamped"), "sha256=")), b, sentAt, events.ErrBadSignature},
		{"short", secret, with("X-Svc-Signature-Timestamped", h.Get("X-Svc-Signature-Timestamped")[:70]), b, sentAt, events.ErrBadSignature},
		{"upper-case hex", secret, with("X-Svc-Signature-Timestamped", "sha256="+strings.ToUpper(strings.TrimPrefix(h.Get("X-Svc-Signature-Timestamped"), "sha256="))), b, sentAt, nil},
		{"unsigned (catch-all)", secret, events.Headers("dlv_1", nil, b, sentAt), b, sentAt, events.ErrNoSignature},
		// The window, either way, inclusive at exactly the tolerance.
		{"5 minutes old", secret, h, b, sentAt.Add(events.DefaultTolerance), nil},
		{"5 minutes and 1 ns old", secret, h, b, sentAt.Add(events.DefaultTolerance + 1), events.ErrTimestampOutOfWindow},
		{"an hour old", secret, h, b, sentAt.Add(time.Hour), events.ErrTimestampOutOfWindow},
		{"5 minutes ahead", secret, h, b, sentAt.Add(-events.DefaultTolerance), nil},
		{"5 minutes and 1 ns ahead", secret, h, b, sentAt.Add(-events.DefaultTolerance - 1), events.ErrTimestampOutOfWindow},
		{"old and tampered", secret, h, tampered, sentAt.Add(time.Hour), events.ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := events.Verify(tc.secret, tc.header, tc.body, tc.now, 0)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}

	t.Run("timestamp error", func(t *testing.T) {
		t.Parallel()
		err := events.Verify(secret, h, b, sentAt.Add(6*time.Minute), 0)
		var te *events.TimestampError
		require.ErrorAs(t, err, &te)
		require.Equal(t, sentAt, te.Timestamp.UTC())
		require.Equal(t, events.DefaultTolerance, te.Tolerance)
		require.Contains(t, err.Error(), "6m0s from now")
		require.False(t, errors.Is(err, events.ErrBadSignature))
	})

	t.Run("own tolerance", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, events.Verify(secret, h, b, sentAt.Add(10*time.Second), 10*time.Second))
		require.ErrorIs(t, events.Verify(secret, h, b, sentAt.Add(11*time.Second), 10*time.Second), events.ErrTimestampOutOfWindow)
	})
}

func TestVerifyBody(t *testing.T) {
	t.Parallel()

	b := body(t)
	sig := events.Sign(secret, b, sentAt).Get("X-Svc-Signature")
	require.NoError(t, events.VerifyBody(secret, sig, b))
	require.NoError(t, events.VerifyBody(secret, events.Sign(secret, b, sentAt.Add(time.Hour)).Get("X-Svc-Signature"), b))
	require.ErrorIs(t, events.VerifyBody(secret, sig, b[1:]), events.ErrBadSignature)
	require.ErrorIs(t, events.VerifyBody([]byte("other"), sig, b), events.ErrBadSignature)
	require.ErrorIs(t, events.VerifyBody(secret, "sha1="+sig[7:], b), events.ErrBadSignature)
	require.ErrorIs(t, events.VerifyBody(secret, "", b), events.ErrNoSignature)
	require.ErrorIs(t, events.VerifyBody(nil, sig, b), events.ErrNoSecret)
}

// TestSpecSignatureIndependently checks X-Svc-Signature with go-github's webhook validation,
// an implementation of the same "sha256=<hex HMAC-SHA256 of the raw body>" scheme written by
// others, so a mistake shared by Sign and VerifyBody would not go unseen.
func TestSpecSignatureIndependently(t *testing.T) {
	t.Parallel()

	b := body(t)
	h := events.Headers("dlv_1", secret, b, sentAt)
	sig := h.Get("X-Svc-Signature")

	require.NoError(t, github.ValidateSignature(sig, b, secret))
	payload, err := github.ValidatePayloadFromBody(h.Get("Content-Type"), bytes.NewReader(b), sig, secret)
	require.NoError(t, err)
	require.Equal(t, b, payload)

	require.Error(t, github.ValidateSignature(sig, append(bytes.Clone(b), ' '), secret))
	require.Error(t, github.ValidateSignature(sig, b, []byte("other")))
	_, err = github.ValidatePayloadFromBody("application/json", bytes.NewReader(b), h.Get("X-Svc-Signature-Timestamped"), secret)
	require.Error(t, err, "the timestamped signature is not the body's")
}
