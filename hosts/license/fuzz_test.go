package license_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svcflow/svcflow/hosts/license"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// FuzzLicense: a license Sign issues verifies, says what was signed (times truncated to the
// second, in UTC), and is valid from its not_before to just before its expires_at, never
// outside; Sign refuses exactly what its documentation says. A token changed in any byte,
// or made up, is ErrMalformed or ErrBadSignature: every token Verify takes is one Sign
// issued, now or (format v1) by an earlier release (no second encoding of a header, a
// payload or a signature passes). Each call returns within fuzzbound.Bound.
//
//	go test ./hosts/license -run '^$' -fuzz '^FuzzLicense$' -fuzztime 30s
func FuzzLicense(f *testing.F) {
	key := ed25519.NewKeyFromSeed([]byte("svcflow license fuzz key seed 32"))
	pub := key.Public().(ed25519.PublicKey)
	issued := map[string]bool{}
	seed := func(l license.License) string {
		tok, err := license.Sign(l, key)
		if err != nil {
			f.Fatal(err)
		}
		issued[tok] = true
		return tok
	}
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tok := seed(license.License{ID: "lic_1", Licensee: "ACME Corp", Seats: 25, Features: []string{"agent_forms"}, NotBefore: at, ExpiresAt: at.AddDate(1, 0, 0)})
	// Format v1, issued with key by an earlier release's Sign: the same license, and one
	// valid for one second.
	for _, v1 := range []string{
		"svcl1.eyJpZCI6ImxpY18xIiwibGljZW5zZWUiOiJBQ01FIENvcnAiLCJzZWF0cyI6MjUsImZlYXR1cmVzIjpbImFnZW50X2Zvcm1zIl0sIm5vdF9iZWZvcmUiOiIyMDI2LTExLTI0VDEyOjAwOjAwWiIsImV4cGlyZXNfYXQiOiIyMDI3LTExLTI0VDEyOjAwOjAwWiJ9.IGfEO4DM2n_aif7xxbc7GXYKdg5VpDe7NzvnsJnmTJlyUyfouQNuxtHquV_O2xndbEVdtv3q8TlHvq5sqrL_BQ",
		"svcl1.eyJpZCI6IiIsImxpY2Vuc2VlIjoieCIsInNlYXRzIjoxLCJmZWF0dXJlcyI6W10sIm5vdF9iZWZvcmUiOiIyMDI2LTExLTI0VDEyOjAwOjAwWiIsImV4cGlyZXNfYXQiOiIyMDI2LTExLTI0VDEyOjAwOjAxWiJ9.UoWGW5f0WoT1LuTseP4U4vo0rbZkTFv77HnPkMEYOe7R0OZMe5ANAn0jT9fx_uarZPHMHy-VExRsPeVVZupDBQ",
	} {
		if _, err := license.Verify(v1, pub, at); err != nil {
			f.Fatalf("a v1 license: %v", err)
		}
		issued[v1] = true
		f.Add(v1, "", 3, "", at.Unix(), int64(1e9), uint(200), byte('x'))
	}
	f.Add(tok, "ACME Corp", 25, "agent_forms,sso", at.Unix(), int64(86400e9), uint(7), byte('A'))
	f.Add(" "+tok+"\n", "", 0, "", int64(0), int64(0), uint(0), byte('.'))
	f.Add(seed(license.License{Licensee: "x", Seats: 1, NotBefore: at, ExpiresAt: at.Add(time.Second)}), "\xff", -1, ",", int64(-1), int64(-1), uint(90), byte('='))
	f.Add("svcl1.", " ", 1<<40, "a,,b", int64(253402300799), int64(1), uint(1<<40), byte(0))
	f.Add("svcl1.e30.AAAA", "x", 1, "", at.Unix(), int64(1), uint(6), byte('+'))
	f.Add("svcl2."+tok, "l", 2, "f", at.Unix()+1, int64(0), uint(5), byte('1'))
	f.Add("svcl1."+tok, "l", 2, "f", at.Unix()+1, int64(0), uint(5), byte('1'))
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoic3ZjZmxvdy1saWNlbnNlK2p3dCJ9."+strings.Split(tok, ".")[1]+".", "n", 1, "", at.Unix(), int64(1), uint(2), byte('e'))

	f.Fuzz(func(t *testing.T, token, licensee string, seats int, features string, notBefore, span int64, pos uint, b byte) {
		// A token as it comes.
		var err error
		fuzzbound.Within(t, "Verify", func() { _, err = license.Verify(token, pub, at) })
		if !issued[strings.TrimSpace(token)] && !errors.Is(err, license.ErrMalformed) && !errors.Is(err, license.ErrBadSignature) {
			t.Fatalf("Verify(%q) = %v: a token Sign did not issue, taken", token, err)
		}

		// A license signed and read back. Times within what JSON's RFC 3339 holds (years
		// 0-9999), to the nanosecond.
		nb := time.Unix(0, 0).Add(time.Duration(notBefore%(250*365*86400)) * time.Second).Add(time.Duration(pos % 1e9)).UTC()
		l := license.License{ID: "lic_f", Licensee: licensee, Seats: seats, NotBefore: nb, ExpiresAt: nb.Add(time.Duration(span % (50 * 365 * 86400 * 1e9)))}
		if features != "" {
			l.Features = strings.Split(features, ",")
		}
		var signed string
		fuzzbound.Within(t, "Sign", func() { signed, err = license.Sign(l, key) })
		wantErr := strings.TrimSpace(licensee) == "" || seats < 1 || !got0(l).ExpiresAt.After(got0(l).NotBefore)
		switch {
		case wantErr && err == nil:
			t.Fatalf("Sign took licensee %q, seats %d, %v to %v", licensee, seats, l.NotBefore, l.ExpiresAt)
		case !wantErr && err != nil:
			t.Fatalf("Sign refused licensee %q, seats %d, %v to %v: %v", licensee, seats, l.NotBefore, l.ExpiresAt, err)
		case err != nil:
			return
		}
		issued[signed] = true

		var got *license.License
		fuzzbound.Within(t, "Verify", func() { got, err = license.Verify(signed, pub, got0(l).NotBefore) })
		if err != nil {
			t.Fatalf("a license is not valid at its not_before %v: %v", got0(l).NotBefore, err)
		}
		if want := got0(l); !reflect.DeepEqual(*got, want) {
			t.Fatalf("signed %+v, read back %+v", want, *got)
		}
		if _, err := license.Verify(signed, pub, got.NotBefore.Add(-time.Nanosecond)); !errors.Is(err, license.ErrNotYetValid) {
			t.Fatalf("just before not_before: %v", err)
		}
		if _, err := license.Verify(signed, pub, got.ExpiresAt); !errors.Is(err, license.ErrExpired) {
			t.Fatalf("at expires_at: %v", err)
		}
		if _, err := license.Verify(signed, ed25519.NewKeyFromSeed([]byte("another key seed, 32 bytes long!")).Public().(ed25519.PublicKey), got.NotBefore); !errors.Is(err, license.ErrBadSignature) {
			t.Fatalf("another key: %v", err)
		}

		// One byte changed.
		c := []byte(signed)
		c[pos%uint(len(c))] = b
		if changed := string(c); strings.TrimSpace(changed) != signed {
			if _, err := license.Verify(changed, pub, got.NotBefore); !errors.Is(err, license.ErrMalformed) && !errors.Is(err, license.ErrBadSignature) {
				t.Fatalf("a changed token %q: %v", changed, err)
			}
		}
	})
}

// got0 is what Verify reads back from a license Sign issued: times in UTC truncated to
// the second, strings as JSON carries them (invalid UTF-8 replaced), features never nil.
func got0(l license.License) license.License {
	l.NotBefore, l.ExpiresAt = l.NotBefore.UTC().Truncate(time.Second), l.ExpiresAt.UTC().Truncate(time.Second)
	if l.Features == nil {
		l.Features = []string{}
	}
	b, _ := json.Marshal(l)
	var back license.License
	_ = json.Unmarshal(b, &back)
	return back
}
