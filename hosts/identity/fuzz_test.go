package identity_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcflow/svcflow/hosts/identity"
	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// FuzzIdentity: a token Sign mints verifies and says what was signed (times to the
// second), from MaxSkew before its iat to just before its exp; a token changed in any
// byte, or made up, is refused as ErrMalformed or ErrSignature: every token Verify takes
// is one Sign minted. Each call returns within fuzzbound.Bound.
//
//	go test ./hosts/identity -run '^$' -fuzz '^FuzzIdentity$' -fuzztime 30s
func FuzzIdentity(f *testing.F) {
	ring, err := identity.NewKeyring(key, other)
	if err != nil {
		f.Fatal(err)
	}
	minted := map[string]bool{}
	tok, err := ring.Sign(identity.Identity{Subject: "ada@example.com", OrgID: "acme", IssuedAt: now, Expires: now.Add(time.Minute)})
	if err != nil {
		f.Fatal(err)
	}
	minted[tok] = true
	old, err := identity.Sign(other, identity.Identity{Subject: "ada@example.com", OrgID: "acme", Expires: now.Add(time.Minute)})
	if err != nil {
		f.Fatal(err)
	}
	minted[old] = true
	f.Add(tok, "ada@example.com", "acme", int64(0), int64(60), uint(7), byte('A'))
	f.Add(old, "\xff", "o", int64(-5), int64(300), uint(90), byte('.'))
	f.Add("eyJhbGciOiJub25lIn0.e30.", "", "", int64(1), int64(301), uint(0), byte('='))
	f.Add(tok[:strings.LastIndexByte(tok, '.')]+".", "x", "y", int64(1<<40), int64(-1), uint(1<<40), byte(0))

	f.Fuzz(func(t *testing.T, token, subject, org string, issuedOff, life int64, pos uint, b byte) {
		var err error
		fuzzbound.Within(t, "Verify", func() { _, err = ring.Verify(token, now) })
		if !minted[token] && !errors.Is(err, identity.ErrMalformed) && !errors.Is(err, identity.ErrSignature) {
			t.Fatalf("Verify(%q) = %v: a token Sign did not mint, taken", token, err)
		}

		// A token minted and read back: issued within a day of now, living up to MaxLifetime.
		issued := now.Add(time.Duration(issuedOff%86400) * time.Second)
		id := identity.Identity{Subject: subject, OrgID: org, IssuedAt: issued, Expires: issued.Add(time.Duration(life%300) * time.Second)}
		var signed string
		fuzzbound.Within(t, "Sign", func() { signed, err = ring.Sign(id) })
		// A token longer than Verify parses is not minted: that takes hundreds of bytes of
		// subject and organization (JSON writes a byte as at most 6, base64 as 4/3 of that).
		tooLarge := errors.Is(err, identity.ErrTooLarge)
		if tooLarge && len(subject)+len(org) < 400 {
			t.Fatalf("Sign(%q, %q) = %v", subject, org, err)
		}
		if (subject == "" || org == "") != (err != nil) && !tooLarge {
			t.Fatalf("Sign(%q, %q) = %v", subject, org, err)
		}
		if err != nil {
			return
		}
		minted[signed] = true
		var got identity.Identity
		fuzzbound.Within(t, "Verify", func() { got, err = ring.Verify(signed, issued) })
		if !id.Expires.After(issued) {
			if !errors.Is(err, identity.ErrExpired) {
				t.Fatalf("a token minted expired: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("a token is not valid when minted: %v", err)
		}
		// JSON replaces invalid UTF-8: compare what the signed bytes say.
		if got.Subject != asJSON(subject) || got.OrgID != asJSON(org) ||
			!got.IssuedAt.Equal(issued) || !got.Expires.Equal(id.Expires) {
			t.Fatalf("minted %+v, read back %+v", id, got)
		}
		if _, err := ring.Verify(signed, issued.Add(-identity.MaxSkew-time.Second)); !errors.Is(err, identity.ErrNotYet) {
			t.Fatalf("before nbf less the skew: %v", err)
		}
		if _, err := ring.Verify(signed, id.Expires); !errors.Is(err, identity.ErrExpired) {
			t.Fatalf("at exp: %v", err)
		}

		// One byte changed.
		c := []byte(signed)
		c[pos%uint(len(c))] = b
		if changed := string(c); changed != signed {
			if _, err := ring.Verify(changed, issued); !errors.Is(err, identity.ErrMalformed) && !errors.Is(err, identity.ErrSignature) {
				t.Fatalf("a changed token %q: %v", changed, err)
			}
		}
	})
}

// asJSON is s as JSON carries it: each byte of invalid UTF-8 replaced.
func asJSON(s string) string {
	b, _ := json.Marshal(s)
	var back string
	_ = json.Unmarshal(b, &back)
	return back
}
