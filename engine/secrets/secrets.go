// Package secrets owns org config at rest: AES-256-GCM sealing of each value under a master
// key, with the organization id and the key name as additional data (a value copied to
// another organization or another key does not open); the keyring of master keys that
// rotation needs (the current key seals, every key it holds opens); masking for listings;
// the storage contract of sealed values; and Reseal, which moves every stored value to the
// current master key.
//
// It never logs, and no error it returns contains a value, sealed or not. It does no I/O
// except reading and writing key files (KeyFile), and speaks to a database only through
// Store.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// KeySize is the length of a master key: AES-256.
const KeySize = 32

// Errors. None of them, nor anything wrapping them here, carries a value.
var (
	// ErrNoMasterKey: the process has no master key, so org config can be neither sealed
	// nor opened (a PostgreSQL deployment started without SVC_MASTER_KEY).
	ErrNoMasterKey = errors.New("no master key is configured: org config is unavailable")
	// ErrUnknownKey: the value was sealed under a master key this process does not have,
	// even after re-reading its key source.
	ErrUnknownKey = errors.New("sealed under a master key this process does not have")
	// ErrDecrypt: the value does not open: it was sealed for another organization or
	// another key name, or altered.
	ErrDecrypt = errors.New("sealed value does not open (another organization or key name, or altered)")
	// ErrMalformed: the bytes are not a sealed value of any version this package knows.
	ErrMalformed = errors.New("not a sealed value")
	// ErrBadKey: a master key that is not base64 of 32 bytes.
	ErrBadKey = errors.New("a master key is base64 of 32 random bytes")
)

// Sealed layout, version 1:
//
//	[1]  version (1)
//	[8]  key id: the first 8 bytes of SHA-256("svcflow master key id\x00" || master key)
//	[12] GCM nonce, random
//	[..] ciphertext and 16-byte tag
//
// The additional data is the version and key id followed by the organization id and the
// key name, each length-prefixed, so a value opens only where it was sealed.
const (
	sealVersion = 1
	idLen       = 8
	headerLen   = 1 + idLen
)

// KeyID names a master key without revealing it: 16 hex digits of a hash of the key. It is
// what sealed values carry and what the store records beside each value.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

func keyID(key []byte) [idLen]byte {
	h := sha256.New()
	h.Write([]byte("svcflow master key id\x00"))
	h.Write(key)
	var id [idLen]byte
	copy(id[:], h.Sum(nil))
	return id
}

// GenerateKey returns a new random master key.
func GenerateKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("secrets: generate key: %w", err)
	}
	return k, nil
}

// EncodeKey is the text form of a master key: standard base64.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// ParseKey decodes one master key from base64 (standard or URL alphabet, padded or not).
// The error never repeats the text.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, ErrBadKey
}

// ParseKeys decodes a list of master keys, current first, separated by commas or
// whitespace: the form of SVC_MASTER_KEY ("new,old") and of key files (one per line; a
// line starting with # is a comment). A repeated key is kept once.
func ParseKeys(list string) ([][]byte, error) {
	var keys [][]byte
	seen := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			k, err := ParseKey(f)
			if err != nil {
				return nil, fmt.Errorf("secrets: key %d: %w", len(keys)+1, err)
			}
			if id := KeyID(k); !seen[id] {
				seen[id] = true
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("secrets: no key in the list: %w", ErrBadKey)
	}
	return keys, nil
}

// Source is where a Keyring's master keys come from when they can change while the process
// runs (a key file that rotation rewrites).
type Source interface {
	// Load returns the master keys, current first.
	Load() ([][]byte, error)
	// Changed reports, cheaply, whether Load may now answer differently than it did last
	// time (for a file: its identity, size or modification time changed). An error (the
	// file is gone) makes sealing fail rather than seal under a key that may be retired.
	Changed() (bool, error)
}

// Keyring holds the master keys of a process: the current one seals, each of them opens
// what it sealed. A keyring over a Source re-reads it when the source changed before
// sealing, and when it meets a value under a key id it does not know, so a running process
// follows a rotation (see Reseal) without a restart. Safe for concurrent use.
type Keyring struct {
	src Source

	reload sync.Mutex // one Load at a time
	mu     sync.RWMutex
	keys   []masterKey // current first, never empty
}

type masterKey struct {
	id   [idLen]byte
	aead cipher.AEAD
}

// NewKeyring is a keyring of fixed keys, current first (SVC_MASTER_KEY="new,old").
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	k := &Keyring{}
	if err := k.set(keys); err != nil {
		return nil, err
	}
	return k, nil
}

