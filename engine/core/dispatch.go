package core

import (
	"context"
	"errors"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// ClaimBatch is how many jobs Work claims at a time.
const ClaimBatch = 16

// Work claims and runs due jobs until none is left, or ctx is done, and returns how many it
// ran. Tests, examples and one-shot tools use it; long-running hosts use hosts/worker.
func (e *Core) Work(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		jobs, err := e.store.ClaimJobs(ctx, ClaimBatch, e.lease)
		if err != nil {
			return n, err
		}
		if len(jobs) == 0 {
			return n, nil
		}
		for i := range jobs {
			if err := e.RunJob(ctx, &jobs[i]); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// RunJob does the work of one claimed job. For a run it commits one step after another until
// the run ends, pauses, or ctx is cancelled (then the job is released for any worker). ctx
// is checked between steps only: a step in progress is finished and committed (drain).
// ErrLeaseLost is not an error here: the run was cancelled or another worker owns the job.
// An error advancing a run is logged with its run_id before it is returned; the job keeps
// its lease until it lapses, and the next claim goes on from what the database holds.
func (e *Core) RunJob(ctx context.Context, job *svctype.Job) error {
	var err error
	switch job.Kind {
	case svctype.JobRunStep:
		err = e.advanceRun(ctx, job)
		var reload *runReloadError
		if err != nil && (!errors.Is(err, ErrLeaseLost) || errors.As(err, &reload)) {
			e.log.Error("advancing run failed; its job is claimed again when the lease lapses", "run_id", job.RunID, "org_id", job.OrgID, "job_id", job.ID, "err", err)
			return err
		}
	case svctype.JobSchedule:
		err = e.fireSchedule(context.WithoutCancel(ctx), job)
	default:
		if h, ok := e.jobHandler(job.Kind); ok {
			err = h(svctype.WithOrg(context.WithoutCancel(ctx), job.OrgID), job)
			break
		}
		err = e.store.InTx(context.WithoutCancel(ctx), func(ctx context.Context, tx storage.Tx) error {
			e.log.Warn("dropping job of unknown kind", "kind", job.Kind, "job_id", job.ID)
			return tx.CompleteJob(ctx, job)
		})
	}
	if errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return err
}
