package core_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

var (
	errCommit = errors.New("commit: disk I/O error")
	errReload = errors.New("reload: connection refused")
)

// brokenStore fails the next transaction once armed, and every GetRun after that until
// healed: a store that went away between a step's commit and the reload of its run.
type brokenStore struct {
	engine.Store
	armed  atomic.Bool
	broken atomic.Bool
}

func (s *brokenStore) InTx(ctx context.Context, fn func(ctx context.Context, tx engine.Tx) error) error {
	if s.armed.CompareAndSwap(true, false) {
		s.broken.Store(true)
		return errCommit
	}
	return s.Store.InTx(ctx, fn)
}

func (s *brokenStore) GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error) {
	if s.broken.Load() {
		return nil, errReload
	}
	return s.Store.GetRun(ctx, orgID, id)
}

// TestReloadFailureAfterFailedCommit: when a step's commit fails and reloading the run
// fails too, the worker's copy of the run may differ from the database. The worker stops
// advancing the run, returns an error that carries both failures and names the run, logs it
// with run_id, and leaves the job leased: the run goes on after the lease lapses.
func TestReloadFailureAfterFailedCommit(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := enginetest.NewClock(time.Now())
			st := &brokenStore{Store: store.OpenTest(t, dialect, store.WithNow(clk.Now))}
			var logs enginetest.LockedBuffer
			const lease = 300 * time.Millisecond
			eng, err := engine.New(engine.Config{Store: st, Lease: lease, Now: clk.Now, Logger: testlog.Tee(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			b := &enginetest.Bundle{Eng: eng, St: st, Ctx: ctx}
			b.CustomerTables(t, "acme")
			w := b.Workflow(t, "acme", "two", `{"actions": [
			  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "one"}}},
			  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "two"}}}
			]}`)
			run, err := eng.Execute(ctx, "acme", w.ID, nil, engine.ExecuteOptions{})
			require.NoError(t, err)

			st.armed.Store(true)
			_, err = eng.Work(ctx)
			require.ErrorIs(t, err, errCommit, "the commit's failure is returned")
			require.ErrorIs(t, err, errReload, "and so is the reload's")
			require.NotErrorIs(t, err, engine.ErrLeaseLost)
			require.Contains(t, err.Error(), run.ID)
			require.Contains(t, logs.String(), "run_id="+run.ID)
			require.Contains(t, logs.String(), errReload.Error())

			st.broken.Store(false)
			jobs, err := st.ClaimJobs(ctx, 10, time.Minute)
			require.NoError(t, err)
			require.Empty(t, jobs, "the job stays leased to the worker that stopped")
			rows, err := eng.ReadRows(ctx, "acme", "notes", nil, 0)
			require.NoError(t, err)
			require.Empty(t, rows, "the failed commit wrote nothing")

			_, err = eng.Work(ctx)
			require.NoError(t, err)
			doc, err := eng.RunStatus(ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunRunning, doc.Status, "nothing is claimed while the lease holds")
			clk.Advance(lease + 100*time.Millisecond)
			_, err = eng.Work(ctx)
			require.NoError(t, err)
			doc, err = eng.RunStatus(ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, doc.Status, "another claim finishes the run")
			rows, err = eng.ReadRows(ctx, "acme", "notes", nil, 0)
			require.NoError(t, err)
			require.Len(t, rows, 2, "each step applied once")
		})
	}
}
