package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestOneClaimerWakesForAJob: two Stores on one PostgreSQL database that both watch for
// jobs (two worker processes) are each woken for half of the jobs made claimable, each job
// waking exactly one of them; a Store that only watches run statuses (a runtime) is no
// claimer and takes no share.
func TestOneClaimerWakesForAJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := NewTestDSN(t, dialectPostgres)
	open := func() *Store {
		s, err := Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.NoError(t, s.Migrate(ctx))
		return s
	}
	type watcher struct {
		mu       sync.Mutex
		woken    int
		sentinel chan struct{}
	}
	runtime := open()
	stopStatus := runtime.WatchRunStatus(func(string, string) {})
	defer stopStatus()
	var ws []*watcher
	var stores []*Store
	for range 2 {
		s, w := open(), &watcher{sentinel: make(chan struct{}, 1)}
		// The run-status watcher first, as an engine does: the connection then reopens as
		// a claimer's when the jobs watcher comes.
		stop := s.WatchRunStatus(func(_, runID string) {
			if runID == "sentinel" {
				w.sentinel <- struct{}{}
			}
		})
		defer stop()
		stopJobs := s.WatchJobs(func() {
			w.mu.Lock()
			w.woken++
			w.mu.Unlock()
		})
		defer stopJobs()
		ws, stores = append(ws, w), append(stores, s)
	}
	// Until both know there are two claimers (each reads it every claimerRefresh): woken by
	// each reading, not by a clock.
	changed := make(chan struct{}, 1)
	for _, s := range stores {
		s.listen.turn.mu.Lock()
		s.listen.turn.changed = changed
		s.listen.turn.mu.Unlock()
	}
	for {
		known := 0
		for _, s := range stores {
			s.listen.turn.mu.Lock()
			if s.listen.turn.size == 2 && s.listen.turn.place >= 0 {
				known++
			}
			s.listen.turn.mu.Unlock()
		}
		if known == 2 {
			break
		}
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatal("the claimers never learned of each other")
		}
	}

	const jobs = 20
	require.NoError(t, runtime.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		for range jobs {
			if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: "acme", Kind: svctype.JobRunStep, RunID: "r"}); err != nil {
				return err
			}
		}
		return nil
	}))
	// Notifications reach each listener in commit order: once the sentinel is in, so is
	// every job's.
	_, err := runtime.write.NewRaw("SELECT pg_notify(?, ?)", runStatusChannel, "acme\nsentinel").Exec(ctx)
	require.NoError(t, err)
	for i, w := range ws {
		select {
		case <-w.sentinel:
		case <-time.After(30 * time.Second):
			t.Fatalf("store %d never heard the sentinel", i)
		}
	}
	for i, w := range ws {
		w.mu.Lock()
		require.Equal(t, jobs/2, w.woken, "store %d: woken for its half of the jobs (consecutive ids)", i)
		w.mu.Unlock()
	}
}
