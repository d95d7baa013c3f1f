package documents

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/svcflow/svcflow/engine/svctype"
)

// DBBlobs keeps content in the database through s (a Store's blob table): the default.
// Given a transaction, the content commits (or not) with the version row that names it.
func DBBlobs(s BlobTable) BlobStore { return dbBlobs{s} }

type dbBlobs struct{ s BlobTable }

func (b dbBlobs) Put(ctx context.Context, key BlobKey, data []byte) error {
	return b.s.PutDocumentBlob(ctx, key, data)
}

func (b dbBlobs) Get(ctx context.Context, key BlobKey) ([]byte, error) {
	return b.s.GetDocumentBlob(ctx, key)
}

func (b dbBlobs) Delete(ctx context.Context, key BlobKey) error {
	return b.s.DeleteDocumentBlob(ctx, key)
}

// DirBlobs keeps content as files under a directory: <dir>/<hex of org id>/<document id>/<version>.
// The org id is hex-encoded because an org id may be "." or ".."; a document id must be
// letters, digits, '-' and '_'. A Put writes a temporary file and renames it, so a reader
// never sees half a blob. Files are outside the database transaction: the engine writes a
// version's file before its row commits (a failed commit leaves an unreferenced file, which
// a retry of the same version overwrites) and removes files after the rows are gone.
type DirBlobs struct {
	dir string
}

// NewDirBlobs returns a BlobStore over dir, which is created on the first Put.
func NewDirBlobs(dir string) *DirBlobs { return &DirBlobs{dir: dir} }

var blobIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func (b *DirBlobs) path(key BlobKey) (string, error) {
	if key.OrgID == "" || !blobIDPattern.MatchString(key.DocumentID) || key.Version < 1 {
		return "", fmt.Errorf("documents: blob key %q/%q@%d is not valid", key.OrgID, key.DocumentID, key.Version)
	}
	return filepath.Join(b.dir, hex.EncodeToString([]byte(key.OrgID)), key.DocumentID, strconv.Itoa(key.Version)), nil
}

// Put writes the blob atomically (temporary file, sync, rename).
func (b *DirBlobs) Put(_ context.Context, key BlobKey, data []byte) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("documents: put blob: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return fmt.Errorf("documents: put blob: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("documents: put blob: %w", err)
	}
	return nil
}

// Get reads a blob; svctype.ErrNotFound when it does not exist.
func (b *DirBlobs) Get(_ context.Context, key BlobKey) ([]byte, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("documents: blob %s@%d: %w", key.DocumentID, key.Version, svctype.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("documents: get blob: %w", err)
	}
	return data, nil
}

// Delete removes a blob, and the document's directory once it is empty; svctype.ErrNotFound
// when the blob does not exist.
func (b *DirBlobs) Delete(_ context.Context, key BlobKey) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	err = os.Remove(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("documents: blob %s@%d: %w", key.DocumentID, key.Version, svctype.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("documents: delete blob: %w", err)
	}
	// Fails while other versions remain, which is as it should be.
	_ = os.Remove(filepath.Dir(p))
	return nil
}
