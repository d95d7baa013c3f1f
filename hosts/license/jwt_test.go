package license_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/license"
)

var (
	testKey = ed25519.NewKeyFromSeed([]byte("svcflow license test key seed 32"))
	testPub = testKey.Public().(ed25519.PublicKey)
	nextKey = ed25519.NewKeyFromSeed([]byte("svcflow license next key seed 32"))
	nextPub = nextKey.Public().(ed25519.PublicKey)
	at      = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	acme    = license.License{ID: "lic_1", Licensee: "ACME Corp", Seats: 25, Features: []string{"agent_forms"}, NotBefore: at, ExpiresAt: at.AddDate(1, 0, 0)}
)

// v1License was issued by the format before JWTs (Sign of an earlier release) with
// testKey: acme, as it was signed.
const v1License = "svcl1.eyJpZCI6ImxpY18xIiwibGljZW5zZWUiOiJBQ01FIENvcnAiLCJzZWF0cyI6MjUsImZlYXR1cmVzIjpbImFnZW50X2Zvcm1zIl0sIm5vdF9iZWZvcmUiOiIyMDI2LTExLTI0VDEyOjAwOjAwWiIsImV4cGlyZXNfYXQiOiIyMDI3LTExLTI0VDEyOjAwOjAwWiJ9.cHWhrCuJJJ7sL8A2KShLIZn5SdGc2NuGaz_LOV1o7QMLTcp8AxGndgr8I9CbYwaKs3K1p9je6kyHWOaY7LowAA"

func sign(t *testing.T, l license.License, key ed25519.PrivateKey) string {
	t.Helper()
	tok, err := license.Sign(l, key)
	require.NoError(t, err)
	return tok
}

// parts decodes a JWT's header and claims.
func parts(t *testing.T, tok string) (header, claims map[string]any, sig string) {
	t.Helper()
	p := strings.Split(tok, ".")
	require.Len(t, p, 3)
	for i, into := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(p[i])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, into))
	}
	return header, claims, p[2]
}

func reassemble(t *testing.T, header, claims map[string]any, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	c, err := json.Marshal(claims)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "." + sig
}

// TestLicenseIsAJWT: a license is an EdDSA JWT typed as a license, naming its key by its
// RFC 7638 thumbprint, with jti, iat, nbf, exp and the license's own claims; any JWT
// library verifies it with the public key.
func TestLicenseIsAJWT(t *testing.T) {
	t.Parallel()
	l := acme
	l.IssuedAt = at.Add(-time.Hour)
	tok := sign(t, l, testKey)
	header, claims, _ := parts(t, tok)
	require.Equal(t, map[string]any{"alg": "EdDSA", "typ": "svcflow-license+jwt", "kid": license.KeyID(testPub)}, header)
	require.Equal(t, map[string]any{"jti": "lic_1", "iat": float64(at.Add(-time.Hour).Unix()), "nbf": float64(at.Unix()),
		"exp": float64(at.AddDate(1, 0, 0).Unix()), "licensee": "ACME Corp", "seats": float64(25), "features": []any{"agent_forms"}}, claims)
	// RFC 8037, A.3: the thumbprint of its example key.
	x, err := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	require.NoError(t, err)
	require.Equal(t, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", license.KeyID(x))

	parsed, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return testPub, nil },
		jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(func() time.Time { return at }))
	require.NoError(t, err)
	require.True(t, parsed.Valid)

	got, err := license.Verify(tok, testPub, at)
	require.NoError(t, err)
	require.Equal(t, l, *got)
}

