// Package identity carries a signed-in person from the gateway to the runtime. The gateway
// authenticates the person (an email and a one-time code) and adds a token to the request
// it forwards; the runtime believes the token only when it verifies under a key the two
// share, so a caller that reaches the runtime directly cannot claim to be anyone.
//
// A token is a JWT (RFC 7519) signed with HS256 by github.com/golang-jwt/jwt/v5, typed
// "svcflow-identity+jwt" in its header, with a key id (kid) naming the key it was signed
// with. Its claims name the person (sub), the organization the session belongs to (org),
// when it was minted (iat, nbf) and when it expires (exp); the gateway mints one per
// forwarded request, so it lives seconds. Verification accepts HS256 only and picks the key
// by kid from a Keyring: the current key and, during a rotation, the previous ones.
package identity

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Header is the request header that carries the token.
const Header = "X-Svc-Identity"

// MinKeyBytes is the shortest key Sign and Verify accept.
const MinKeyBytes = 32

// MaxLifetime is the longest a token may have left to live when it is verified: the gateway
// mints one per forwarded request, so a token that claims to last longer was not made for
// one and is refused (a leaked token is worthless within minutes).
const MaxLifetime = 5 * time.Minute

// MaxSkew is how far the verifier's clock may lag the gateway's: a token is taken from
// MaxSkew before its nbf (it was minted at nbf on the gateway's clock). Its exp is held to
// the second, as before tokens carried nbf.
const MaxSkew = 30 * time.Second

// tokenType is the token's typ header (RFC 8725, 3.11: explicit typing), so that no other
// JWT made with the same key passes for an identity.
const tokenType = "svcflow-identity+jwt"

// maxTokenBytes bounds what Verify parses.
const maxTokenBytes = 4096

// Identity is a signed-in person as the gateway vouches for them.
type Identity struct {
	// Subject is the person: the email they signed in with.
	Subject string
	// OrgID is the organization whose form or SDK session they signed in to.
	OrgID string
	// IssuedAt is when the gateway minted the token (its iat and nbf); zero: the token
	// carries neither.
	IssuedAt time.Time
	// Expires is when the token stops being accepted.
	Expires time.Time
}

type claims struct {
	jwt.RegisteredClaims
	Org string `json:"org"`
}

// Errors of Verify.
var (
	ErrMalformed = errors.New("identity: malformed token")
	ErrSignature = errors.New("identity: the token's signature does not verify")
	ErrExpired   = errors.New("identity: the token expired")
	ErrNotYet    = errors.New("identity: the token is not valid yet")
	ErrLifetime  = fmt.Errorf("identity: the token lives longer than %s", MaxLifetime)
	ErrShortKey  = fmt.Errorf("identity: the key must be at least %d bytes", MinKeyBytes)
	// ErrTooLarge is Sign's for an identity whose token Verify would refuse for its size.
	ErrTooLarge   = fmt.Errorf("identity: the token would be longer than %d bytes", maxTokenBytes)
	errUnknownKey = errors.New("identity: no key with the token's kid")
)

// Keyring signs with its current key and verifies with any of its keys, chosen by the
// token's kid. It is safe for concurrent use.
type Keyring struct {
	current key
	byID    map[string][]byte
}

type key struct {
	id     string
	secret []byte
}

// NewKeyring returns the keyring that signs with current and verifies tokens signed with
// current or any of previous (a rotation: the gateway signs with the new key while a
// runtime still verifies tokens the old one signed).
func NewKeyring(current []byte, previous ...[]byte) (*Keyring, error) {
	k := &Keyring{byID: map[string][]byte{}}
	for i, secret := range append([][]byte{current}, previous...) {
		if len(secret) < MinKeyBytes {
			return nil, ErrShortKey
		}
		id := KeyID(secret)
		if i == 0 {
			k.current = key{id: id, secret: secret}
		}
		if _, ok := k.byID[id]; !ok {
			k.byID[id] = secret
		}
	}
	return k, nil
}

// KeyID is the kid of a key: a labelled SHA-256 of it, cut to 96 bits, which names the
// key without telling anything of it.
func KeyID(secret []byte) string {
	h := sha256.New()
	h.Write([]byte("svcflow identity key id\x00"))
	h.Write(secret)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// Sign returns the token for id under the keyring's current key.
func (k *Keyring) Sign(id Identity) (string, error) {
	if id.Subject == "" || id.OrgID == "" {
		return "", errors.New("identity: subject and organization are required")
	}
	c := claims{RegisteredClaims: jwt.RegisteredClaims{Subject: id.Subject, ExpiresAt: jwt.NewNumericDate(id.Expires)}, Org: id.OrgID}
	if !id.IssuedAt.IsZero() {
		c.IssuedAt, c.NotBefore = jwt.NewNumericDate(id.IssuedAt), jwt.NewNumericDate(id.IssuedAt)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["typ"], t.Header["kid"] = tokenType, k.current.id
	token, err := t.SignedString(k.current.secret)
	if err == nil && len(token) > maxTokenBytes {
		// Verify bounds what it parses: a token it would refuse is not minted.
		return "", ErrTooLarge
	}
	return token, err
}

// Verify checks token at now and returns the identity it carries.
func (k *Keyring) Verify(token string, now time.Time) (Identity, error) {
	if len(token) > maxTokenBytes {
		return Identity{}, ErrMalformed
	}
	var c claims
	// The leeway lets a token be taken MaxSkew before its nbf; exp is checked below,
	// without it.
	p := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithStrictDecoding(),
		jwt.WithExpirationRequired(), jwt.WithLeeway(MaxSkew), jwt.WithTimeFunc(func() time.Time { return now }))
	_, err := p.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if t.Header["typ"] != tokenType {
			return nil, ErrMalformed
		}
		kid, _ := t.Header["kid"].(string)
		secret, ok := k.byID[kid]
		if !ok {
			return nil, errUnknownKey
		}
		return secret, nil
	})
	switch {
	case err == nil:
	case errors.Is(err, errUnknownKey), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return Identity{}, ErrSignature
	case errors.Is(err, jwt.ErrTokenExpired):
		return Identity{}, ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return Identity{}, ErrNotYet
	default:
		return Identity{}, ErrMalformed
	}
	if c.Subject == "" || c.Org == "" {
		return Identity{}, ErrMalformed
	}
	id := Identity{Subject: c.Subject, OrgID: c.Org, Expires: c.ExpiresAt.UTC()}
	if c.IssuedAt != nil {
		id.IssuedAt = c.IssuedAt.UTC()
	}
	if !now.Before(id.Expires) {
		return Identity{}, ErrExpired
	}
	if id.Expires.Sub(now) > MaxLifetime {
		return Identity{}, ErrLifetime
	}
	return id, nil
}

// Sign returns the token for id under key.
func Sign(key []byte, id Identity) (string, error) {
	k, err := NewKeyring(key)
	if err != nil {
		return "", err
	}
	return k.Sign(id)
}

// Verify checks token under key at now and returns the identity it carries.
func Verify(key []byte, token string, now time.Time) (Identity, error) {
	k, err := NewKeyring(key)
	if err != nil {
		return Identity{}, err
	}
	return k.Verify(token, now)
}
