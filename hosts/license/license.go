// Package license is svcflow's on-premises licenses: a JSON payload (licensee, seats,
// features, not_before, expires_at) signed with Ed25519 and verified offline with the
// public key alone. A license is "svcl1." + base64url(payload) + "." + base64url(signature):
// a change of any bit of either part fails verification.
package license

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Prefix starts every license.
const Prefix = "svcl1."

// License is what a license says.
type License struct {
	ID        string    `json:"id"`
	Licensee  string    `json:"licensee"`
	Seats     int       `json:"seats"`
	Features  []string  `json:"features"`
	NotBefore time.Time `json:"not_before"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Errors of Verify.
var (
	ErrMalformed    = errors.New("not a svcflow license")
	ErrBadSignature = errors.New("the license's signature does not verify: it was changed or not issued with this key")
	ErrNotYetValid  = errors.New("the license is not valid yet")
	ErrExpired      = errors.New("the license has expired")
)

// NewKey returns a new signing key.
func NewKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	return priv, err
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
	payload, err := json.Marshal(l)
	if err != nil {
		return "", err
	}
	sig := ed25519.Sign(key, payload)
	return Prefix + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verify checks token's signature with pub and its validity at now, and returns what it
// says. A license whose signature verifies is returned with ErrNotYetValid or ErrExpired
// when now is outside its window.
func Verify(token string, pub ed25519.PublicKey, now time.Time) (*License, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(token), Prefix)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, ErrMalformed
	}
	p, s, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, ErrMalformed
	}
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(p)
	sig, err2 := base64.RawURLEncoding.Strict().DecodeString(s)
	if err1 != nil || err2 != nil || len(sig) != ed25519.SignatureSize {
		return nil, ErrMalformed
	}
	if !ed25519.Verify(pub, payload, sig) {
		return nil, ErrBadSignature
	}
	var l License
	if err := json.Unmarshal(payload, &l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case now.Before(l.NotBefore):
		return &l, ErrNotYetValid
	case !now.Before(l.ExpiresAt):
		return &l, ErrExpired
	}
	return &l, nil
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
