package events_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// acceptable is the README's receivers' rule (testdata/receiver.py and .js) as Verify
// applies it: a timestamp of ASCII digits, a signature "sha256=" and the hex of
// HMAC-SHA256("<timestamp>.<body>"), and the timestamp within 300 s of now. Verify also
// takes upper-case hex and white space around the value, where the receivers compare the
// text (docs/decisions.md, receiver snippets): what it accepts beyond them still carries
// the right MAC.
func acceptable(secret []byte, ts, sig string, body []byte, now time.Time) bool {
	hexMAC, ok := strings.CutPrefix(strings.TrimSpace(sig), "sha256=")
	if !ok || !regexp.MustCompile(`^[0-9]+$`).MatchString(ts) {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	if !strings.EqualFold(hexMAC, hex.EncodeToString(m.Sum(nil))) {
		return false
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := now.Unix() - secs
	return d <= 300 && d >= -300
}

// FuzzVerify: what Sign signs, Verify and VerifyBody accept, at any time within the
// tolerance and at no other; one byte changed in the body, the secret or either signature
// header, and they refuse it (but for the case of a hex digit); whatever headers arrive,
// Verify answers nil or one of its errors, and accepts only what carries the right MAC
// for the timestamp as the README's receivers read them.
//
//	go test ./engine/events -run '^$' -fuzz '^FuzzVerify$' -fuzztime 30s
func FuzzVerify(f *testing.F) {
	f.Add([]byte("whsec_test_0123456789"), []byte(`{"delivery_id":"dlv_1","event":"x"}`), int64(0), uint(0), byte('x'), "1767225600", "sha256=00")
	f.Add([]byte("k"), []byte{}, int64(300), uint(9), byte(' '), "", "")
	f.Add([]byte(""), []byte("body"), int64(-301), uint(70), byte('0'), "01767225600", " sha256=")
	f.Add([]byte{0}, []byte{0xff}, int64(1<<40), uint(7), byte('G'), "+1767225600", "sha256=zz")
	at := time.Unix(1767225600, 0)
	f.Fuzz(func(t *testing.T, secret, body []byte, skew int64, pos uint, b byte, ts, sig string) {
		if len(secret) == 0 {
			if err := events.Verify(secret, events.Sign([]byte("k"), body, at), body, at, 0); !errors.Is(err, events.ErrNoSecret) {
				t.Fatalf("Verify without a secret: %v", err)
			}
			if err := events.VerifyBody(secret, "sha256=00", body); !errors.Is(err, events.ErrNoSecret) {
				t.Fatalf("VerifyBody without a secret: %v", err)
			}
			return
		}
		h := events.Sign(secret, body, at)
		var err, bodyErr error
		fuzzbound.Within(t, "Verify", func() {
			err = events.Verify(secret, h, body, at, 0)
			bodyErr = events.VerifyBody(secret, h.Get(events.HeaderSignature), body)
		})
		if err != nil || bodyErr != nil {
			t.Fatalf("a delivery as signed was refused: %v, %v", err, bodyErr)
		}

		// The receiver's clock, up to about 11 days either way.
		d := time.Duration(skew%1_000_000) * time.Second
		err = events.Verify(secret, h, body, at.Add(d), 0)
		var tsErr *events.TimestampError
		switch {
		case d <= events.DefaultTolerance && d >= -events.DefaultTolerance:
			if err != nil {
				t.Fatalf("refused %v from the signing time: %v", d, err)
			}
		case !errors.As(err, &tsErr) || !errors.Is(err, events.ErrTimestampOutOfWindow) || !tsErr.Timestamp.Equal(at):
			t.Fatalf("%v from the signing time: %v, want a TimestampError", d, err)
		}

		// One byte changed.
		change := func(s []byte) []byte {
			if len(s) == 0 {
				return []byte{b}
			}
			c := append([]byte(nil), s...)
			c[pos%uint(len(c))] = b
			return c
		}
		if other := change(body); string(other) != string(body) {
			if err := events.Verify(secret, h, other, at, 0); !errors.Is(err, events.ErrBadSignature) {
				t.Fatalf("a changed body: Verify = %v", err)
			}
			if err := events.VerifyBody(secret, h.Get(events.HeaderSignature), other); !errors.Is(err, events.ErrBadSignature) {
				t.Fatalf("a changed body: VerifyBody = %v", err)
			}
		}
		if other := change(secret); string(other) != string(secret) {
			if err := events.Verify(other, h, body, at, 0); !errors.Is(err, events.ErrBadSignature) {
				t.Fatalf("another secret: Verify = %v", err)
			}
		}
		for _, name := range []string{events.HeaderSignatureTimestamped, events.HeaderSignature, events.HeaderTimestamp} {
			v := h.Get(name)
			changed := string(change([]byte(v)))
			if changed == v {
				continue
			}
			h2 := http.Header{}
			for k, vs := range h {
				h2[k] = vs
			}
			h2.Set(name, changed)
			err := events.Verify(secret, h2, body, at, 0)
			if name == events.HeaderSignature {
				err = events.VerifyBody(secret, changed, body)
			}
			if err == nil && !strings.EqualFold(changed, v) {
				t.Fatalf("%s %q (signed: %q) was accepted", name, changed, v)
			}
		}

		// Headers as they come.
		h2 := http.Header{}
		h2.Set(events.HeaderTimestamp, ts)
		h2.Set(events.HeaderSignatureTimestamped, sig)
		err = events.Verify(secret, h2, body, at, 0)
		switch {
		case err == nil:
			if !acceptable(secret, ts, sig, body, at) {
				t.Fatalf("Verify accepted timestamp %q and signature %q", ts, sig)
			}
		case errors.Is(err, events.ErrNoSignature), errors.Is(err, events.ErrBadSignature), errors.Is(err, events.ErrTimestampOutOfWindow):
		default:
			t.Fatalf("Verify = %v: not one of its errors", err)
		}
	})
}