// TestVerifyRefuses: expired, not yet valid, another key's kid, another algorithm, a
// changed payload, another token type, a window missing.
func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	tok := sign(t, acme, testKey)
	header, claims, sig := parts(t, tok)

	t.Run("expired and not yet valid", func(t *testing.T) {
		t.Parallel()
		l, err := license.Verify(tok, testPub, acme.ExpiresAt)
		require.ErrorIs(t, err, license.ErrExpired)
		require.Equal(t, "ACME Corp", l.Licensee, "returned: its signature verified")
		_, err = license.Verify(tok, testPub, acme.ExpiresAt.Add(-time.Second))
		require.NoError(t, err)
		l, err = license.Verify(tok, testPub, at.Add(-time.Second))
		require.ErrorIs(t, err, license.ErrNotYetValid)
		require.Equal(t, "ACME Corp", l.Licensee)
	})
	t.Run("another key's kid", func(t *testing.T) {
		t.Parallel()
		_, err := license.Verify(tok, nextPub, at)
		require.ErrorIs(t, err, license.ErrBadSignature, "the kid names no key held")
		h := maps.Clone(header)
		h["kid"] = license.KeyID(nextPub)
		_, err = license.Verify(reassemble(t, h, claims, sig), nextPub, at)
		require.ErrorIs(t, err, license.ErrBadSignature, "the kid of the key held, the signature of another")
		delete(h, "kid")
		_, err = license.Verify(reassemble(t, h, claims, sig), testPub, at)
		require.ErrorIs(t, err, license.ErrBadSignature, "no kid")
	})
	t.Run("another algorithm", func(t *testing.T) {
		t.Parallel()
		for _, alg := range []string{"none", "HS256", "ES256", "RS256", "PS256"} {
			h := maps.Clone(header)
			h["alg"] = alg
			_, err := license.Verify(reassemble(t, h, claims, sig), testPub, at)
			require.ErrorIs(t, err, license.ErrBadSignature, alg)
			_, err = license.Verify(reassemble(t, h, claims, ""), testPub, at)
			require.ErrorIs(t, err, license.ErrBadSignature, alg+", no signature")
		}
		// HS256 with the public key as the HMAC secret: the classic confusion.
		hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims))
		hs.Header["typ"], hs.Header["kid"] = "svcflow-license+jwt", license.KeyID(testPub)
		forged, err := hs.SignedString([]byte(testPub))
		require.NoError(t, err)
		_, err = license.Verify(forged, testPub, at)
		require.ErrorIs(t, err, license.ErrBadSignature)
	})
	t.Run("a changed payload", func(t *testing.T) {
		t.Parallel()
		for field, v := range map[string]any{"seats": 2500, "licensee": "Mallory", "exp": float64(at.AddDate(10, 0, 0).Unix()),
			"features": []string{"agent_forms", "agents"}, "jti": "lic_2"} {
			c := maps.Clone(claims)
			c[field] = v
			_, err := license.Verify(reassemble(t, header, c, sig), testPub, at)
			require.ErrorIs(t, err, license.ErrBadSignature, field)
		}
	})
	t.Run("another type", func(t *testing.T) {
		t.Parallel()
		jt := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(claims))
		jt.Header["kid"] = license.KeyID(testPub) // typ JWT
		s, err := jt.SignedString(testKey)
		require.NoError(t, err)
		_, err = license.Verify(s, testPub, at)
		require.ErrorIs(t, err, license.ErrMalformed)
	})
	t.Run("a window missing", func(t *testing.T) {
		t.Parallel()
		for _, claim := range []string{"nbf", "exp"} {
			c := maps.Clone(claims)
			delete(c, claim)
			jt := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(c))
			jt.Header["typ"], jt.Header["kid"] = "svcflow-license+jwt", license.KeyID(testPub)
			s, err := jt.SignedString(testKey)
			require.NoError(t, err)
			for _, now := range []time.Time{at, at.AddDate(2, 0, 0), at.AddDate(-2, 0, 0)} {
				_, err = license.Verify(s, testPub, now)
				require.ErrorIs(t, err, license.ErrMalformed, claim)
			}
		}
	})
}

// TestVerifyAnyRotation: a verifier holding the next key and the current one verifies
// licenses of both, each by its kid; one holding the next key alone refuses the old.
func TestVerifyAnyRotation(t *testing.T) {
	t.Parallel()
	old, next := sign(t, acme, testKey), sign(t, acme, nextKey)
	for _, tok := range []string{old, next, v1License} {
		l, err := license.VerifyAny(tok, []ed25519.PublicKey{nextPub, testPub}, at)
		require.NoError(t, err)
		require.Equal(t, "ACME Corp", l.Licensee)
	}
	_, err := license.VerifyAny(next, []ed25519.PublicKey{nextPub}, at)
	require.NoError(t, err)
	for _, tok := range []string{old, v1License} {
		_, err = license.VerifyAny(tok, []ed25519.PublicKey{nextPub}, at)
		require.ErrorIs(t, err, license.ErrBadSignature)
	}
	_, err = license.VerifyAny(next, nil, at)
	require.ErrorIs(t, err, license.ErrMalformed, "no key")
	_, err = license.VerifyAny(next, []ed25519.PublicKey{nextPub, testPub[:31]}, at)
	require.ErrorIs(t, err, license.ErrMalformed, "a key that is not one")
}

// TestVerifyV1: a license issued in format v1 still verifies, with the same window and
// the same refusals; Sign no longer issues one.
func TestVerifyV1(t *testing.T) {
	t.Parallel()
	l, err := license.Verify(v1License, testPub, at)
	require.NoError(t, err)
	require.Equal(t, acme, *l)
	_, err = license.Verify(" "+v1License+"\n", testPub, at)
	require.NoError(t, err)
	_, err = license.Verify(v1License, testPub, acme.ExpiresAt)
	require.ErrorIs(t, err, license.ErrExpired)
	_, err = license.Verify(v1License, testPub, at.Add(-time.Second))
	require.ErrorIs(t, err, license.ErrNotYetValid)
	_, err = license.Verify(v1License, nextPub, at)
	require.ErrorIs(t, err, license.ErrBadSignature)
	p, s, _ := strings.Cut(strings.TrimPrefix(v1License, license.Prefix), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p)
	changed := strings.Replace(string(payload), `"seats":25`, `"seats":99`, 1)
	_, err = license.Verify(license.Prefix+base64.RawURLEncoding.EncodeToString([]byte(changed))+"."+s, testPub, at)
	require.ErrorIs(t, err, license.ErrBadSignature)
	require.False(t, strings.HasPrefix(sign(t, acme, testKey), license.Prefix))
}
