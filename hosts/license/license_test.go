package license_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"slices"
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

	// A one-bit change anywhere, header, payload or signature, is refused.
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	raws := make([][]byte, 3)
	for i, part := range parts {
		raws[i], err = base64.RawURLEncoding.DecodeString(part)
		require.NoError(t, err)
	}
	flips := 0
	for part, raw := range raws {
		for i := range raw {
			for bit := range 8 {
				changed := append([]byte(nil), raw...)
				changed[i] ^= 1 << bit
				enc := slices.Clone(parts)
				enc[part] = base64.RawURLEncoding.EncodeToString(changed)
				bad := strings.Join(enc, ".")
				_, err := license.Verify(bad, pub, now)
				require.Error(t, err, "bit %d of byte %d of part %d", bit, i, part)
				flips++
			}
		}
	}
	require.Equal(t, 8*(len(raws[0])+len(raws[1])+64), flips)
	for _, bad := range []string{"", "svcl1.", "svcl1.x.y", tok + "x", license.Prefix + tok, parts[0] + "." + parts[1], parts[0] + "." + parts[1] + ".", "a.b.c"} {
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
