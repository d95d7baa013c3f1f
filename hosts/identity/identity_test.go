package identity_test

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/identity"
)

var (
	key   = []byte("0123456789abcdef0123456789abcdef")
	other = []byte("fedcba9876543210fedcba9876543210")
	now   = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	tok, err := identity.Sign(key, identity.Identity{Subject: "ada@example.com", OrgID: "acme", Expires: now.Add(time.Minute)})
	require.NoError(t, err)

	id, err := identity.Verify(key, tok, now)
	require.NoError(t, err)
	require.Equal(t, "ada@example.com", id.Subject)
	require.Equal(t, "acme", id.OrgID)

	_, err = identity.Verify(other, tok, now)
	require.ErrorIs(t, err, identity.ErrSignature, "another key")
	_, err = identity.Verify(key, tok, now.Add(time.Minute))
	require.ErrorIs(t, err, identity.ErrExpired)
	long, err := identity.Sign(key, identity.Identity{Subject: "ada@example.com", OrgID: "acme", Expires: now.Add(identity.MaxLifetime + time.Second)})
	require.NoError(t, err)
	_, err = identity.Verify(key, long, now)
	require.ErrorIs(t, err, identity.ErrLifetime, "a token minted to last")

	// A token whose claims were swapped for another person's keeps its old signature.
	forged, err := identity.Sign(other, identity.Identity{Subject: "mallory@example.com", OrgID: "acme", Expires: now.Add(time.Hour)})
	require.NoError(t, err)
	claimsPart, _, _ := strings.Cut(forged, ".")
	_, sig, _ := strings.Cut(tok, ".")
	_, err = identity.Verify(key, claimsPart+"."+sig, now)
	require.ErrorIs(t, err, identity.ErrSignature)

	for _, bad := range []string{"", "no-dot", "a.b", "!!.!!", tok + "x"} {
		_, err = identity.Verify(key, bad, now)
		require.Error(t, err, bad)
	}
	_, err = identity.Verify(key[:31], tok, now)
	require.ErrorIs(t, err, identity.ErrShortKey)
	_, err = identity.Sign(key, identity.Identity{OrgID: "acme", Expires: now})
	require.Error(t, err, "no subject")
}

// jwtParts splits a token into its header, claims and signature, decoded.
func jwtParts(t *testing.T, tok string) (header, claims map[string]any, sig string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	for i, into := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, into))
	}
	return header, claims, parts[2]
}

// reassemble encodes a header and claims and appends sig: a token the test made itself.
func reassemble(t *testing.T, header, claims map[string]any, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	c, err := json.Marshal(claims)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "." + sig
}

// TestTokenIsAJWT: a token is an HS256 JWT typed as an identity, naming its key by kid,
// with sub, org, iat, nbf and exp.
func TestTokenIsAJWT(t *testing.T) {
	t.Parallel()
	tok, err := identity.Sign(key, identity.Identity{Subject: "ada@example.com", OrgID: "acme", IssuedAt: now, Expires: now.Add(time.Minute)})
	require.NoError(t, err)
	header, claims, _ := jwtParts(t, tok)
	require.Equal(t, map[string]any{"alg": "HS256", "typ": "svcflow-identity+jwt", "kid": identity.KeyID(key)}, header)
	require.Equal(t, map[string]any{"sub": "ada@example.com", "org": "acme", "iat": float64(now.Unix()), "nbf": float64(now.Unix()),
		"exp": float64(now.Add(time.Minute).Unix())}, claims)
	require.NotEqual(t, identity.KeyID(key), identity.KeyID(other))

	id, err := identity.Verify(key, tok, now)
	require.NoError(t, err)
	require.Equal(t, identity.Identity{Subject: "ada@example.com", OrgID: "acme", IssuedAt: now, Expires: now.Add(time.Minute)}, id)
}

