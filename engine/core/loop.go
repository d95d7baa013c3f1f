package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// loopItem is what a committed foreach element leaves behind: its last step's output and
// the effects its steps made.
type loopItem struct {
	Output  any              `json:"output"`
	Effects []svctype.Effect `json:"effects,omitempty"`
}

func loopResultKey(step *svctype.Step) string {
	if k, _ := step.Properties["result_key"].(string); k != "" {
		return k
	}
	return step.OutputKey
}

// loopPlan is a foreach resolved against the run's context.
type loopPlan struct {
	items []any
	steps []svctype.Step
}

// planLoop resolves a foreach's items (the items property, or what it was pinned to when
// the loop started) and its steps.
func (e *Core) planLoop(ctx context.Context, st *runState, step *svctype.Step, itemsProp any, vars expr.Vars) (*loopPlan, error) {
	if mode, _ := step.Properties["mode"].(string); mode != loopForeach {
		return nil, fmt.Errorf("loop mode %q is not available in this build (foreach is)", mode)
	}
	resolved, err := e.eval.Resolve(svctype.WithOrg(ctx, st.run.OrgID), itemsProp, vars)
	if err != nil {
		return nil, fmt.Errorf("loop items: %w", err)
	}
	items, ok := resolved.([]any)
	if !ok {
		return nil, fmt.Errorf("loop items %v did not resolve to an array (got %s)", step.Properties["items"], TypeName(resolved))
	}
	max := DefaultMaxIterations
	if m, ok := svctype.Float(step.Properties["max_iterations"]); ok && m >= 1 {
		// A definition stored before MaxIterations existed may say more.
		max = int(min(m, MaxIterations))
	}
	if len(items) > max {
		return nil, fmt.Errorf("loop items has %d elements; max_iterations is %d", len(items), max)
	}
	subs, err := st.ent.loopSteps(step)
	if err != nil {
		return nil, err
	}
	return &loopPlan{items: items, steps: subs}, nil
}

// loopSteps decodes a loop's nested steps once per cached definition, so their compiled
// conditions are cached too.
func (ent *defEntry) loopSteps(step *svctype.Step) ([]svctype.Step, error) {
	if v, ok := ent.conds.Load(&step.Properties); ok {
		return v.([]svctype.Step), nil
	}
	subs, err := loopSteps(step.Properties)
	if err != nil {
		return nil, err
	}
	v, _ := ent.conds.LoadOrStore(&step.Properties, subs)
	return v.([]svctype.Step), nil
}

// TypeName names the JSON type of v for messages (object, string, number, ...).
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case string:
		return "string"
	case float64, int, json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// runElement runs a foreach element's steps in tx with @item and @index set; each step's
// outputKey is visible to the element's later steps only. It returns the last output.
func (e *Core) runElement(ctx context.Context, tx storage.Tx, st *runState, plan *loopPlan, index, k int, vars expr.Vars, c *commit) (any, error) {
	ev := make(expr.Vars, len(vars)+2)
	maps.Copy(ev, vars)
	ev["item"], ev["index"] = plan.items[k], k
	outer := c.position(index)
	defer func() { c.at = outer }()
	var last any
	for j := range plan.steps {
		c.at = outer + "/" + strconv.Itoa(k) + "/" + strconv.Itoa(j)
		out, key, status, err := e.execStep(ctx, tx, st, &plan.steps[j], index, ev, c)
		if err != nil {
			return nil, fmt.Errorf("element %d, step %d (%s): %w", k, j, plan.steps[j].Type, err)
		}
		if status == svctype.StepCompleted {
			last = out
			applyOutput(func(k string, v any) {
				if k != "" {
					ev[k] = v
				}
			}, key, out)
		}
	}
	return last, nil
}

