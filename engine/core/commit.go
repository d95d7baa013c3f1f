package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// commit holds what one step commit writes besides the step's own table effects.
type commit struct {
	rec     svctype.StepRecord
	events  []svctype.Event
	outputs map[string]any
	// encoded holds outputs' JSON encoded ahead of the transaction, by key.
	encoded map[string]encoded
	// inner marks the steps of a foreach element: they emit no step.* events of their own.
	inner bool
	// at is the position of the step executing inside foreach elements ("2/5/0": step 2,
	// element 5, sub-step 0), empty at the top level; it makes the calls' idempotency keys.
	at string
	// earlier are the commits of the steps before this one in the same transaction
	// (chainSteps): their outputs are not in the run's variables until it commits.
	earlier []*commit
	// renew says the lease of the unit's job is kept by the commit's writes
	// (storage.StepCommit.Renew), not at the unit's start (keepLease).
	renew bool
}

// setEncoded gives the JSON of the output that setOutput will set under key, encoded
// before the transaction.
func (c *commit) setEncoded(key string, b encoded) {
	if c.encoded == nil {
		c.encoded = map[string]encoded{}
	}
	c.encoded[key] = b
}

// complete records a step's status in c and, when it completed, its output under key.
func (c *commit) complete(status svctype.StepStatus, key string, out any) {
	c.rec.Status = status
	if status == svctype.StepCompleted {
		applyOutput(c.setOutput, key, out)
		c.rec.Output = summarize(out)
	}
}

func (c *commit) setOutput(key string, v any) {
	if key == "" {
		return
	}
	if c.outputs == nil {
		c.outputs = map[string]any{}
	}
	c.outputs[key] = v
}

// writeCommit writes a finished top-level step and moves the cursor to next, ending the run
// when next is past the last step.
func (e *Core) writeCommit(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, c *commit, next int) error {
	sc, err := e.stageCommit(ctx, tx, job, st, c, next, nil)
	if err != nil {
		return err
	}
	if err := storage.CommitStep(ctx, tx, sc); err != nil {
		return err
	}
	return e.sink(ctx, tx, c.events, nil)
}

// staged is a step's commit that its unit writes with the others of the unit when their
// steps have run (commitUnit).
type staged struct {
	index int
	sc    *storage.StepCommit
}

// stageCommit is writeCommit but for the store's part: it moves the run on in memory and
// returns what the store is to write. A large value is written at once, in parts, after the
// commits staged before (commits, when not nil), which may write its key too.
func (e *Core) stageCommit(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, c *commit, next int, commits *[]staged) (*storage.StepCommit, error) {
	orgID, runID := st.run.OrgID, st.run.ID
	// The commit's writes go to the store together (storage.CommitStep: one statement on
	// PostgreSQL); a large value's parts go first, on their own.
	sc := &storage.StepCommit{OrgID: orgID, Run: st.run}
	for k, v := range c.outputs {
		b, ok := c.encoded[k]
		var err error
		if !ok {
			b, err = encodeOutput(v)
		}
		if err != nil {
			return nil, &stepFailure{fmt.Errorf("output %q is not JSON: %w", k, err)}
		}
		if !b.large() && len(b.whole) <= LargeValueBytes {
			sc.Context = append(sc.Context, storage.ContextPut{Key: k, Value: b.whole})
			continue
		}
		if commits != nil && len(*commits) > 0 {
			if err := e.commitUnit(ctx, tx, *commits); err != nil {
				return nil, err
			}
			*commits = (*commits)[:0]
		}
		if err := putValue(ctx, tx, orgID, runID, k, b); err != nil {
			return nil, err
		}
	}
	if c.rec.Type != "" {
		now := e.now().UTC()
		c.rec.FinishedAt = &now
		sc.Step = &c.rec
	}
	st.run.Cursor = svctype.Cursor{Step: next}
	st.run.UpdatedAt = e.now().UTC()
	done := next >= len(st.ent.def.Actions)
	if done {
		e.finish(st.run, svctype.RunCompleted, "")
		c.events = append(c.events, e.Event(st.run, EventRunCompleted, events.WorkflowRunCompletedEvent{
			RunID: runID, WorkflowID: st.run.WorkflowID,
			Result: events.RunResult{Status: string(svctype.RunCompleted), Outputs: e.outputs(st, c)},
		}))
		sc.Complete = job
		sc.Next = nextClaimFrom(ctx)
	} else if c.renew {
		job.Attempts = 0
		sc.Renew, sc.Lease = job, e.lease
	}
	sc.Events = c.events
	return sc, nil
}

