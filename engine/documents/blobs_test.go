package documents_test

import (
	"context"
	"os"
	"path/filepath"
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
