package store

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestWriterCache: the writer's page cache is 4 MiB (writerPragmas), the readers' 16 MiB,
// and a transaction that changes more than the writer's cache holds keeps its pages in
// memory until its commit (cache_spill): the WAL does not grow before the commit.
func TestWriterCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openTestFile(t)

	var cache, spill, readCache int
	require.NoError(t, s.write.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache))
	require.NoError(t, s.write.QueryRowContext(ctx, "PRAGMA cache_spill").Scan(&spill))
	require.NoError(t, s.read.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&readCache))
	require.Equal(t, -4096, cache)
	require.Equal(t, 4096, spill)
	require.Equal(t, -16384, readCache)

	run := &svctype.Run{ID: "run-1", OrgID: "o", WorkflowID: "w", WorkflowVersion: 1, Status: svctype.RunRunning,
		Input: json.RawMessage(`{}`), Definition: json.RawMessage(`{}`)}
	require.NoError(t, s.CreateRun(ctx, run, time.Time{}))
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		require.NoError(t, err)
		return fi.Size()
	}
	before := walSize()
	value := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
	require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		for i := range 100 { // 6.4 MB: about 1,600 pages, more than the writer's 1,024
			if err := tx.PutContext(ctx, "o", run.ID, "k"+strconv.Itoa(i), value); err != nil {
				return err
			}
		}
		require.Equal(t, before, walSize(), "no page spilled to the WAL before the commit")
		return nil
	}))
	require.Greater(t, walSize(), before+int64(6<<20), "the commit wrote the pages")
}
