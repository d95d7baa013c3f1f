package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// StartAt is a run to start at a cursor with the work another run committed: the seam a
// retry from the failed step goes through. The new run takes From's workflow version,
// definition snapshot and input (never the workflow's current version), begins at Cursor,
// and finds in its context, its step records and its foreach checkpoint what From
// committed before Cursor, so the steps before it do not run again.
type StartAt struct {
	// From is the run the new one continues.
	From *svctype.Run
	// Cursor is where the new run begins: a top-level step, and inside a foreach the
	// element (elements before Cursor.Loop.Next are in LoopItems).
	Cursor svctype.Cursor
	// Context holds the values the new run begins with, by key; its input is From's.
	Context map[string]json.RawMessage
	// Steps are the step records it begins with.
	Steps []svctype.StepRecord
	// LoopItems are the committed elements of the foreach at Cursor.Step, from element 0.
	LoopItems []json.RawMessage
	// Retry, when set, records the new run as the retry of From (RunID is set here): a run
	// retried already makes StartAtTx ErrConflict.
	Retry *svctype.RunRetry
	// Events, when set, makes events emitted after workflow_run_started, for the new run.
	Events func(run *svctype.Run) []svctype.Event
}

// Committed reads what run committed before its cursor, as a StartAt at that cursor: its
// context (the input aside), the records of its steps before the cursor, and for a foreach
// in progress at the cursor, its committed elements (the cursor keeps its element) and its
// record, which is processing again. A loop of another mode (an agent's) starts again at
// its beginning: its work was the failed step's. The records keep what each step did but
// not its effects, which are the run's that made them; each says it was reused.
func (e *Core) Committed(ctx context.Context, tx storage.Tx, run *svctype.Run) (*StartAt, error) {
	at, err := e.RestartCursor(run)
	if err != nil {
		return nil, err
	}
	foreach := at.Loop != nil
	raw, err := tx.GetContext(ctx, run.OrgID, run.ID)
	if err != nil {
		return nil, err
	}
	delete(raw, "input")
	recs, err := tx.ListSteps(ctx, run.OrgID, run.ID)
	if err != nil {
		return nil, err
	}
	s := &StartAt{From: run, Cursor: at, Context: raw}
	reused := svctype.Decision{Kind: "reused", Result: run.ID, Reason: "committed by run " + run.ID + "; not run again"}
	for _, r := range recs {
		switch {
		case r.Index < at.Step:
			r.Effects = nil
			r.Decisions = append(r.Decisions, reused)
		case r.Index == at.Step && foreach:
			r.Status, r.Error, r.Effects, r.FinishedAt = svctype.StepProcessing, "", nil, nil
		default:
			continue
		}
		s.Steps = append(s.Steps, r)
	}
	if foreach {
		lc := at.Loop
		items, err := tx.ListLoopItems(ctx, run.OrgID, run.ID, at.Step)
		if err != nil {
			return nil, err
		}
		s.LoopItems = items[:min(len(items), lc.Next)]
	}
	return s, nil
}

// RestartCursor is where a run started from run's cursor begins (Committed): the same top-level
// step, and in a foreach the same element; a loop of another mode starts over.
func (e *Core) RestartCursor(run *svctype.Run) (svctype.Cursor, error) {
	def, err := e.definition(run)
	if err != nil {
		return svctype.Cursor{}, err
	}
	at := svctype.Cursor{Step: run.Cursor.Step}
	if at.Step < 0 || at.Step >= len(def.Actions) {
		return at, fmt.Errorf("%w: run %s has no step %d to start at", ErrConflict, run.ID, at.Step)
	}
	step := &def.Actions[at.Step]
	if mode, _ := step.Properties["mode"].(string); step.Type == LoopStep && mode == loopForeach && run.Cursor.Loop != nil {
		lc := *run.Cursor.Loop
		at.Loop = &lc
	}
	return at, nil
}

// StartAtTx starts the run s describes in tx and returns it with its job. After the
// commit, call Notify: the worker reads the run's seeded context when it claims it.
func (e *Core) StartAtTx(ctx context.Context, tx storage.Tx, s *StartAt) (*svctype.Run, *svctype.Job, error) {
	from := s.From
	now := e.now().UTC()
	run := &svctype.Run{
		ID: "run-" + uuid.NewString(), OrgID: from.OrgID, WorkflowID: from.WorkflowID, WorkflowVersion: from.WorkflowVersion,
		Status: svctype.RunRunning, Input: from.Input, Definition: from.Definition, Cursor: s.Cursor,
		CreatedAt: now, UpdatedAt: now,
	}
	input, err := tx.GetContext(ctx, from.OrgID, from.ID, "input")
	if err != nil {
		return nil, nil, err
	}
	full, ok := input["input"]
	if !ok {
		full = from.Input
	}
	// A large input is stored once, as the context key input, and referred to (startRunTx).
	if len(full) > LargeValueBytes {
		run.Input, _ = json.Marshal(largeRef(run.ID, "input", storage.ContextRef{Size: int64(len(full))}))
	}
	job := &svctype.Job{OrgID: run.OrgID, Kind: svctype.JobRunStep, RunAt: now, RunID: run.ID}
	evs := []svctype.Event{e.Event(run, EventRunStarted, map[string]any{
		"run_id": run.ID, "workflow_id": run.WorkflowID, "input_payload": json.RawMessage(run.Input),
	})}
	if s.Events != nil {
		evs = append(evs, s.Events(run)...)
	}
	if err := storage.StartRun(ctx, tx, &storage.RunStart{Run: run, Input: full, Job: job, Events: evs}); err != nil {
		return nil, nil, err
	}
	if err := e.putSearchKeys(ctx, tx, run); err != nil {
		return nil, nil, err
	}
	for k, v := range s.Context {
		if err := tx.PutContext(ctx, run.OrgID, run.ID, k, v); err != nil {
			return nil, nil, err
		}
	}
	for i := range s.Steps {
		r := s.Steps[i]
		r.RunID = run.ID
		if err := tx.PutStep(ctx, run.OrgID, &r); err != nil {
			return nil, nil, err
		}
	}
	for first := 0; first < len(s.LoopItems); first += ForeachBatch {
		batch := s.LoopItems[first:min(first+ForeachBatch, len(s.LoopItems))]
		if err := tx.PutLoopItems(ctx, run.OrgID, run.ID, s.Cursor.Step, first, batch); err != nil {
			return nil, nil, err
		}
	}
	if s.Retry != nil {
		s.Retry.OrgID, s.Retry.RunID, s.Retry.RetryOf, s.Retry.CreatedAt = run.OrgID, run.ID, from.ID, now
		if err := tx.PutRunRetry(ctx, s.Retry); err != nil {
			return nil, nil, err
		}
	}
	if err := e.sink(ctx, tx, evs, nil); err != nil {
		return nil, nil, err
	}
	e.meter.Record(MetricRunsStarted, 1)
	return run, job, nil
}