// inlineLoop runs a loop nested in a foreach element, whole, in the element's transaction.
func (e *Core) inlineLoop(ctx context.Context, tx storage.Tx, st *runState, step *svctype.Step, index int, vars expr.Vars, c *commit) (any, error) {
	plan, err := e.planLoop(ctx, st, step, step.Properties["items"], vars)
	if err != nil {
		return nil, err
	}
	results := make([]any, len(plan.items))
	for k := range plan.items {
		if results[k], err = e.runElement(ctx, tx, st, plan, index, k, vars, c); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// A foreach whose elements' steps all run inside the transaction (no outside call, no
// nested loop) commits up to ForeachBatch elements in one transaction, for at most
// ForeachBatchTime (and never longer than the run's slice): one commit instead of one per
// element, so 50,000 table writes take seconds, not a minute. A crash rolls back the batch
// being written, which runs again whole: no element is lost or written twice. Elements
// that make outside calls commit one at a time, so a call's result is never held back
// behind others' (and a batch never re-runs for each of its calls).
const (
	ForeachBatch     = 500
	ForeachBatchTime = 50 * time.Millisecond
)

// shorterBatch rolls a batch back to run it again with its first n elements only: the
// element after them failed.
type shorterBatch struct{ n int }

func (s *shorterBatch) Error() string {
	return fmt.Sprintf("foreach: the batch ends after %d elements", s.n)
}

// batchable reports whether a foreach's elements may commit in batches: every one of its
// steps is a kind that runs wholly inside the transaction.
func (e *Core) batchable(ctx context.Context, st *runState, plan *loopPlan) bool {
	for _, s := range plan.steps {
		if s.Type == LoopStep || s.OnFalse != nil && s.OnFalse.Type == LoopStep {
			return false
		}
		for _, t := range []*svctype.Step{&s, s.OnFalse} {
			if t == nil {
				continue
			}
			if _, pauses := e.pauseKind(t.Type); pauses {
				return false
			}
			kind, ok, err := e.lookupKind(ctx, nil, st.run.OrgID, t.Type)
			if err != nil || !ok || kind.IO != nil || kind.Run == nil {
				return false
			}
		}
	}
	return true
}

// loopOnce commits the next part of a top-level foreach: its start, a batch of elements
// (one, when they make outside calls), or its end. Elements before the cursor are
// committed, so a crash re-runs at most one batch.
func (e *Core) loopOnce(ctx context.Context, job *svctype.Job, st *runState, i int, step *svctype.Step) error {
	vars := e.scope(st, i)
	mode, _ := step.Properties["mode"].(string)
	stepID := strconv.Itoa(i)
	rec := svctype.StepRecord{RunID: st.run.ID, Index: i, Type: step.Type, Status: svctype.StepProcessing}
	// A loop reads one version of what it loops over: its items are pinned when it starts
	// (a doc: reference to the version it read) and every later slice reads the pin.
	items, pinned := step.Properties["items"], ""
	var planErr error
	if lc := st.run.Cursor.Loop; lc != nil && lc.Items != "" {
		items = lc.Items
	} else if lc == nil {
		// A reference that cannot be pinned is read as written: reading it says what is
		// wrong with it, naming it.
		if p, err := e.eval.Pin(svctype.WithOrg(ctx, st.run.OrgID), items); err == nil {
			if s, ok := p.(string); ok && p != items {
				items, pinned = s, s
			}
		}
	}
	var plan *loopPlan
	if planErr == nil {
		plan, planErr = e.planLoop(ctx, st, step, items, vars)
	}

	if st.run.Cursor.Loop == nil {
		c := &commit{}
		err := e.unit(ctx, job, st, func(ctx context.Context, tx storage.Tx) error {
			*c = commit{rec: rec}
			if err := e.keepLease(ctx, tx, job); err != nil {
				return err
			}
			if i == 0 && st.ent.def.Condition != nil {
				if ok, err := e.gate(ctx, tx, job, st, c); err != nil || !ok {
					return err
				}
			}
			if step.Filter != nil {
				cond, err := st.ent.condition(step, step.Filter.Condition)
				if err != nil {
					return &stepFailure{fmt.Errorf("filter.condition: %w", err)}
				}
				ok, err := cond.Eval(ctx, vars)
				if err != nil {
					return &stepFailure{fmt.Errorf("filter.condition: %w", err)}
				}
				c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "filter", Result: ok})
				if !ok {
					return e.skipLoop(ctx, tx, job, st, step, i, vars, c)
				}
			}
			if planErr != nil {
				return &stepFailure{planErr}
			}
			now := e.now().UTC()
			c.rec.StartedAt = &now
			c.rec.InputSummary = loopSummary(len(plan.items), mode, pinned)
			if err := tx.PutStep(ctx, st.run.OrgID, &c.rec); err != nil {
				return err
			}
			st.run.Cursor.Loop = &svctype.LoopCursor{Next: 0, Total: len(plan.items), Items: pinned}
			st.run.UpdatedAt = now
			if err := tx.UpdateRun(ctx, st.run); err != nil {
				return err
			}
			return e.Emit(ctx, tx, []svctype.Event{
				e.Event(st.run, EventStepStarted, events.StepStartedEvent{RunID: st.run.ID, StepIndex: i, StepType: step.Type}),
				e.Event(st.run, EventLoopStarted, events.LoopStartedEvent{
					RunID: st.run.ID, StepID: stepID, StepIndex: i, Mode: mode, TotalItems: len(plan.items),
				}),
			}, nil)
		})
		if err != nil {
			st.run.Cursor.Loop = nil
		}
		return e.afterCommit(ctx, job, st, c, i, step, err)
	}
	if planErr != nil {
		return e.failRun(ctx, job, st, i, step, planErr, nil)
	}
	lc := st.run.Cursor.Loop
	if lc.Next < len(plan.items) {
		first := lc.Next
		batch := 1
		if e.batchable(ctx, st, plan) {
			batch = ForeachBatch
		}
		budget := min(e.slice, ForeachBatchTime)
		c := &commit{}
		// A batch whose element k fails commits the elements before k (the unit runs again,
		// ending before k) and k fails in a unit of its own, as it would unbatched and as a
		// chain does: the outcome never depends on batching.
		var err error
		for {
			err = e.unit(ctx, job, st, func(ctx context.Context, tx storage.Tx) error {
				*c = commit{rec: rec, inner: true}
				if err := e.keepLease(ctx, tx, job); err != nil {
					return err
				}
				began := time.Now()
				k := first
				var outputs []json.RawMessage
				for ; k < len(plan.items) && k-first < batch; k++ {
					if k > first && time.Since(began) >= budget {
						break
					}
					mark := len(c.rec.Effects)
					out, err := e.runElement(ctx, tx, st, plan, i, k, vars, c)
					if err != nil {
						if k > first {
							return &shorterBatch{n: k - first}
						}
						return &stepFailure{err}
					}
					item, err := json.Marshal(loopItem{Output: out, Effects: c.rec.Effects[mark:]})
					if err != nil {
						return &stepFailure{fmt.Errorf("element %d output is not JSON: %w", k, err)}
					}
					outputs = append(outputs, item)
				}
				if err := tx.PutLoopItems(ctx, st.run.OrgID, st.run.ID, i, first, outputs); err != nil {
					return err
				}
				st.run.Cursor.Loop = &svctype.LoopCursor{Next: k, Total: len(plan.items), Items: lc.Items}
				st.run.UpdatedAt = e.now().UTC()
				if err := tx.UpdateRun(ctx, st.run); err != nil {
					return err
				}
				if len(c.events) == 0 {
					return nil
				}
				return e.Emit(ctx, tx, c.events, nil)
			})
			var sb *shorterBatch
			if !errors.As(err, &sb) {
				break
			}
			st.run.Cursor.Loop, batch = lc, sb.n
		}
		if err != nil {
			st.run.Cursor.Loop = lc
		}
		return e.afterCommit(ctx, job, st, &commit{}, i, step, err)
	}
	// The step's record is written again as it ends: with what it read, as when it began.
	rec.InputSummary = loopSummary(len(plan.items), mode, lc.Items)
	return e.endLoop(ctx, job, st, i, step, rec)
}

