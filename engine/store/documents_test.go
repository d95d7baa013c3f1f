package store_test

import (
	"os"
	"testing"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/store/storetest"
)

// TestBlobStores runs the BlobStore suite on both implementations: content in the database
// (DBBlobs over the store, on each dialect) and in a directory (DirBlobs).
func TestBlobStores(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run("db-"+dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == "postgres" && os.Getenv(store.PostgresDSNEnv) == "" {
				t.Skip(store.PostgresDSNEnv + " is unset: skipping the PostgreSQL suite")
			}
			storetest.BlobStoreSuite(t, func(t *testing.T) (documents.BlobStore, func(*testing.T, documents.BlobKey)) {
				s := store.OpenTest(t, dialect)
				return documents.DBBlobs(s), storetest.DocumentVersionFor(s)
			})
		})
	}
	t.Run("dir", func(t *testing.T) {
		t.Parallel()
		storetest.BlobStoreSuite(t, func(t *testing.T) (documents.BlobStore, func(*testing.T, documents.BlobKey)) {
			return documents.NewDirBlobs(t.TempDir()), nil
		})
	})
}
