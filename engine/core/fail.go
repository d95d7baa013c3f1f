package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// stepFailure is a step's own error: the run fails with it, the step's work is rolled back.
type stepFailure struct{ err error }

func (f *stepFailure) Error() string { return f.err.Error() }
func (f *stepFailure) Unwrap() error { return f.err }

// failRun ends the run as failed in a transaction of its own; the failing step's work was
// rolled back, earlier steps' committed effects stay. began, when not nil, is the record the
// failing step had in memory: its start and resolved input are kept in the failed record
// (the console shows how long it ran and what it was given).
func (e *Core) failRun(ctx context.Context, job *svctype.Job, st *runState, i int, step *svctype.Step, cause error, began *svctype.StepRecord) error {
	reason := fmt.Sprintf("step %d (%s): %s", i, step.Type, cause.Error())
	calls := st.calls
	st.calls = nil
	return e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.RenewJob(ctx, job, e.lease); err != nil {
			return err
		}
		now := e.now().UTC()
		rec := svctype.StepRecord{RunID: st.run.ID, Index: i, Type: step.Type, Status: svctype.StepFailed, Error: cause.Error(), FinishedAt: &now}
		if began != nil && began.Index == i {
			rec.StartedAt, rec.InputSummary = began.StartedAt, began.InputSummary
		}
		if step.Type == LoopStep && st.run.Cursor.Loop != nil {
			// The elements committed before the failure made their effects (their rows are
			// in the tables): the failed step's record keeps them, as endLoop would have.
			items, err := tx.ListLoopItems(ctx, st.run.OrgID, st.run.ID, i)
			if err != nil {
				return err
			}
			for _, r := range items {
				var it loopItem
				if err := json.Unmarshal(r, &it); err != nil {
					return fmt.Errorf("loop item: %w", err)
				}
				rec.Effects = append(rec.Effects, it.Effects...)
			}
		}
		for _, key := range slices.Sorted(maps.Keys(calls)) {
			rec.Effects = append(rec.Effects, calls[key].effect())
		}
		if err := tx.PutStep(ctx, st.run.OrgID, &rec); err != nil {
			return err
		}
		if len(calls) > 0 {
			if err := tx.CloseCalls(ctx, st.run.OrgID, st.run.ID); err != nil {
				return err
			}
		}
		e.finish(st.run, svctype.RunFailed, reason)
		if err := tx.UpdateRun(ctx, st.run); err != nil {
			return err
		}
		evs := []svctype.Event{}
		var withEvent *svctype.StepFailedError
		if errors.As(cause, &withEvent) && withEvent.Event != "" {
			payload := maps.Clone(withEvent.Payload)
			if payload == nil {
				payload = map[string]any{}
			}
			fillStepFields(withEvent.Event, payload, map[string]any{"run_id": st.run.ID, "step_index": i, "error": cause.Error()})
			evs = append(evs, e.Event(st.run, withEvent.Event, payload))
		}
		if step.Type == LoopStep {
			mode, _ := step.Properties["mode"].(string)
			evs = append(evs, e.Event(st.run, EventLoopFailed, events.LoopFailedEvent{
				RunID: st.run.ID, StepID: strconv.Itoa(i), StepIndex: i, Mode: mode, Error: cause.Error(),
			}))
		}
		evs = append(evs,
			e.Event(st.run, EventStepFailed, events.StepFailedEvent{
				RunID: st.run.ID, StepIndex: i, Error: events.StepError{Message: cause.Error()},
			}),
			e.Event(st.run, EventRunFailed, events.WorkflowRunFailedEvent{
				RunID: st.run.ID, WorkflowID: st.run.WorkflowID, Reason: reason, Context: e.outputs(st, &commit{}),
			}))
		if err := e.Emit(ctx, tx, evs, nil); err != nil {
			return err
		}
		return tx.CompleteJob(ctx, job)
	})
}
