package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Pauses. A step of a registered pause kind stops its run: in the step's transaction the
// kind records what the run waits for (an approval, a form, an agent's question) with its
// events and timers, and the core commits, with them, the step in progress, the run paused
// with its cursor on the step, and the end of the run's job. Nothing is held in memory while
// the run waits. Whatever ends the wait resumes the run through ResumeTx, in one
// transaction: the one path for every pause kind.

// PauseKind is a kind of step that pauses its run.
type PauseKind struct {
	// Check validates the step's properties when a workflow is created or updated; at is
	// the JSON pointer of the properties (/definition/actions/2/properties).
	Check func(props map[string]any, at string) []Problem
	// Pause runs the step in its transaction: it records what the run waits for through tx
	// and p, and returns nil to pause the run; an error fails the step (an error from
	// p.Outside is the core's, and must be returned as it is).
	Pause func(ctx context.Context, tx storage.Tx, p *PauseCall) error
	// InForeach allows the step inside a foreach element; otherwise it fails there.
	InForeach bool
	// KeepRunning leaves the run running while the step waits (its step processing, no job):
	// the step's work goes on elsewhere (an agent run) and ends with ResumeTx. HoldTx pauses
	// and releases such a run while it waits for a person.
	KeepRunning bool
	// Synopsis is the step's main properties in a line ("{approver_role, comment}"), for
	// whoever describes the step types to an author (the drafting prompt).
	Synopsis string
}

// PauseCall is what a pause kind gets: the run, the step, and where its records go.
type PauseCall struct {
	Run *svctype.Run
	// Step is the step that pauses; Top is the top-level step at Index (Step itself, or the
	// step whose onFalse chain holds it).
	Step  *svctype.Step
	Top   *svctype.Step
	Index int
	// Vars is the scope the step's properties resolve in.
	Vars expr.Vars

	core *Core
	st   *runState
	c    *commit
}

// Properties returns the step's properties resolved in its scope.
func (p *PauseCall) Properties(ctx context.Context) (map[string]any, error) {
	resolved, err := p.core.eval.Resolve(svctype.WithOrg(ctx, p.Run.OrgID), p.Step.Properties, p.Vars)
	if err != nil {
		return nil, err
	}
	props, _ := resolved.(map[string]any)
	return props, nil
}

// Event builds an event of the run.
func (p *PauseCall) Event(name string, payload map[string]any) svctype.Event {
	return p.core.Event(p.Run, name, payload)
}

// Emit adds events to the step's commit (after step.started, which Pause emits itself when
// it wants it).
func (p *PauseCall) Emit(evs ...svctype.Event) { p.c.events = append(p.c.events, evs...) }

// SetInputSummary records a summary of the step's input in its record.
func (p *PauseCall) SetInputSummary(v any) { p.c.rec.InputSummary = summarize(v) }

// AddEffect records an effect of the step.
func (p *PauseCall) AddEffect(eff svctype.Effect) { p.c.rec.Effects = append(p.c.rec.Effects, eff) }

// AddDecision records a decision the step made.
func (p *PauseCall) AddDecision(d svctype.Decision) { p.c.rec.Decisions = append(p.c.rec.Decisions, d) }

// CallResult is an outside call made for a step: its output or its error.
type CallResult struct {
	Out any
	Err error
}

// Outside returns the result of the step's outside call io (made with props as the call's
// properties), once it has been made. Until then it returns an error that Pause must
// return as it is: the step's transaction rolls back, the call is made holding no
// transaction and no step slot (with its idempotency key and intent, as any IO step's), and
// the step runs again, finding the result here. The call's evidence is recorded then.
func (p *PauseCall) Outside(io svctype.IOFunc, props map[string]any) (*CallResult, error) {
	key := callKey(p.Run.ID, p.c.position(p.Index))
	r, made := p.st.calls[key]
	if !made {
		call := p.core.stepCall(p.st, p.Step, p.Index, props, p.Vars, nil)
		call.Secret = p.core.secretFor(p.Run.OrgID)
		return nil, &needIO{key: key, kind: svctype.StepKind{IO: io}, call: call}
	}
	p.c.rec.Effects = append(p.c.rec.Effects, r.effect())
	return &CallResult{Out: r.out, Err: r.err}, nil
}

// pauseSignal stops the executor at a step that paused its run: the step's transaction
// commits its writes with the run paused.
type pauseSignal struct{ keepRunning bool }

func (pauseSignal) Error() string { return "paused" }

// pause runs a step of pause kind k at index in tx.
func (e *Core) pause(ctx context.Context, tx storage.Tx, st *runState, k PauseKind, step *svctype.Step, index int, vars expr.Vars, c *commit) error {
	if c.inner && !k.InForeach {
		return fmt.Errorf("a %s step cannot run inside a foreach element: put it at the top level", step.Type)
	}
	p := &PauseCall{Run: st.run, Step: step, Top: &st.ent.def.Actions[index], Index: index, Vars: vars, core: e, st: st, c: c}
	if err := k.Pause(ctx, tx, p); err != nil {
		return err
	}
	return pauseSignal{keepRunning: k.KeepRunning}
}