// TestVerifyRefuses: expired, not yet valid, another key's kid, another algorithm, a
// changed payload, another token type: each refused with its error.
func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	sign := func(k []byte, id identity.Identity) string {
		t.Helper()
		tok, err := identity.Sign(k, id)
		require.NoError(t, err)
		return tok
	}
	ada := identity.Identity{Subject: "ada@example.com", OrgID: "acme", IssuedAt: now, Expires: now.Add(time.Minute)}
	tok := sign(key, ada)
	header, claims, sig := jwtParts(t, tok)

	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		_, err := identity.Verify(key, tok, now.Add(time.Minute))
		require.ErrorIs(t, err, identity.ErrExpired)
		_, err = identity.Verify(key, tok, now.Add(time.Minute-time.Second))
		require.NoError(t, err, "a second before exp")
	})
	t.Run("not yet valid", func(t *testing.T) {
		t.Parallel()
		_, err := identity.Verify(key, tok, now.Add(-identity.MaxSkew))
		require.NoError(t, err, "a verifier's clock behind the gateway's by MaxSkew")
		_, err = identity.Verify(key, tok, now.Add(-identity.MaxSkew-time.Second))
		require.ErrorIs(t, err, identity.ErrNotYet)
	})
	t.Run("another key's kid", func(t *testing.T) {
		t.Parallel()
		_, err := identity.Verify(other, tok, now)
		require.ErrorIs(t, err, identity.ErrSignature)
		// The kid of the verifying key, the signature of another key.
		h := maps.Clone(header)
		h["kid"] = identity.KeyID(other)
		_, err = identity.Verify(other, reassemble(t, h, claims, sig), now)
		require.ErrorIs(t, err, identity.ErrSignature)
		// No kid.
		delete(h, "kid")
		_, err = identity.Verify(key, reassemble(t, h, claims, sig), now)
		require.ErrorIs(t, err, identity.ErrSignature)
	})
	t.Run("another algorithm", func(t *testing.T) {
		t.Parallel()
		for _, alg := range []string{"none", "HS512", "HS384", "EdDSA", "RS256"} {
			h := maps.Clone(header)
			h["alg"] = alg
			_, err := identity.Verify(key, reassemble(t, h, claims, sig), now)
			require.ErrorIs(t, err, identity.ErrSignature, alg)
			_, err = identity.Verify(key, reassemble(t, h, claims, ""), now)
			require.ErrorIs(t, err, identity.ErrSignature, alg+", no signature")
		}
		// A token signed with HS512 under the right key and kid.
		c := jwt.MapClaims(maps.Clone(claims))
		t512 := jwt.NewWithClaims(jwt.SigningMethodHS512, c)
		t512.Header["typ"], t512.Header["kid"] = "svcflow-identity+jwt", identity.KeyID(key)
		s, err := t512.SignedString(key)
		require.NoError(t, err)
		_, err = identity.Verify(key, s, now)
		require.ErrorIs(t, err, identity.ErrSignature)
		// alg unknown to the library: not a token at all.
		h := maps.Clone(header)
		h["alg"] = "XX256"
		_, err = identity.Verify(key, reassemble(t, h, claims, sig), now)
		require.ErrorIs(t, err, identity.ErrMalformed)
	})
	t.Run("a changed payload", func(t *testing.T) {
		t.Parallel()
		for field, v := range map[string]any{"sub": "mallory@example.com", "org": "evil", "exp": float64(now.Add(time.Hour).Unix()), "nbf": float64(now.Unix() - 1)} {
			c := maps.Clone(claims)
			c[field] = v
			_, err := identity.Verify(key, reassemble(t, header, c, sig), now)
			require.ErrorIs(t, err, identity.ErrSignature, field)
		}
		// The same claims, encoded again: the signature covers the bytes.
		_, err := identity.Verify(key, reassemble(t, header, claims, sig), now)
		require.ErrorIs(t, err, identity.ErrSignature)
	})
	t.Run("another type", func(t *testing.T) {
		t.Parallel()
		c := jwt.MapClaims(maps.Clone(claims))
		jt := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		jt.Header["kid"] = identity.KeyID(key) // typ JWT
		s, err := jt.SignedString(key)
		require.NoError(t, err)
		_, err = identity.Verify(key, s, now)
		require.ErrorIs(t, err, identity.ErrMalformed)
	})
	t.Run("no exp", func(t *testing.T) {
		t.Parallel()
		c := jwt.MapClaims(maps.Clone(claims))
		delete(c, "exp")
		jt := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		jt.Header["typ"], jt.Header["kid"] = "svcflow-identity+jwt", identity.KeyID(key)
		s, err := jt.SignedString(key)
		require.NoError(t, err)
		_, err = identity.Verify(key, s, now)
		require.ErrorIs(t, err, identity.ErrMalformed)
	})
}

// TestKeyringRotation: a keyring signs with its current key and verifies tokens of its
// previous keys; a token of a key it dropped no longer verifies.
func TestKeyringRotation(t *testing.T) {
	t.Parallel()
	ada := identity.Identity{Subject: "ada@example.com", OrgID: "acme", IssuedAt: now, Expires: now.Add(time.Minute)}
	oldTok, err := identity.Sign(key, ada)
	require.NoError(t, err)

	rotating, err := identity.NewKeyring(other, key)
	require.NoError(t, err)
	newTok, err := rotating.Sign(ada)
	require.NoError(t, err)
	header, _, _ := jwtParts(t, newTok)
	require.Equal(t, identity.KeyID(other), header["kid"], "signed with the current key")
	for _, tok := range []string{oldTok, newTok} {
		id, err := rotating.Verify(tok, now)
		require.NoError(t, err)
		require.Equal(t, "ada@example.com", id.Subject)
	}

	rotated, err := identity.NewKeyring(other)
	require.NoError(t, err)
	_, err = rotated.Verify(oldTok, now)
	require.ErrorIs(t, err, identity.ErrSignature, "the old key dropped")
	_, err = rotated.Verify(newTok, now)
	require.NoError(t, err)

	_, err = identity.NewKeyring(other, key[:31])
	require.ErrorIs(t, err, identity.ErrShortKey, "a short previous key")
}

// TestSignRefusesWhatVerifyWouldNotParse: Verify parses at most 4,096 bytes, so Sign mints
// no longer token (a fuzz finding: a 2,600-byte subject was signed, then refused as
// malformed); the longest identity the gateway signs, a 254-byte email, is far below.
func TestSignRefusesWhatVerifyWouldNotParse(t *testing.T) {
	t.Parallel()
	email := strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com"
	require.Len(t, email, 254)
	tok, err := identity.Sign(key, identity.Identity{Subject: email, OrgID: strings.Repeat("o", 64), Expires: now.Add(time.Minute)})
	require.NoError(t, err)
	id, err := identity.Verify(key, tok, now)
	require.NoError(t, err)
	require.Equal(t, email, id.Subject)

	_, err = identity.Sign(key, identity.Identity{Subject: strings.Repeat("é", 1500), OrgID: "acme", Expires: now.Add(time.Minute)})
	require.ErrorIs(t, err, identity.ErrTooLarge)
}
