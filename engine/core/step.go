package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// scope returns the variables a step at index sees.
func (e *Core) scope(st *runState, index int) expr.Vars {
	v := make(expr.Vars, len(st.vars)+4)
	maps.Copy(v, st.vars)
	v["__run_id"] = st.run.ID
	v["__workflow_id"] = st.run.WorkflowID
	v["__step"] = index
	v["now"] = e.now().UTC().Format(time.RFC3339Nano)
	return v
}

// stepOnce commits the next unit of work of a run: the top-level gate, one step and the
// quick steps after it (chainSteps), or one batch of a foreach. It returns the steps
// committed with the unit's first.
func (e *Core) stepOnce(ctx context.Context, job *svctype.Job, st *runState) ([]chainedStep, error) {
	def := st.ent.def
	i := st.run.Cursor.Step
	if i >= len(def.Actions) {
		return nil, e.commitStep(ctx, job, st, &commit{})
	}
	step := &def.Actions[i]
	if _, pauses := e.stepPause(step); step.Type == LoopStep && !pauses {
		return nil, e.loopOnce(ctx, job, st, i, step)
	}
	started := e.now().UTC()
	rec := svctype.StepRecord{RunID: st.run.ID, Index: i, Type: step.Type, Status: svctype.StepCompleted, StartedAt: &started}
	c := &commit{rec: rec} // a call that fails ahead leaves its start and input in the failed record
	if err := e.workAhead(ctx, job, st, step, i, &c.rec); err != nil {
		return nil, e.afterCommit(ctx, job, st, c, i, step, err)
	}
	began := time.Now() // the chain's time counts from here: its work outside is done
	snapshot := *st.run
	var chained []chainedStep
	var commits []staged
	stop := len(def.Actions)
	for {
		err := e.unit(ctx, job, st, func(ctx context.Context, tx storage.Tx) error {
			chained, commits = nil, commits[:0]
			if err := e.stepUnit(ctx, tx, job, st, step, i, rec, c, &commits); err != nil {
				return err
			}
			if err := e.chainSteps(ctx, tx, job, st, began, stop, c, &chained, &commits); err != nil {
				return err
			}
			return e.commitUnit(ctx, tx, commits)
		})
		var broken *chainBroken
		if errors.As(err, &broken) {
			// A step after the first did not commit with it (it failed, or the store
			// refused its writes): the unit rolled back whole. It runs again with its
			// chain stopping before that step, which then fails, or succeeds, in a unit
			// of its own, as it would have without chains.
			*st.run = snapshot
			stop = broken.index
			continue
		}
		if err = e.afterCommit(ctx, job, st, c, i, step, err); err != nil {
			return nil, err
		}
		for _, s := range chained {
			e.applyOutputs(st, s.c)
		}
		return chained, nil
	}
}

// stepUnit runs step i of the run in tx and stages its commit, as c, in commits (a pause
// or the gate ending the run writes at once).
func (e *Core) stepUnit(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, step *svctype.Step, i int, rec svctype.StepRecord, c *commit, commits *[]staged) error {
	def := st.ent.def
	*c = commit{rec: rec}
	// A store that commits a step in one statement keeps the job's lease in it: one
	// statement fewer a step. The gate may end the run before any step: it renews first.
	_, oneStatement := tx.(storage.StepCommitter)
	c.renew = oneStatement && !(i == 0 && def.Condition != nil)
	if !c.renew {
		if err := e.keepLease(ctx, tx, job); err != nil {
			return err
		}
	}
	if i == 0 && def.Condition != nil {
		ok, err := e.gate(ctx, tx, job, st, c)
		if err != nil || !ok {
			return err
		}
	}
	vars := e.scope(st, i)
	out, key, status, err := e.execStep(ctx, tx, st, step, i, vars, c)
	if paused, keep := isPause(err); paused {
		if c.renew {
			// The job's row before the run's, as a cancel takes them: pauseRun
			// updates the run before it completes the job.
			if err := e.keepLease(ctx, tx, job); err != nil {
				return err
			}
		}
		return e.pauseRun(ctx, tx, job, st, c, keep)
	}
	if err != nil {
		return &stepFailure{err}
	}
	c.complete(status, key, out)
	sc, err := e.stageCommit(ctx, tx, job, st, c, i+1, commits)
	if err != nil {
		return err
	}
	*commits = append(*commits, staged{index: i, sc: sc})
	return nil
}

