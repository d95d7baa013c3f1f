// Package license is svcflow's on-premises licenses: a payload (licensee, seats, features,
// not_before, expires_at) signed with Ed25519 and verified offline with the public key
// alone.
//
// A license is a JWT (RFC 7519) signed with EdDSA by github.com/golang-jwt/jwt/v5, typed
// "svcflow-license+jwt" in its header, with a key id (kid: the key's RFC 7638 thumbprint)
// naming the key that signed it. Its claims are jti (the license's id), iat (when it was
// issued, when known), nbf and exp (its window), and licensee, seats and features. Verify
// accepts EdDSA only and picks the public key by kid, so a verifier can hold the current
// key and the ones before it. Any standard JWT library verifies one with the public key.
//
// Licenses issued before (format v1: Prefix + base64url(JSON payload) + "." +
// base64url(signature)) are long-lived and still verify, with every key given: they name
// no key. Sign no longer issues them.
package license

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Prefix starts every license of format v1 (issued before licenses were JWTs).
const Prefix = "svcl1."

// tokenType is a license's typ header (RFC 8725, 3.11: explicit typing).
const tokenType = "svcflow-license+jwt"

// maxTokenBytes bounds what Verify parses.
const maxTokenBytes = 1 << 16

// License is what a license says.
type License struct {
	ID        string    `json:"id"`
	Licensee  string    `json:"licensee"`
	Seats     int       `json:"seats"`
	Features  []string  `json:"features"`
	NotBefore time.Time `json:"not_before"`
	ExpiresAt time.Time `json:"expires_at"`
	// IssuedAt is when the license was signed (its iat); zero: not recorded (every license
	// of format v1, and one signed without it).
	IssuedAt time.Time `json:"issued_at,omitzero"`
}

// claims are a license's JWT claims.
type claims struct {
	jwt.RegisteredClaims
	Licensee string   `json:"licensee"`
	Seats    int      `json:"seats"`
	Features []string `json:"features"`
}

// Errors of Verify.
var (
	ErrMalformed    = errors.New("not a svcflow license")
	ErrBadSignature = errors.New("the license's signature does not verify: it was changed or not issued with this key")
	ErrNotYetValid  = errors.New("the license is not valid yet")
	ErrExpired      = errors.New("the license has expired")
	errUnknownKey   = errors.New("no key with the license's kid")
)

// NewKey returns a new signing key.
func NewKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, err
}