// loopSummary is a foreach's input summary: its element count and mode, and the items
// reference it pinned (the document version it read), if any.
func loopSummary(items int, mode, pinned string) json.RawMessage {
	summary := map[string]any{"items": items, "mode": mode}
	if pinned != "" {
		summary["items_read"] = pinned
	}
	return summarize(summary)
}

// endLoop gathers the committed elements into result_key and completes the step.
func (e *Core) endLoop(ctx context.Context, job *svctype.Job, st *runState, i int, step *svctype.Step, rec svctype.StepRecord) error {
	c := &commit{rec: rec}
	snapshot := *st.run
	err := e.unit(ctx, job, st, func(ctx context.Context, tx storage.Tx) error {
		*c = commit{rec: rec} // from scratch on each try (unit tries again after an abort)
		if err := e.keepLease(ctx, tx, job); err != nil {
			return err
		}
		raw, err := tx.ListLoopItems(ctx, st.run.OrgID, st.run.ID, i)
		if err != nil {
			return err
		}
		results := make([]any, 0, len(raw))
		for _, r := range raw {
			var it loopItem
			if err := jsonnum.Unmarshal(r, &it); err != nil {
				return fmt.Errorf("loop item: %w", err)
			}
			results = append(results, it.Output)
			c.rec.Effects = append(c.rec.Effects, it.Effects...)
		}
		c.rec.Status = svctype.StepCompleted
		c.rec.Output = summarize(results)
		c.setOutput(loopResultKey(step), results)
		c.setOutput(step.OutputKey, results)
		c.events = append(c.events, e.Event(st.run, EventStepDone, events.StepCompletedEvent{RunID: st.run.ID, StepIndex: i}))
		return e.writeCommit(ctx, tx, job, st, c, i+1)
	})
	if err != nil {
		*st.run = snapshot
	}
	return e.afterCommit(ctx, job, st, c, i, step, err)
}

// skipLoop finishes a top-level loop whose filter is false: skipped, or its onFalse step.
func (e *Core) skipLoop(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, step *svctype.Step, i int, vars expr.Vars, c *commit) error {
	c.rec.Status = svctype.StepSkipped
	if step.OnFalse != nil {
		c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "on_false", Result: step.OnFalse.Type})
		out, key, status, err := e.execStep(ctx, tx, st, step.OnFalse, i, vars, c)
		if err != nil {
			return &stepFailure{err}
		}
		c.complete(status, key, out)
	}
	return e.writeCommit(ctx, tx, job, st, c, i+1)
}