// gate evaluates definition.condition before the first step. When false the run ends as
// condition_not_met inside tx and gate returns false.
func (e *Core) gate(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, c *commit) (bool, error) {
	cond, err := st.ent.condition(st.ent.def, st.ent.def.Condition)
	if err == nil {
		var ok bool
		ok, err = cond.Eval(ctx, e.scope(st, 0))
		if err == nil {
			c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "workflow_condition", Result: ok})
			if ok {
				return true, nil
			}
		}
	}
	if err != nil {
		return false, &stepFailure{fmt.Errorf("definition.condition: %w", err)}
	}
	c.rec.Status = svctype.StepSkipped
	if c.rec.Type != "" { // a workflow without steps has no step to mark
		if err := tx.PutStep(ctx, st.run.OrgID, &c.rec); err != nil {
			return false, err
		}
	}
	e.finish(st.run, svctype.RunConditionNotMet, "definition.condition evaluated false")
	if err := tx.UpdateRun(ctx, st.run); err != nil {
		return false, err
	}
	if err := e.Emit(ctx, tx, []svctype.Event{e.Event(st.run, EventRunCompleted, events.WorkflowRunCompletedEvent{
		RunID: st.run.ID, WorkflowID: st.run.WorkflowID,
		Result: events.RunResult{Status: string(svctype.RunConditionNotMet)},
	})}, nil); err != nil {
		return false, err
	}
	return false, tx.CompleteJob(ctx, job)
}

// execStep runs one step (filter, onFalse, kind) inside tx and returns its output, the
// context key for it, and the step status.
func (e *Core) execStep(ctx context.Context, tx storage.Tx, st *runState, step *svctype.Step, index int, vars expr.Vars, c *commit) (any, string, svctype.StepStatus, error) {
	if step.Filter != nil {
		cond, err := st.ent.condition(step, step.Filter.Condition)
		if err != nil {
			return nil, "", "", fmt.Errorf("filter.condition: %w", err)
		}
		ok, err := cond.Eval(ctx, vars)
		if err != nil {
			return nil, "", "", fmt.Errorf("filter.condition: %w", err)
		}
		c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "filter", Result: ok})
		if !ok {
			if step.OnFalse == nil {
				return nil, "", svctype.StepSkipped, nil
			}
			c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "on_false", Result: step.OnFalse.Type})
			return e.execStep(ctx, tx, st, step.OnFalse, index, vars, c)
		}
	}
	if k, ok := e.stepPause(step); ok {
		return nil, "", "", e.pause(ctx, tx, st, k, step, index, vars, c)
	}
	if step.Type == LoopStep {
		// A loop nested in a foreach element runs inline, checkpointed with its element.
		out, err := e.inlineLoop(ctx, tx, st, step, index, vars, c)
		return out, loopResultKey(step), svctype.StepCompleted, err
	}
	kind, ok, err := e.lookupKind(ctx, tx, st.run.OrgID, step.Type)
	if err != nil {
		return nil, "", "", err
	}
	if !ok {
		return nil, "", "", fmt.Errorf("step type %q is neither a built-in primitive nor a registered action", step.Type)
	}
	read := st.reads[callKey(st.run.ID, c.position(index))]
	if c.inner {
		read = nil
	}
	var pm map[string]any
	if read != nil {
		pm = read.props
	} else {
		var err error
		if pm, err = e.resolveProps(ctx, st.run.OrgID, kind, step.Properties, vars, !c.inner); err != nil {
			if kind.FailedEvent != "" {
				err = svctype.FailWithEvent(err, kind.FailedEvent, nil)
			}
			return nil, "", "", err
		}
	}
	if c.rec.InputSummary == nil {
		c.rec.InputSummary = summarize(pm)
	}
	if !c.inner {
		c.events = append(c.events, e.Event(st.run, EventStepStarted, events.StepStartedEvent{
			RunID: st.run.ID, StepIndex: index, StepType: step.Type,
		}))
	}
	call := e.stepCall(st, step, index, pm, vars, c)
	var out any
	if read != nil {
		// Run ahead of this transaction (workAhead): its output and its events.
		// Its events happened before this transaction began: stamped no earlier than the
		// step.started event just made, so that a run's events keep their order in time.
		at := e.now().UTC()
		if n := len(c.events); n > 0 {
			at = c.events[n-1].Timestamp
		}
		for _, ev := range read.events {
			if ev.Timestamp.Before(at) {
				ev.Timestamp = at
			}
			c.events = append(c.events, ev)
		}
		for k, b := range read.encoded {
			if k != step.OutputKey {
				c.setEncoded(k, b)
			}
		}
		c.events = append(c.events, e.Event(st.run, EventStepDone, events.StepCompletedEvent{RunID: st.run.ID, StepIndex: index}))
		return read.out, step.OutputKey, svctype.StepCompleted, nil
	} else if kind.IO != nil {
		key := callKey(st.run.ID, c.position(index))
		r, ok := st.calls[key]
		if !ok {
			call.Secret = e.secretFor(st.run.OrgID)
			return nil, "", "", &needIO{key: key, kind: kind, call: call}
		}
		c.rec.Effects = append(c.rec.Effects, r.effect())
		if r.err != nil {
			return nil, "", "", r.err
		}
		call.IdempotencyKey, call.Try, call.IOResult = key, r.intent.Tries, r.out
		out = r.out
	}
	if kind.Run != nil {
		e.BindStepCall(tx, call)
		var err error
		if out, err = kind.Run(ctx, call); err != nil {
			return nil, "", "", err
		}
	}
	if co, ok := out.(svctype.ContextOutputs); ok {
		for k, v := range co {
			co[k] = normalize(v)
		}
	} else {
		out = normalize(out)
	}
	if !c.inner {
		c.events = append(c.events, e.Event(st.run, EventStepDone, events.StepCompletedEvent{RunID: st.run.ID, StepIndex: index}))
	}
	return out, step.OutputKey, svctype.StepCompleted, nil
}

