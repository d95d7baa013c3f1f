package core

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// MaxAttempts is how many times in a row a run's job may be claimed without committing a
// step before the run fails, naming the step: a step that crashes its worker every time,
// or meets a store error every time, must not be retried forever. Every committed step
// (and every committed foreach element) starts the count again, so a run that makes
// progress never reaches it, however often it is handed between workers.
const MaxAttempts = 25

// keepLease renews job's lease inside a step's transaction and, because it commits with the
// step, restarts the job's attempt count: Attempts counts the claims since the last commit.
func (e *Core) keepLease(ctx context.Context, tx storage.Tx, job *svctype.Job) error {
	job.Attempts = 0
	return tx.RenewJob(ctx, job, e.lease)
}

// yieldRun hands a run that has used its slice back to the queue, behind the jobs that are
// due now, so that every queued run (of this organization or another) gets its turn before
// this one continues. Its state stays in memory for this process's next claim of it.
func (e *Core) yieldRun(ctx context.Context, job *svctype.Job, st *runState) error {
	job.RunAt = time.Time{} // the store's now: after every job due now
	err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.RenewJob(ctx, job, 0)
	})
	if err == nil {
		e.states.put(job.ID, job.Claims, st)
		e.Notify()
	}
	return err
}
