package documents_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/svctype"
)

// The BlobStore contract is tested for DirBlobs and DBBlobs alike in
// engine/store/storetest (BlobStoreSuite); this file tests what only DirBlobs has: files.

func TestDirBlobsLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	b := documents.NewDirBlobs(dir)
	key := documents.BlobKey{OrgID: "..", DocumentID: "doc_1", Version: 2}
	require.NoError(t, b.Put(ctx, key, []byte("x")))
	// The org id is hex-encoded: ".." cannot climb out of dir.
	got, err := os.ReadFile(filepath.Join(dir, "2e2e", "doc_1", "2"))
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
	entries, err := os.ReadDir(filepath.Join(dir, "2e2e", "doc_1"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	require.NoError(t, b.Delete(ctx, key))
	_, err = os.Stat(filepath.Join(dir, "2e2e", "doc_1"))
	require.True(t, os.IsNotExist(err), "the document's directory goes with its last blob")
	require.ErrorIs(t, b.Delete(ctx, key), svctype.ErrNotFound)
}

func TestDirBlobsRejectsBadKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := documents.NewDirBlobs(t.TempDir())
	for _, key := range []documents.BlobKey{
		{OrgID: "o", DocumentID: "../escape", Version: 1},
		{OrgID: "o", DocumentID: "a/b", Version: 1},
		{OrgID: "o", DocumentID: "", Version: 1},
		{OrgID: "", DocumentID: "doc_1", Version: 1},
		{OrgID: "o", DocumentID: "doc_1", Version: 0},
	} {
		require.Error(t, b.Put(ctx, key, []byte("x")), "%+v", key)
		_, err := b.Get(ctx, key)
		require.Error(t, err, "%+v", key)
		require.NotErrorIs(t, err, svctype.ErrNotFound, "%+v", key)
	}
}

// mappedUnder counts this process's mappings of files under dir (Linux: /proc/self/maps);
// -1 where that cannot be read.
func mappedUnder(t *testing.T, dir string) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.Contains(line, dir) {
			n++
		}
	}
	return n
}

// DirBlobs.Map maps a blob's file: the content, also after the blob is deleted (a Put
// renames, a Delete unlinks: the mapped file is never changed), until unmap.
func TestDirBlobsMap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	b := documents.NewDirBlobs(dir)
	key := documents.BlobKey{OrgID: "o", DocumentID: "doc_1", Version: 1}
	content := strings.Repeat("id,amount\nA,1\n", 1000)
	require.NoError(t, b.Put(ctx, key, []byte(content)))
	data, unmap, err := b.Map(ctx, key)
	require.NoError(t, err)
	require.Equal(t, content, string(data))
	if n := mappedUnder(t, dir); n >= 0 {
		require.Positive(t, n, "the file is mapped, not read")
	}
	require.NoError(t, b.Put(ctx, key, []byte("replaced")))
	require.NoError(t, b.Delete(ctx, key))
	require.Equal(t, content, string(data), "the mapped content stays what was mapped")
	unmap()
	unmap() // twice is once
	if n := mappedUnder(t, dir); n >= 0 {
		require.Zero(t, n)
	}

	_, _, err = b.Map(ctx, key)
	require.ErrorIs(t, err, svctype.ErrNotFound)
	empty := documents.BlobKey{OrgID: "o", DocumentID: "doc_2", Version: 1}
	require.NoError(t, b.Put(ctx, empty, nil))
	data, unmap, err = b.Map(ctx, empty)
	require.NoError(t, err)
	require.Empty(t, data)
	unmap()
	_, _, err = b.Map(ctx, documents.BlobKey{OrgID: "o", DocumentID: "../x", Version: 1})
	require.Error(t, err)
	require.NotErrorIs(t, err, svctype.ErrNotFound)
}
