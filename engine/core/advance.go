package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// runState is a run being advanced by one worker: its definition and its context as of the
// last commit.
type runState struct {
	run  *svctype.Run
	ent  *defEntry
	vars expr.Vars
	// calls are the calls made for the unit of work in progress (io.go), by idempotency
	// key; they are dropped when the unit commits or fails.
	calls map[string]*callResult
	// reads are the read-only steps run ahead of their transaction (workAhead), by the
	// same key; dropped with calls.
	reads map[string]*aheadRead
}

// aheadRead is a step run ahead of its transaction: its resolved properties, its output
// (normalized), the events it emitted, and the JSON of each ContextOutputs entry, encoded
// there too so that the transaction only writes bytes.
type aheadRead struct {
	props   map[string]any
	out     any
	events  []svctype.Event
	encoded map[string]encoded
}

func (e *Core) loadRun(ctx context.Context, job *svctype.Job) (*runState, error) {
	// One round trip on PostgreSQL (storage.RunLoader).
	run, raw, err := storage.LoadRun(ctx, e.store, job.OrgID, job.RunID)
	if err != nil {
		return nil, err
	}
	ent, err := e.entry(run)
	if err != nil {
		return nil, err
	}
	vars := expr.Vars(decodeContext(raw))
	return &runState{run: run, ent: ent, vars: vars}, nil
}

func (e *Core) advanceRun(ctx context.Context, job *svctype.Job) error {
	commitCtx := context.WithoutCancel(ctx)
	claimed := time.Now()
	st := e.states.take(job.ID, job.Claims)
	var err error
	if st == nil {
		st, err = e.loadRun(commitCtx, job)
	}
	if errors.Is(err, ErrNotFound) {
		return e.store.InTx(commitCtx, func(ctx context.Context, tx storage.Tx) error { return tx.CompleteJob(ctx, job) })
	}
	if err != nil {
		return err
	}
	if st.run.Status != svctype.RunRunning {
		return e.store.InTx(commitCtx, func(ctx context.Context, tx storage.Tx) error { return tx.CompleteJob(ctx, job) })
	}
	// Whatever ends or pauses the run below (a commit, a failure) wakes its waiters. A run
	// handed back to the queue is running, and its state may already be another worker's:
	// not read again here.
	yielded := false
	defer func() {
		if !yielded && st.run.Status != svctype.RunRunning {
			e.meter.Record(MetricRunsLeft, 1, string(st.run.Status))
			if st.run.Status.Terminal() {
				e.traceRunEnd(st.run)
			}
			e.runChangedTo(st.run)
		}
	}()
	commitCtx, slice := e.startSlice(commitCtx, job, st)
	units := 0
	defer func() { endSlice(slice, st, units, yielded, ctx.Err() != nil) }()
	if job.Attempts > MaxAttempts {
		// Every worker that took this run lost it without committing (crashes, or an error
		// of the store): stop retrying and say so, rather than loop forever.
		i := min(st.run.Cursor.Step, len(st.ent.def.Actions)-1)
		step := &svctype.Step{Type: "run"}
		if i >= 0 {
			step = &st.ent.def.Actions[i]
		}
		return e.failRun(commitCtx, job, st, max(i, 0), step,
			fmt.Errorf("gave up after %d attempts to run this step; the workers' logs say why", job.Attempts-1), nil)
	}
	// Every commit that ends or pauses the run also completes its job.
	stepped := false
	for st.run.Status == svctype.RunRunning {
		if ctx.Err() != nil {
			// Draining: hand the run to whichever worker claims it next, at its place in
			// the queue.
			return e.store.InTx(commitCtx, func(ctx context.Context, tx storage.Tx) error {
				return tx.RenewJob(ctx, job, 0)
			})
		}
		// Every claim commits at least one unit of work before its slice can end it, so a
		// run always progresses (and its attempts restart) however short the slice.
		if stepped && time.Since(claimed) >= e.slice {
			yielded = true
			return e.yieldRun(commitCtx, job, st)
		}
		began := time.Now()
		at := st.run.Cursor.Step
		stepCtx, span := e.startStep(commitCtx, st)
		chained, err := e.stepOnce(stepCtx, job, st)
		endStep(span, st, err)
		if err != nil {
			return err
		}
		for _, s := range chained {
			e.traceChained(commitCtx, st, at, s)
		}
		stepped, units = true, units+1
		took, typ := time.Since(began), e.stepType(st)
		if len(chained) > 0 {
			typ = st.ent.def.Actions[at].Type // the unit's first step names it
		}
		e.meter.Record(MetricStepSeconds, took.Seconds(), typ)
		if e.obs != nil {
			e.obs(typ, took)
		}
	}
	return nil
}

// stepType names the step a run's cursor was on, for observers.
func (e *Core) stepType(st *runState) string {
	i := st.run.Cursor.Step - 1
	if st.run.Cursor.Loop != nil {
		i++
	}
	if i >= 0 && i < len(st.ent.def.Actions) {
		return st.ent.def.Actions[i].Type
	}
	return ""
}