// commitUnit writes the staged commits of a unit's steps, in order (storage.CommitSteps:
// one statement on PostgreSQL), and hands their events to the sinks. A lost lease, a run
// gone or a conflict fails the unit whole; another failure of a unit with chained steps
// breaks the chain after its first step (chainBroken), whose commit then goes alone.
func (e *Core) commitUnit(ctx context.Context, tx storage.Tx, cs []staged) error {
	if len(cs) == 0 {
		return nil
	}
	scs := make([]*storage.StepCommit, len(cs))
	for i := range cs {
		scs[i] = cs[i].sc
	}
	if err := storage.CommitSteps(ctx, tx, scs); err != nil {
		if len(cs) > 1 && !errors.Is(err, storage.ErrLeaseLost) && !errors.Is(err, storage.ErrNotFound) &&
			!errors.Is(err, storage.ErrTryAgain) {
			return &chainBroken{cs[1].index, err}
		}
		return err
	}
	for i, s := range cs {
		if err := e.sink(ctx, tx, s.sc.Events, nil); err != nil {
			if i > 0 {
				return &chainBroken{s.index, err}
			}
			return err
		}
	}
	return nil
}

// commitStep commits c as the step that ends the run (used when the cursor is already past
// the last step, e.g. an empty workflow).
func (e *Core) commitStep(ctx context.Context, job *svctype.Job, st *runState, c *commit) error {
	snapshot, start := *st.run, *c
	err := e.unit(ctx, job, st, func(ctx context.Context, tx storage.Tx) error {
		*c = start // from scratch on each try (unit tries again after an abort)
		if err := e.keepLease(ctx, tx, job); err != nil {
			return err
		}
		if st.run.Cursor.Step == 0 && st.ent.def.Condition != nil {
			// A workflow without steps still has its gate.
			if ok, err := e.gate(ctx, tx, job, st, c); err != nil || !ok {
				return err
			}
		}
		return e.writeCommit(ctx, tx, job, st, c, st.run.Cursor.Step)
	})
	if err != nil {
		*st.run = snapshot
	}
	var sf *stepFailure
	if errors.As(err, &sf) {
		return e.failRun(ctx, job, st, st.run.Cursor.Step, &svctype.Step{Type: "definition.condition"}, sf.err, nil)
	}
	return err
}

// afterCommit applies a committed step to the in-memory state, or fails the run when the
// step itself failed.
func (e *Core) afterCommit(ctx context.Context, job *svctype.Job, st *runState, c *commit, i int, step *svctype.Step, err error) error {
	var sf *stepFailure
	switch {
	case err == nil:
		e.applyOutputs(st, c)
		return nil
	case errors.As(err, &sf):
		return e.failRun(ctx, job, st, i, step, sf.err, &c.rec)
	default:
		// The transaction rolled back: reload the run so memory matches the database. When
		// that fails too, memory may not match it: the caller stops advancing the run (st
		// is dropped) and the job is claimed again when its lease lapses.
		fresh, lerr := e.loadRun(ctx, job)
		if lerr != nil {
			return &runReloadError{runID: st.run.ID, commit: err, reload: lerr}
		}
		*st = *fresh
		return err
	}
}

// applyOutputs sets a committed step's outputs in the run's variables.
func (e *Core) applyOutputs(st *runState, c *commit) {
	if st.run.Status != svctype.RunRunning {
		// Ended or paused: no step reads these variables again (a paused run is loaded
		// from the store when it resumes). A large output stored in parts would be joined
		// into one buffer for nothing (a matcher's million pairs: 170 MB more at the
		// run's end).
		return
	}
	for k, v := range c.outputs {
		st.vars[k] = varValue(v, c.encoded[k])
	}
}

// runReloadError is a step commit that failed followed by a reload of its run that failed:
// both errors are kept (errors.Is finds either), and the message says what the worker did.
type runReloadError struct {
	runID  string
	commit error
	reload error
}

func (e *runReloadError) Error() string {
	return fmt.Sprintf("run %s: committing a step failed (%v) and reloading the run failed too (%v): "+
		"stopped advancing it; its job is claimed again when the lease lapses", e.runID, e.commit, e.reload)
}

func (e *runReloadError) Unwrap() []error { return []error{e.commit, e.reload} }
