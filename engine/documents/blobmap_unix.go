//go:build unix

package documents

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Map maps a blob's file read-only instead of reading it (BlobMapper): its pages are the
// file's, read from disk as they are touched and dropped by the kernel when memory is
// short, never on the Go heap. A blob's file is never changed in place (Put renames a new
// file over it), so the mapping keeps reading the content it mapped, also after a Delete.
func (b *DirBlobs) Map(_ context.Context, key BlobKey) ([]byte, func(), error) {
	p, err := b.path(key)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("documents: blob %s@%d: %w", key.DocumentID, key.Version, svctype.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("documents: map blob: %w", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	info, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("documents: map blob: %w", err)
	}
	if info.Size() == 0 {
		return []byte{}, func() {}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("documents: map blob: %w", err)
	}
	var once sync.Once
	return data, func() { once.Do(func() { _ = syscall.Munmap(data) }) }, nil
}
