package secrets_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
)

const plaintext = "sk-live-4f9a1c77e2b04d1e9b5a"

func newKey(t *testing.T) []byte {
	t.Helper()
	k, err := secrets.GenerateKey()
	require.NoError(t, err)
	require.Len(t, k, secrets.KeySize)
	return k
}

func keyring(t *testing.T, keys ...[]byte) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.NewKeyring(keys...)
	require.NoError(t, err)
	return kr
}

// TestSealedValueOpensOnlyWhereItWasSealed: the org id and the key name are additional
// data, so a sealed value copied to another organization or another key does not open, nor
// under another master key, nor altered.
func TestSealedValueOpensOnlyWhereItWasSealed(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	kr := keyring(t, k1)
	sealed, id, err := kr.Seal("org_a", "api:llm_api_key", []byte(plaintext))
	require.NoError(t, err)
	require.Equal(t, secrets.KeyID(k1), id)
	require.NotContains(t, string(sealed), plaintext)
	sid, err := secrets.SealedKeyID(sealed)
	require.NoError(t, err)
	require.Equal(t, id, sid)

	again, _, err := kr.Seal("org_a", "api:llm_api_key", []byte(plaintext))
	require.NoError(t, err)
	require.NotEqual(t, sealed, again, "a fresh nonce every time")

	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	tests := []struct {
		name    string
		kr      *secrets.Keyring
		org     string
		key     string
		sealed  []byte
		wantErr error
	}{
		{"where it was sealed", kr, "org_a", "api:llm_api_key", sealed, nil},
		{"another organization", kr, "org_b", "api:llm_api_key", sealed, secrets.ErrDecrypt},
		{"another key name", kr, "org_a", "api:other", sealed, secrets.ErrDecrypt},
		{"org and key shifted", kr, "org_aapi", ":llm_api_key", sealed, secrets.ErrDecrypt},
		{"another master key", keyring(t, k2), "org_a", "api:llm_api_key", sealed, secrets.ErrUnknownKey},
		{"altered", kr, "org_a", "api:llm_api_key", flipped, secrets.ErrDecrypt},
		{"truncated", kr, "org_a", "api:llm_api_key", sealed[:20], secrets.ErrMalformed},
		{"not sealed", kr, "org_a", "api:llm_api_key", []byte(plaintext), secrets.ErrMalformed},
		{"empty", kr, "org_a", "api:llm_api_key", nil, secrets.ErrMalformed},
		{"no keyring", nil, "org_a", "api:llm_api_key", sealed, secrets.ErrNoMasterKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.kr.Open(tt.org, tt.key, tt.sealed)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, plaintext, string(got))
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.Nil(t, got)
			require.NotContains(t, err.Error(), plaintext)
		})
	}
}