// stepCall is what a step kind gets; its Emit and AddEffect write into c (nothing when c is
// nil). What features keep in a transaction is not in it yet: the caller binds it
// (BindStepCall) before the kind's Run half runs.
func (e *Core) stepCall(st *runState, step *svctype.Step, index int, pm map[string]any, vars expr.Vars, c *commit) *svctype.StepCall {
	var call *svctype.StepCall
	if c == nil {
		call = svctype.NewStepCall(nil, nil)
	} else {
		call = svctype.NewStepCall(
			func(name string, payload map[string]any) {
				if payload == nil {
					payload = map[string]any{}
				}
				fillStepFields(name, payload, map[string]any{"run_id": st.run.ID, "step_index": index})
				c.events = append(c.events, e.Event(st.run, name, payload))
			},
			func(eff svctype.Effect) { c.rec.Effects = append(c.rec.Effects, eff) },
		)
	}
	call.OrgID, call.RunID, call.WorkflowID = st.run.OrgID, st.run.ID, st.run.WorkflowID
	call.Index, call.Type, call.Properties, call.Raw, call.Vars = index, step.Type, pm, step.Properties, vars
	call.Resolve = func(ctx context.Context, v any, vars map[string]any) (any, error) {
		return e.eval.Resolve(svctype.WithOrg(ctx, st.run.OrgID), v, vars)
	}
	call.Logger = e.log
	if logs(e.log) {
		call.Logger = e.log.With("org_id", st.run.OrgID, "run_id", st.run.ID, "step_index", index, "step_type", step.Type)
	}
	return call
}

// logs reports whether l writes at any of slog's levels: a logger that writes nothing
// needs no attributes (With copies them, and the handler's state, at every step).
func logs(l *slog.Logger) bool {
	ctx := context.Background()
	for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		if l.Enabled(ctx, lv) {
			return true
		}
	}
	return false
}
