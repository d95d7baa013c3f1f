package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// statusReads is a store that counts the reads of run statuses (what a wait reads), and
// can run a hook right after the next transaction commits.
type statusReads struct {
	engine.Store
	reads       atomic.Int64
	mu          sync.Mutex
	afterCommit func()
}

func (s *statusReads) RunStatuses(ctx context.Context, orgID string, ids []string) (map[string]svctype.RunStatus, error) {
	s.reads.Add(1)
	return s.Store.RunStatuses(ctx, orgID, ids)
}

func (s *statusReads) InTx(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	err := s.Store.InTx(ctx, fn)
	s.mu.Lock()
	hook := s.afterCommit
	s.afterCommit = nil
	s.mu.Unlock()
	if err == nil && hook != nil {
		hook()
	}
	return err
}

func setupStatusReads(t *testing.T, dialect string) (*enginetest.Bundle, *statusReads) {
	t.Helper()
	sr := &statusReads{Store: store.OpenTest(t, dialect)}
	// The poll of waited runs, the safety net behind the commit's wake, is not what these
	// tests count: an hour apart, it never reads a status however slow the machine is.
	eng, err := engine.New(engine.Config{Store: sr, WaitPoll: time.Hour})
	require.NoError(t, err)
	b := &enginetest.Bundle{Eng: eng, St: sr, Ctx: context.Background()}
	b.CustomerTables(t, "acme")
	return b, sr
}

const twoSteps = `{"actions": [
  {"type": "custom-table", "outputKey": "a", "properties": {"table": "notes", "operation": "write", "fields": {"text": "a"}}},
  {"type": "custom-table", "outputKey": "b", "properties": {"table": "notes", "operation": "write", "fields": {"text": "b"}}}]}`

// TestExecuteAndWaitReadsNoStatus: a run that ends after ExecuteAndWait began waiting is
// answered by the commit that ends it, with its status; and one that ends between the
// commit that starts it and the wait (the worker took it at once) is answered too, because
// the waiter was registered inside the run's own transaction. Neither reads a status.
func TestExecuteAndWaitReadsNoStatus(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b, sr := setupStatusReads(t, dialect)
			wf := b.Workflow(t, "acme", "two", twoSteps)

			// Ends while the call returns from Execute or waits: the worker runs once the
			// start has committed, beside the call.
			committed, done := make(chan struct{}), make(chan struct{})
			sr.mu.Lock()
			sr.afterCommit = func() { close(committed) }
			sr.mu.Unlock()
			go func() {
				defer close(done)
				<-committed
				require.Equal(t, 1, b.Eng.Waiting(), "registered before the commit")
				_, err := b.Eng.Work(b.Ctx)
				require.NoError(t, err)
			}()
			run, status, err := b.Eng.ExecuteAndWait(b.Ctx, "acme", wf.ID, json.RawMessage(`{}`), engine.ExecuteOptions{}, engine.MaxWait)
			<-done
			require.NoError(t, err)
			require.Equal(t, svctype.RunRunning, run.Status, "the run as Execute returned it")
			require.Equal(t, svctype.RunCompleted, status)

			// Ends before the call waits: right after the start commits.
			sr.mu.Lock()
			sr.afterCommit = func() {
				_, err := b.Eng.Work(b.Ctx)
				require.NoError(t, err)
			}
			sr.mu.Unlock()
			run, status, err = b.Eng.ExecuteAndWait(b.Ctx, "acme", wf.ID, json.RawMessage(`{}`), engine.ExecuteOptions{}, engine.MaxWait)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, status, "woken though it ended before the wait began")
			doc, err := b.Eng.RunStatus(b.Ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, doc.Status)

			require.Zero(t, sr.reads.Load(), "no status read: the commits told the waiters")
			require.Zero(t, b.Eng.Waiting(), "every wait released")
		})
	}
}

