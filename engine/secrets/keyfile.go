package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// KeyFile is a file of master keys, one base64 key a line, current first (lines starting
// with # are comments), readable by its owner only. As a Source it tells a Keyring to
// re-read it when its identity, size or modification time changes: rotation replaces it
// (WriteKeyFile renames a new file over it), so a running process sees the new key at its
// next seal, or when it meets a value sealed under it.
type KeyFile struct {
	Path string

	mu   sync.Mutex
	seen fs.FileInfo // the file as of the last Load
}

// NewKeyFile is the key file at path (not read yet).
func NewKeyFile(path string) *KeyFile { return &KeyFile{Path: path} }

// Load reads the keys.
func (f *KeyFile) Load() ([][]byte, error) {
	info, err := os.Stat(f.Path)
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	keys, err := ReadKeyFile(f.Path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.seen = info
	f.mu.Unlock()
	return keys, nil
}

// Changed compares the file with what the last Load read.
func (f *KeyFile) Changed() (bool, error) {
	info, err := os.Stat(f.Path)
	if err != nil {
		return false, fmt.Errorf("secrets: key file: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen == nil || !os.SameFile(f.seen, info) || f.seen.Size() != info.Size() || !f.seen.ModTime().Equal(info.ModTime()), nil
}

// ReadKeyFile reads the keys of a key file, current first.
func ReadKeyFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	keys, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("secrets: key file %s: %w", path, err)
	}
	return keys, nil
}

func keyFileText(keys [][]byte) []byte {
	var b strings.Builder
	b.WriteString("# svcflow master keys, current first (base64, 32 bytes). Keep this file secret and back it up with the database.\n")
	for _, k := range keys {
		b.WriteString(EncodeKey(k) + "\n")
	}
	return []byte(b.String())
}

// writeTemp writes keys to a new file beside path, mode 0600, synced.
func writeTemp(path string, keys [][]byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("secrets: key file: %w", err)
	}
	name := tmp.Name()
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(keyFileText(keys))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("secrets: key file: %w", err)
	}
	return name, nil
}

// WriteKeyFile replaces the key file at path with keys (current first), atomically: a
// reader sees the old file or the new one, never a part. Mode 0600.
func WriteKeyFile(path string, keys [][]byte) error {
	if len(keys) == 0 {
		return fmt.Errorf("secrets: key file: no keys: %w", ErrBadKey)
	}
	tmp, err := writeTemp(path, keys)
	if err != nil {
		return err
	}
	// The modification time is what Changed compares, next to size and identity; a
	// rename gives the file a new identity on every file system that has inodes.
	now := time.Now()
	_ = os.Chtimes(tmp, now, now)
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("secrets: key file: %w", err)
	}
	return nil
}

// CreateKeyFile returns the keys of the key file at path, first creating it with a new
// random key when it does not exist (created reports that). Creation is atomic and never
// replaces a file: of several processes starting at once on a new database, one creates
// it and the others read that one.
func CreateKeyFile(path string) (keys [][]byte, created bool, err error) {
	if keys, err := ReadKeyFile(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return keys, false, err
	}
	key, err := GenerateKey()
	if err != nil {
		return nil, false, err
	}
	tmp, err := writeTemp(path, [][]byte{key})
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(tmp)
	// A hard link fails when path exists, where a rename would replace it.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			keys, err := ReadKeyFile(path)
			return keys, false, err
		}
		return nil, false, fmt.Errorf("secrets: key file: %w", err)
	}
	return [][]byte{key}, true, nil
}