func TestKeyringOpensUnderEveryKeyAndSealsUnderTheFirst(t *testing.T) {
	t.Parallel()
	old, current := newKey(t), newKey(t)
	sealedOld, _, err := keyring(t, old).Seal("o", "k", []byte("v"))
	require.NoError(t, err)

	kr := keyring(t, current, old)
	require.Equal(t, []string{secrets.KeyID(current), secrets.KeyID(old)}, kr.KeyIDs())
	got, err := kr.Open("o", "k", sealedOld)
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	_, id, err := kr.Seal("o", "k", []byte("v"))
	require.NoError(t, err)
	require.Equal(t, secrets.KeyID(current), id)

	_, err = secrets.NewKeyring()
	require.ErrorIs(t, err, secrets.ErrBadKey)
	_, err = secrets.NewKeyring([]byte("short"))
	require.ErrorIs(t, err, secrets.ErrBadKey)
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	a, b := newKey(t), newKey(t)
	ea, eb := secrets.EncodeKey(a), secrets.EncodeKey(b)
	tests := []struct {
		name string
		in   string
		want [][]byte
		bad  bool
	}{
		{"one", ea, [][]byte{a}, false},
		{"new,old", eb + "," + ea, [][]byte{b, a}, false},
		{"spaces and a repeat", " " + eb + " , " + ea + ",," + eb + " ", [][]byte{b, a}, false},
		{"key file lines with a comment", "# keys\n" + eb + "\n\n" + ea + "\n", [][]byte{b, a}, false},
		{"unpadded url alphabet", strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(ea), "="), [][]byte{a}, false},
		{"empty", " , ", nil, true},
		{"not base64", "not-a-key!", nil, true},
		{"16 bytes", "AAAAAAAAAAAAAAAAAAAAAA==", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := secrets.ParseKeys(tt.in)
			if tt.bad {
				require.ErrorIs(t, err, secrets.ErrBadKey)
				if strings.TrimSpace(tt.in) != "" {
					require.NotContains(t, err.Error(), strings.TrimSpace(tt.in), "an error never repeats a key")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, want string
	}{
		{"", secrets.Masked},
		{"abc", secrets.Masked},
		{"abcdefghijk", secrets.Masked}, // 11 characters
		{"abcdefghijkl", secrets.Masked + "ijkl"},
		{plaintext, secrets.Masked + "9b5a"},
		{"päßwörtäöüéñ", secrets.Masked + "äöüéñ"[2:]}, // 12 characters, 4 of them shown
		{"ünïcödé", secrets.Masked},
		{"abcdefghijk\xff", secrets.Masked},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			got := secrets.Mask(tt.value)
			require.Equal(t, tt.want, got)
			if tt.value != "" {
				require.NotContains(t, got, tt.value)
			}
		})
	}
}

// TestKeyFileFollowsRotation: a keyring over a key file seals under the file's new first key
// as soon as the file is replaced, and one that has not sealed since opens a value under a
// key id it does not know by re-reading the file.
func TestKeyFileFollowsRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "svcflow.db.masterkey")
	keys, created, err := secrets.CreateKeyFile(path)
	require.NoError(t, err)
	require.True(t, created)
	k1 := keys[0]

	sealer, err := secrets.OpenKeyring(secrets.NewKeyFile(path))
	require.NoError(t, err)
	reader, err := secrets.OpenKeyring(secrets.NewKeyFile(path))
	require.NoError(t, err)
	_, id, err := sealer.Seal("o", "k", []byte("v1"))
	require.NoError(t, err)
	require.Equal(t, secrets.KeyID(k1), id)

	k2 := newKey(t)
	require.NoError(t, secrets.WriteKeyFile(path, [][]byte{k2, k1}))
	sealed, id, err := sealer.Seal("o", "k", []byte("v2"))
	require.NoError(t, err)
	require.Equal(t, secrets.KeyID(k2), id, "the replaced file's first key seals at once")

	require.Equal(t, []string{secrets.KeyID(k1)}, reader.KeyIDs(), "the reader has not looked yet")
	got, err := reader.Open("o", "k", sealed)
	require.NoError(t, err, "an unknown key id makes it re-read the file")
	require.Equal(t, "v2", string(got))

	require.NoError(t, os.Remove(path))
	_, _, err = sealer.Seal("o", "k", []byte("v3"))
	require.Error(t, err, "no key file: refuse to seal under a key that may be retired")
}

func TestCreateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "db.masterkey")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		creates int
		seen    = map[string]bool{}
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys, created, err := secrets.CreateKeyFile(path)
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if created {
				creates++
			}
			seen[secrets.KeyID(keys[0])] = true
		}()
	}
	wg.Wait()
	require.Equal(t, 1, creates, "one process creates the file")
	require.Len(t, seen, 1, "every process uses the one key")

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	keys, created, err := secrets.CreateKeyFile(path)
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, seen[secrets.KeyID(keys[0])], "reused on a later start")

	require.NoError(t, secrets.WriteKeyFile(path, [][]byte{newKey(t), keys[0]}))
	info, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}