// TestWaitRunTakesTheFinalStatusFromTheCommit: a waiter on a running run reads its status
// once, when it starts; the commit that completes the run hands it the final status, which
// it answers without reading again.
func TestWaitRunTakesTheFinalStatusFromTheCommit(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b, sr := setupStatusReads(t, dialect)
			wf := b.Workflow(t, "acme", "two", twoSteps)
			run, err := b.Eng.Execute(b.Ctx, "acme", wf.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
			require.NoError(t, err)

			type answer struct {
				status svctype.RunStatus
				err    error
			}
			got := make(chan answer, 1)
			go func() {
				s, err := b.Eng.WaitRun(b.Ctx, "acme", run.ID, svctype.RunRunning, engine.MaxWait)
				got <- answer{s, err}
			}()
			for b.Eng.Waiting() != 1 || sr.reads.Load() != 1 {
				goruntime.Gosched()
			}
			_, err = b.Eng.Work(b.Ctx)
			require.NoError(t, err)
			a := <-got
			require.NoError(t, a.err)
			require.Equal(t, svctype.RunCompleted, a.status)
			require.EqualValues(t, 1, sr.reads.Load(), "one read, when the wait began")
		})
	}
}

// runReads counts the reads of whole runs (GetRun) beside statusReads' status reads.
type runReads struct {
	*statusReads
	runs atomic.Int64
}

func (s *runReads) GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error) {
	s.runs.Add(1)
	return s.statusReads.GetRun(ctx, orgID, id)
}

// TestExecuteAndWaitStatusReadsNoRun: the status document ExecuteAndWaitStatus answers for
// a run that ended in this process is made from the run the ending commit handed the wait,
// without reading the run again, and is the document a read makes (RunStatusWith): times,
// reason, steps and context alike, for a completed and a failed run, with and without the
// context.
func TestExecuteAndWaitStatusReadsNoRun(t *testing.T) {
	t.Parallel()
	const failing = `{"actions": [
  {"type": "custom-table", "outputKey": "a", "properties": {"table": "notes", "operation": "write", "fields": {"text": "a"}}},
  {"type": "custom-table", "outputKey": "b", "properties": {"table": "no_such_table", "operation": "write", "fields": {"text": "b"}}},
  {"type": "custom-table", "outputKey": "c", "properties": {"table": "notes", "operation": "write", "fields": {"text": "c"}}}]}`
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b, sr := setupStatusReads(t, dialect)
			rr := &runReads{statusReads: sr}
			eng, err := engine.New(engine.Config{Store: rr})
			require.NoError(t, err)
			b.Eng, b.St = eng, rr
			for i, c := range []struct {
				def    string
				status svctype.RunStatus
				omit   bool
			}{
				{twoSteps, svctype.RunCompleted, false},
				{twoSteps, svctype.RunCompleted, true},
				{failing, svctype.RunFailed, false},
			} {
				wf := b.Workflow(t, "acme", fmt.Sprintf("wf-%d", i), c.def)
				var before int64
				// The run ends right after the start commits, before the call waits: the
				// waiter, registered inside the start's transaction, is handed the run.
				sr.mu.Lock()
				sr.afterCommit = func() {
					_, err := b.Eng.Work(b.Ctx)
					require.NoError(t, err)
					before = rr.runs.Load()
				}
				sr.mu.Unlock()
				opts := engine.StatusOptions{OmitContext: c.omit}
				run, doc, err := b.Eng.ExecuteAndWaitStatus(b.Ctx, "acme", wf.ID, json.RawMessage(`{"n": 1}`), engine.ExecuteOptions{}, engine.MaxWait, opts)
				require.NoError(t, err)
				require.Equal(t, svctype.RunRunning, run.Status, "the run as Execute returned it")
				require.Equal(t, c.status, doc.Status)
				require.Equal(t, before, rr.runs.Load(), "the run not read after it ended")

				read, err := b.Eng.RunStatusWith(b.Ctx, "acme", run.ID, opts)
				require.NoError(t, err)
				want, err := json.Marshal(read)
				require.NoError(t, err)
				got, err := json.Marshal(doc)
				require.NoError(t, err)
				require.JSONEq(t, string(want), string(got))
				require.NotNil(t, doc.FinishedAt)
				if c.status == svctype.RunFailed {
					require.Contains(t, doc.Reason, "step 1 (custom-table)")
				}
			}
			require.Zero(t, b.Eng.Waiting(), "every wait released")
		})
	}
}