// KeyID is the kid of a public key: its JWK thumbprint (RFC 7638), base64url.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Sign returns l signed with key. Its times are kept to the second, in UTC, and are
// checked as kept: expires_at less than a second after not_before, in the same second,
// would sign a license valid at no time.
func Sign(l License, key ed25519.PrivateKey) (string, error) {
	l.NotBefore, l.ExpiresAt = l.NotBefore.UTC().Truncate(time.Second), l.ExpiresAt.UTC().Truncate(time.Second)
	switch {
	case len(key) != ed25519.PrivateKeySize:
		return "", errors.New("license: the signing key is not an Ed25519 private key")
	case strings.TrimSpace(l.Licensee) == "":
		return "", errors.New("license: a licensee is required")
	case l.Seats < 1:
		return "", errors.New("license: seats must be at least 1")
	case !l.ExpiresAt.After(l.NotBefore):
		return "", errors.New("license: expires_at must be after not_before, to the second")
	}
	if l.Features == nil {
		l.Features = []string{}
	}
	c := claims{RegisteredClaims: jwt.RegisteredClaims{ID: l.ID, NotBefore: jwt.NewNumericDate(l.NotBefore), ExpiresAt: jwt.NewNumericDate(l.ExpiresAt)},
		Licensee: l.Licensee, Seats: l.Seats, Features: l.Features}
	if !l.IssuedAt.IsZero() {
		c.IssuedAt = jwt.NewNumericDate(l.IssuedAt)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["typ"], t.Header["kid"] = tokenType, KeyID(key.Public().(ed25519.PublicKey))
	return t.SignedString(key)
}

// Verify checks token's signature with pub and its validity at now, and returns what it
// says. A license whose signature verifies is returned with ErrNotYetValid or ErrExpired
// when now is outside its window.
func Verify(token string, pub ed25519.PublicKey, now time.Time) (*License, error) {
	return VerifyAny(token, []ed25519.PublicKey{pub}, now)
}

// VerifyAny is Verify with the keys a verifier holds: the current one and those before it.
// A license's kid picks its key; a license of format v1, which names none, verifies with
// any of them.
func VerifyAny(token string, pubs []ed25519.PublicKey, now time.Time) (*License, error) {
	token = strings.TrimSpace(token)
	if len(pubs) == 0 || len(token) > maxTokenBytes {
		return nil, ErrMalformed
	}
	for _, pub := range pubs {
		if len(pub) != ed25519.PublicKeySize {
			return nil, ErrMalformed
		}
	}
	if rest, ok := strings.CutPrefix(token, Prefix); ok {
		return verifyV1(rest, pubs, now)
	}
	var c claims
	p := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithStrictDecoding(),
		jwt.WithExpirationRequired(), jwt.WithNotBeforeRequired(), jwt.WithTimeFunc(func() time.Time { return now }))
	_, err := p.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if t.Header["typ"] != tokenType {
			return nil, ErrMalformed
		}
		kid, _ := t.Header["kid"].(string)
		for _, pub := range pubs {
			if KeyID(pub) == kid {
				return pub, nil
			}
		}
		return nil, errUnknownKey
	})
	switch {
	case errors.Is(err, errUnknownKey), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return nil, ErrBadSignature
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing), c.NotBefore == nil, c.ExpiresAt == nil:
		return nil, ErrMalformed
	case err == nil, errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenNotValidYet):
		// The signature verified: the license is returned with why it is not valid now.
	default:
		return nil, ErrMalformed
	}
	l := &License{ID: c.ID, Licensee: c.Licensee, Seats: c.Seats, Features: c.Features,
		NotBefore: c.NotBefore.UTC(), ExpiresAt: c.ExpiresAt.UTC()}
	if c.IssuedAt != nil {
		l.IssuedAt = c.IssuedAt.UTC()
	}
	return l, window(l, now)
}

// verifyV1 verifies a license of format v1 (after its prefix) with any of pubs.
func verifyV1(rest string, pubs []ed25519.PublicKey, now time.Time) (*License, error) {
	p, s, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, ErrMalformed
	}
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(p)
	sig, err2 := base64.RawURLEncoding.Strict().DecodeString(s)
	if err1 != nil || err2 != nil || len(sig) != ed25519.SignatureSize {
		return nil, ErrMalformed
	}
	verified := false
	for _, pub := range pubs {
		if ed25519.Verify(pub, payload, sig) {
			verified = true
			break
		}
	}
	if !verified {
		return nil, ErrBadSignature
	}
	var l License
	if err := json.Unmarshal(payload, &l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return &l, window(&l, now)
}

// window is why l is not valid at now (nil when it is): the same rule for both formats.
func window(l *License, now time.Time) error {
	switch {
	case now.Before(l.NotBefore):
		return ErrNotYetValid
	case !now.Before(l.ExpiresAt):
		return ErrExpired
	}
	return nil
}

// EncodeKey and DecodeKey write and read keys as base64 (a private key as its 32-byte
// seed).
func EncodeKey(k ed25519.PrivateKey) string { return base64.StdEncoding.EncodeToString(k.Seed()) }

// EncodePublic writes a public key as base64.
func EncodePublic(k ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(k) }

// DecodeKey reads a private key written by EncodeKey.
func DecodeKey(s string) (ed25519.PrivateKey, error) {
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("license: the signing key is not base64 of a 32-byte Ed25519 seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// DecodePublic reads a public key written by EncodePublic.
func DecodePublic(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("license: the public key is not base64 of a 32-byte Ed25519 key")
	}
	return ed25519.PublicKey(b), nil
}