// pauseRun commits, in tx, the pause of a run at step index: the step in progress, the run
// paused with its cursor on the step, the step's events, and the end of the run's job.
func (e *Core) pauseRun(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, c *commit, keepRunning bool) error {
	c.rec.Status = svctype.StepProcessing
	if err := tx.PutStep(ctx, st.run.OrgID, &c.rec); err != nil {
		return err
	}
	st.run.Status, st.run.UpdatedAt = svctype.RunPaused, e.now().UTC()
	if keepRunning {
		st.run.Status = svctype.RunRunning
	}
	if err := tx.UpdateRun(ctx, st.run); err != nil {
		return err
	}
	if err := e.Emit(ctx, tx, c.events, nil); err != nil {
		return err
	}
	return tx.CompleteJob(ctx, job)
}

// cancelSteps ends, as cancelled, the steps of a run being cancelled that are still in
// progress: the step it is paused at, a foreach between two of its slices. Their records
// keep what they hold (the effects of the elements committed).
func (e *Core) cancelSteps(ctx context.Context, tx storage.Tx, run *svctype.Run) error {
	statuses, err := tx.StepStatuses(ctx, run.OrgID, run.ID)
	if err != nil {
		return err
	}
	open := false
	for _, st := range statuses {
		open = open || st == svctype.StepProcessing
	}
	if !open {
		return nil
	}
	recs, err := tx.ListSteps(ctx, run.OrgID, run.ID)
	if err != nil {
		return err
	}
	for i := range recs {
		if rec := &recs[i]; rec.Status == svctype.StepProcessing {
			rec.RunID, rec.Status, rec.FinishedAt = run.ID, svctype.StepCancelled, run.FinishedAt
			if err := tx.PutStep(ctx, run.OrgID, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// Resume is how a paused run goes on past the step it paused at.
type Resume struct {
	// Step is the paused step's record as it ends (its Index names the step).
	Step svctype.StepRecord
	// Events are what ended the wait (pbot_approval_decided, form_submitted, ...), emitted
	// before step.completed or the run's end.
	Events []svctype.Event
	// End, when set, ends the run with this status and Reason (a rejection) instead of
	// going on with the next step.
	End    svctype.RunStatus
	Reason string
}

// ResumeTx resumes paused run in tx as r says: the step's record, then either the run
// running again at the next step (its job enqueued, step.completed emitted) or ended
// (workflow_run_completed with result.status End), and r's events. The caller has checked
// that the run is paused at r.Step.Index and removed its own timers. After the commit, call
// Resumed.
func (e *Core) ResumeTx(ctx context.Context, tx storage.Tx, run *svctype.Run, r Resume) error {
	if run.Status != svctype.RunPaused && run.Status != svctype.RunRunning {
		return fmt.Errorf("%w: run %s is %s, not waiting", ErrConflict, run.ID, run.Status)
	}
	// The record the step had while it waited keeps its start and resolved input: a resumer
	// (an approval, a form, an agent) writes the outcome, and the run page still shows what
	// the step was given and how long it took.
	if r.Step.StartedAt == nil || r.Step.InputSummary == nil {
		steps, err := tx.ListSteps(ctx, run.OrgID, run.ID)
		if err != nil {
			return err
		}
		for _, s := range steps {
			if s.Index != r.Step.Index {
				continue
			}
			if r.Step.StartedAt == nil {
				r.Step.StartedAt = s.StartedAt
			}
			if r.Step.InputSummary == nil {
				r.Step.InputSummary = s.InputSummary
			}
		}
	}
	if err := tx.PutStep(ctx, run.OrgID, &r.Step); err != nil {
		return err
	}
	evs := r.Events
	if r.End == "" {
		run.Status, run.Cursor, run.UpdatedAt = svctype.RunRunning, svctype.Cursor{Step: r.Step.Index + 1}, e.now().UTC()
		if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: run.OrgID, Kind: svctype.JobRunStep, RunID: run.ID}); err != nil {
			return err
		}
		evs = append(evs, e.Event(run, EventStepDone, events.StepCompletedEvent{RunID: run.ID, StepIndex: r.Step.Index}))
	} else {
		e.finish(run, r.End, r.Reason)
		evs = append(evs, e.Event(run, EventRunCompleted, events.WorkflowRunCompletedEvent{
			RunID: run.ID, WorkflowID: run.WorkflowID, Result: events.RunResult{Status: string(r.End)},
		}))
	}
	if err := tx.UpdateRun(ctx, run); err != nil {
		return err
	}
	return e.Emit(ctx, tx, evs, nil)
}

// Resumed tells this process a run was resumed (or its pause closed) by a committed
// transaction: its waiters wake, and so do the workers.
func (e *Core) Resumed(orgID, runID string) {
	e.RunChanged(orgID, runID)
	e.Notify()
}

// HoldTx pauses (paused true) or releases a run whose step of a KeepRunning pause kind
// waits, in tx: a run whose agent asks a person is paused until the person answers.
func (e *Core) HoldTx(ctx context.Context, tx storage.Tx, run *svctype.Run, paused bool) error {
	if run.Status != svctype.RunPaused && run.Status != svctype.RunRunning {
		return fmt.Errorf("%w: run %s is %s", ErrConflict, run.ID, run.Status)
	}
	run.Status, run.UpdatedAt = svctype.RunRunning, e.now().UTC()
	if paused {
		run.Status = svctype.RunPaused
	}
	return tx.UpdateRun(ctx, run)
}

// isPause reports whether err is a step's pause, and whether it keeps the run running.
func isPause(err error) (paused, keepRunning bool) {
	var p pauseSignal
	if errors.As(err, &p) {
		return true, p.keepRunning
	}
	return false, false
}

// MustJSON encodes v, which the caller knows encodes.
func MustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
