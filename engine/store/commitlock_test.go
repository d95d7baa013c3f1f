package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestStepCommitBesideACancel races a step's commit (storage.CommitStep, renewing or
// completing its job) with a transaction shaped as a cancel: it deletes the run's job,
// then, a moment later, updates the run. The commit must take the job's row before the
// run's, as the cancel does: it then waits for the cancel and finds its job gone
// (ErrLeaseLost). Run first, the two deadlocked (PostgreSQL's 40P01), and the cancel or
// the step failed with it. The cancel updates the run once the commit waits behind it.
func TestStepCommitBesideACancel(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		for _, final := range []bool{false, true} {
			name := dialect + map[bool]string{false: "/renews", true: "/completes"}[final]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := store.OpenTest(t, dialect)
				ctx := context.Background()
				const org = "org-a"
				run := &svctype.Run{ID: "run-1", OrgID: org, WorkflowID: "wf", WorkflowVersion: 1,
					Status: svctype.RunRunning, Input: json.RawMessage(`{}`), Definition: json.RawMessage(`{}`)}
				require.NoError(t, s.CreateRun(ctx, run, time.Time{}))
				require.NoError(t, s.EnqueueJob(ctx, &svctype.Job{OrgID: org, Kind: svctype.JobRunStep, RunID: run.ID, RunAt: time.Now().Add(-time.Second)}))
				jobs, err := s.ClaimJobs(ctx, 1, time.Minute)
				require.NoError(t, err)
				require.Len(t, jobs, 1)
				job := &jobs[0]

				deleted := make(chan struct{})
				cancelled := make(chan error, 1)
				go func() {
					cancelled <- s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
						if err := tx.DeleteJobs(ctx, org, svctype.JobRunStep, run.ID, ""); err != nil {
							return err
						}
						close(deleted)
						waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
						defer cancel()
						if err := store.WaitBlockedBehind(waitCtx, s, tx); err != nil {
							return fmt.Errorf("the commit never waited for the cancel: %w", err)
						}
						r := *run
						now := time.Now()
						r.Status, r.FinishedAt, r.Reason = svctype.RunCancelled, &now, "cancelled"
						return tx.UpdateRun(ctx, &r)
					})
				}()
				<-deleted // on SQLite the commit then waits for the one writer
				err = s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
					r := *run
					r.Cursor = svctype.Cursor{Step: 1}
					c := &storage.StepCommit{OrgID: org, Run: &r,
						Context: []storage.ContextPut{{Key: "k", Value: json.RawMessage(`1`)}},
						Events:  []svctype.Event{{OrgID: org, RunID: run.ID, Event: "step.completed", Payload: json.RawMessage(`{}`)}}}
					if final {
						now := time.Now()
						r.Status, r.FinishedAt, c.Complete = svctype.RunCompleted, &now, job
					} else {
						c.Renew, c.Lease = job, time.Minute
					}
					return storage.CommitStep(ctx, tx, c)
				})
				require.NoError(t, <-cancelled, "the cancel commits")
				require.ErrorIs(t, err, storage.ErrLeaseLost, "the step finds its job gone")
				got, err := s.GetRun(ctx, org, run.ID)
				require.NoError(t, err)
				require.Equal(t, svctype.RunCancelled, got.Status)
			})
		}
	}
}
