package store

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

// TestCheckpointsOffTheCommits: a SQLite file's commits never checkpoint (the WAL grows
// past SQLite's default 1,000-page threshold with the checkpointer stopped); a checkpoint
// of the checkpointer's own copies the whole WAL; and the writer then starts the WAL over,
// so it does not grow with the next commits.
func TestCheckpointsOffTheCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := openTestFile(t)
	require.NotNil(t, s.checkpoints, "a SQLite file is checkpointed in the background")
	var auto int
	require.NoError(t, s.write.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto))
	require.Zero(t, auto, "the writer's commits do not checkpoint")
	name := s.checkpoints.name
	require.NoError(t, s.checkpoints.close()) // stopped: the test checkpoints by hand
	s.checkpoints = nil

	run := &svctype.Run{ID: "run-1", OrgID: "o", WorkflowID: "w", WorkflowVersion: 1, Status: svctype.RunRunning,
		Input: json.RawMessage(`{}`), Definition: json.RawMessage(`{}`)}
	require.NoError(t, s.CreateRun(ctx, run, time.Time{}))
	value := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
	write := func(n int, from int) {
		for i := range n {
			require.NoError(t, s.PutContext(ctx, "o", run.ID, "k"+string(rune('a'+(from+i)%26))+string(rune('a'+(from+i)/26)), value))
		}
	}
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		require.NoError(t, err)
		return fi.Size()
	}
	write(200, 0) // 12.8 MB in 200 commits
	grown := walSize()
	require.Greater(t, grown, int64(10<<20), "no commit checkpointed (SQLite's default would at about 4 MB)")

	c, err := startCheckpointer(name, time.Hour)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.close() })
	require.NoError(t, c.checkpoint(ctx))
	require.EqualValues(t, 1, c.runs)
	require.Greater(t, c.frames, int64(3000), "the WAL's frames copied")

	write(50, 200) // 3.2 MB more: written over the start of the WAL
	require.Equal(t, grown, walSize(), "the WAL started over after the checkpoint")
	got, err := s.GetContext(ctx, "o", run.ID, "kaa")
	require.NoError(t, err)
	require.Equal(t, string(value), string(got["kaa"]))
}