// OpenKeyring loads a keyring from src, which it follows from then on.
func OpenKeyring(src Source) (*Keyring, error) {
	keys, err := src.Load()
	if err != nil {
		return nil, err
	}
	k := &Keyring{src: src}
	if err := k.set(keys); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *Keyring) set(keys [][]byte) error {
	if len(keys) == 0 {
		return fmt.Errorf("secrets: a keyring needs a key: %w", ErrBadKey)
	}
	ms := make([]masterKey, 0, len(keys))
	for _, key := range keys {
		if len(key) != KeySize {
			return ErrBadKey
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		ms = append(ms, masterKey{id: keyID(key), aead: aead})
	}
	k.mu.Lock()
	k.keys = ms
	k.mu.Unlock()
	return nil
}

// Refresh re-reads the keyring's source (nothing for fixed keys).
func (k *Keyring) Refresh() error {
	if k.src == nil {
		return nil
	}
	k.reload.Lock()
	defer k.reload.Unlock()
	keys, err := k.src.Load()
	if err != nil {
		return err
	}
	return k.set(keys)
}

// refreshIfChanged re-reads the source when it reports a change.
func (k *Keyring) refreshIfChanged() error {
	if k.src == nil {
		return nil
	}
	changed, err := k.src.Changed()
	if err != nil {
		return err
	}
	if !changed {
		return nil
	}
	return k.Refresh()
}

// CurrentKeyID is the id of the key that seals, after re-reading a changed source.
func (k *Keyring) CurrentKeyID() (string, error) {
	if err := k.refreshIfChanged(); err != nil {
		return "", err
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return hex.EncodeToString(k.keys[0].id[:]), nil
}

// KeyIDs lists the ids of the keys held, current first.
func (k *Keyring) KeyIDs() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ids := make([]string, len(k.keys))
	for i, m := range k.keys {
		ids[i] = hex.EncodeToString(m.id[:])
	}
	return ids
}

func (k *Keyring) find(id [idLen]byte) (masterKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, m := range k.keys {
		if m.id == id {
			return m, true
		}
	}
	return masterKey{}, false
}

// Seal encrypts plaintext for one organization's key name under the current master key
// (re-reading a changed source first) and returns the sealed bytes and the key's id.
func (k *Keyring) Seal(orgID, name string, plaintext []byte) (sealed []byte, keyIDHex string, err error) {
	if k == nil {
		return nil, "", ErrNoMasterKey
	}
	if err := k.refreshIfChanged(); err != nil {
		return nil, "", fmt.Errorf("secrets: seal: reading the master keys: %w", err)
	}
	k.mu.RLock()
	m := k.keys[0]
	k.mu.RUnlock()
	nonce := make([]byte, m.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("secrets: seal: %w", err)
	}
	out := make([]byte, 0, headerLen+len(nonce)+len(plaintext)+m.aead.Overhead())
	out = append(out, sealVersion)
	out = append(out, m.id[:]...)
	out = append(out, nonce...)
	out = m.aead.Seal(out, nonce, plaintext, additionalData(out[:headerLen], orgID, name))
	return out, hex.EncodeToString(m.id[:]), nil
}

// Open decrypts a value sealed for orgID's key name. A value under a key id the keyring
// does not hold makes it re-read its source once before giving up with ErrUnknownKey.
func (k *Keyring) Open(orgID, name string, sealed []byte) ([]byte, error) {
	if k == nil {
		return nil, ErrNoMasterKey
	}
	id, err := SealedKeyID(sealed)
	if err != nil {
		return nil, err
	}
	var raw [idLen]byte
	copy(raw[:], sealed[1:headerLen])
	m, ok := k.find(raw)
	if !ok && k.src != nil {
		if err := k.Refresh(); err != nil {
			return nil, fmt.Errorf("secrets: open: re-reading the master keys for key id %s: %w", id, err)
		}
		m, ok = k.find(raw)
	}
	if !ok {
		return nil, fmt.Errorf("secrets: key id %s: %w", id, ErrUnknownKey)
	}
	ns := m.aead.NonceSize()
	if len(sealed) < headerLen+ns+m.aead.Overhead() {
		return nil, fmt.Errorf("secrets: %w", ErrMalformed)
	}
	nonce := sealed[headerLen : headerLen+ns]
	plain, err := m.aead.Open(nil, nonce, sealed[headerLen+ns:], additionalData(sealed[:headerLen], orgID, name))
	if err != nil {
		return nil, fmt.Errorf("secrets: key id %s: %w", id, ErrDecrypt)
	}
	return plain, nil
}

// SealedKeyID is the id of the master key a sealed value was sealed under.
func SealedKeyID(sealed []byte) (string, error) {
	if len(sealed) < headerLen || sealed[0] != sealVersion {
		return "", fmt.Errorf("secrets: %w", ErrMalformed)
	}
	return hex.EncodeToString(sealed[1:headerLen]), nil
}

// additionalData binds a sealed value to its header, its organization and its key name.
func additionalData(header []byte, orgID, name string) []byte {
	ad := make([]byte, 0, len("svcflow org config\x00")+len(header)+2*binary.MaxVarintLen64+len(orgID)+len(name))
	ad = append(ad, "svcflow org config\x00"...)
	ad = append(ad, header...)
	ad = binary.AppendUvarint(ad, uint64(len(orgID)))
	ad = append(ad, orgID...)
	ad = binary.AppendUvarint(ad, uint64(len(name)))
	ad = append(ad, name...)
	return ad
}
