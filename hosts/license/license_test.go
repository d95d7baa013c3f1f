package license_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/license"
)

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	key, err := license.NewKey()
	require.NoError(t, err)
	pub := key.Public().(ed25519.PublicKey)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tok, err := license.Sign(license.License{ID: "lic_1", Licensee: "ACME Corp", Seats: 25, Features: []string{"agent_forms"},
		NotBefore: now.Add(-time.Hour), ExpiresAt: now.AddDate(1, 0, 0)}, key)
	require.NoError(t, err)
	l, err := license.Verify(tok, pub, now)
	require.NoError(t, err)
	require.Equal(t, "ACME Corp", l.Licensee)
	require.Equal(t, 25, l.Seats)
	require.Equal(t, []string{"agent_forms"}, l.Features)

	_, err = license.Verify(tok, pub, now.Add(-2*time.Hour))
	require.ErrorIs(t, err, license.ErrNotYetValid)
	_, err = license.Verify(tok, pub, now.AddDate(1, 0, 0))
	require.ErrorIs(t, err, license.ErrExpired)
	other, err := license.NewKey()
	require.NoError(t, err)
	_, err = license.Verify(tok, other.Public().(ed25519.PublicKey), now)
	require.ErrorIs(t, err, license.ErrBadSignature, "another issuer's key")

	// A one-bit change anywhere, payload or signature, is refused.
	rest := strings.TrimPrefix(tok, license.Prefix)
	p, s, _ := strings.Cut(rest, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p)
	sig, _ := base64.RawURLEncoding.DecodeString(s)
	flips := 0
	for part, raw := range [][]byte{payload, sig} {
		for i := range raw {
			for bit := range 8 {
				changed := append([]byte(nil), raw...)
				changed[i] ^= 1 << bit
				pp, ss := payload, sig
				if part == 0 {
					pp = changed
				} else {
					ss = changed
				}
				bad := license.Prefix + base64.RawURLEncoding.EncodeToString(pp) + "." + base64.RawURLEncoding.EncodeToString(ss)
				_, err := license.Verify(bad, pub, now)
				require.Error(t, err, "bit %d of byte %d of part %d", bit, i, part)
				flips++
			}
		}
	}
	require.Greater(t, flips, 8*(len(payload)+64)-1)
	for _, bad := range []string{"", "svcl1.", "svcl1.x.y", tok + "x", strings.Replace(tok, "svcl1.", "svcl2.", 1)} {
		_, err := license.Verify(bad, pub, now)
		require.Error(t, err, bad)
	}

	// Keys round-trip through their text form.
	k2, err := license.DecodeKey(license.EncodeKey(key))
	require.NoError(t, err)
	require.True(t, k2.Equal(key))
	p2, err := license.DecodePublic(license.EncodePublic(pub))
	require.NoError(t, err)
	require.True(t, p2.Equal(pub))
	_, err = license.Sign(license.License{Licensee: "x", Seats: 0, NotBefore: now, ExpiresAt: now.Add(time.Hour)}, key)
	require.Error(t, err)
}
