// Package runops is what an operator does to runs after the fact: retry a failed run from
// the step that failed (a new run that reuses what the failed one committed before that
// step), say beforehand what a retry will run again and reach outside (its plan), and
// cancel or retry every run a filter matches, in batches by a worker (run operations).
// The run itself starts through the run core's seam (core.Committed, core.StartAtTx); this
// package decides which runs may be retried and keeps the operations.
package runops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// EventRunRetried is emitted, on the new run, when a failed run is retried.
const EventRunRetried = "workflow_run_retried"

// MaxReason is the longest reason a retry or an operation keeps, in characters.
const MaxReason = 2000

// RunOps is the feature: retries, their plans, and run operations over the feature's Store.
type RunOps struct {
	core  *core.Core
	store Store
}

// New returns the feature over st; Register plugs it into c.
func New(c *core.Core, st Store) *RunOps { return &RunOps{core: c, store: st} }

// Register puts on the run core the job that works through a run operation.
func (f *RunOps) Register(c *core.Core) {
	c.RegisterJob(JobRunOperation, f.operationJob)
}

// RetryPlan is what a retry of a failed run will do: the step it starts at (and the
// element, in a foreach), the steps before it that it reuses, every step it runs again
// with the outside calls each makes, and the webhooks the new run's events are delivered to.
type RetryPlan struct {
	RunID           string                `json:"run_id"`
	WorkflowID      string                `json:"workflow_id"`
	WorkflowVersion int                   `json:"workflow_version"`
	FromStep        int                   `json:"from_step"`
	FromElement     *int                  `json:"from_element,omitempty"`
	Reused          []int                 `json:"reused_steps"`
	Steps           []svctype.PlannedStep `json:"steps"`
	// Webhooks are the deliveries the new run's own events will cause (kind webhook): the
	// organization's catch-all, and each registration of workflow_run_started,
	// workflow_run_retried, workflow_run_completed or workflow_run_failed.
	Webhooks []svctype.PlannedCall `json:"webhooks"`
	// Calls counts the outside calls of Steps by kind (http, model, ...), a foreach's
	// steps once whatever its elements, and Webhooks under webhook.
	Calls map[string]int `json:"calls"`
}

// RetryEvents are the events a retried run emits whatever its steps do: the plan lists the
// webhooks they are delivered to (it ends completed or failed, so both are counted).
var RetryEvents = []string{core.EventRunStarted, EventRunRetried, core.EventRunCompleted, core.EventRunFailed}

// RetryRun starts a failed run again at the step that failed, as a new run (its evidence's
// retry names the failed run, the step, the reason and the actor; the failed run's names
// the new run as retried_by): same workflow version, input, and what the steps before the
// failed one committed, which do not run again. A run that did not fail, or was retried
// already, is ErrConflict; another organization's is ErrNotFound.
func (f *RunOps) RetryRun(ctx context.Context, orgID, runID, reason string, actor core.Actor) (*svctype.Run, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if err := checkReason(reason); err != nil {
		return nil, err
	}
	if actor.Type == "" {
		actor.Type = "api"
	}
	var run *svctype.Run
	err := f.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		var err error
		run, err = f.retryTx(ctx, stx, orgID, runID, reason, actor)
		return err
	})
	if err != nil {
		return nil, err
	}
	f.core.Notify()
	return run, nil
}

// runReader reads a run and its retries: the store, or a transaction.
type runReader interface {
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	RunRetries(ctx context.Context, orgID, runID string) (of, by *svctype.RunRetry, err error)
}

func checkReason(reason string) error {
	if reason == "" {
		return core.Invalid("/reason", "is required: say why")
	}
	if utf8.RuneCountInString(reason) > MaxReason {
		return core.Invalid("/reason", "at most %d characters", MaxReason)
	}
	return nil
}

// retryable returns the failed run runID, ErrConflict when it cannot be retried.
func retryable(ctx context.Context, tx runReader, orgID, runID string) (*svctype.Run, error) {
	run, err := tx.GetRun(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	if run.Status != svctype.RunFailed {
		return nil, fmt.Errorf("%w: run %s is %s; only a failed run is retried", core.ErrConflict, run.ID, run.Status)
	}
	_, by, err := tx.RunRetries(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	if by != nil {
		return nil, fmt.Errorf("%w: run %s was retried already, by run %s", core.ErrConflict, run.ID, by.RunID)
	}
	return run, nil
}

func (f *RunOps) retryTx(ctx context.Context, stx storage.Tx, orgID, runID, reason string, actor core.Actor) (*svctype.Run, error) {
	run, err := retryable(ctx, Tx(stx), orgID, runID)
	if err != nil {
		return nil, err
	}
	at, err := f.core.Committed(ctx, stx, run)
	if err != nil {
		return nil, err
	}
	at.Retry = &svctype.RunRetry{FromStep: at.Cursor.Step, Reason: reason, Actor: actor}
	at.Events = func(next *svctype.Run) []svctype.Event {
		return []svctype.Event{f.core.Event(next, EventRunRetried, events.WorkflowRunRetriedEvent{
			RunID: next.ID, RetryOf: run.ID, FromStep: at.Cursor.Step, Reason: reason,
			Actor: events.RunActor{Type: actor.Type, ID: actor.ID},
		})}
	}
	next, _, err := f.core.StartAtTx(ctx, stx, at)
	if errors.Is(err, core.ErrConflict) {
		// Two retries of one run raced: the other committed first.
		return nil, fmt.Errorf("%w: run %s was retried already", core.ErrConflict, run.ID)
	}
	return next, err
}

// RetryPlan says what RetryRun would do to runID now, without doing it: ErrConflict (and
// ErrNotFound) as RetryRun.
func (f *RunOps) RetryPlan(ctx context.Context, orgID, runID string) (*RetryPlan, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	run, err := retryable(ctx, f.store, orgID, runID)
	if err != nil {
		return nil, err
	}
	at, err := f.core.RestartCursor(run)
	if err != nil {
		return nil, err
	}
	plan := &RetryPlan{RunID: run.ID, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion,
		FromStep: at.Step, Reused: []int{}, Calls: map[string]int{}}
	if at.Loop != nil {
		n := at.Loop.Next
		plan.FromElement = &n
	}
	for i := range at.Step {
		plan.Reused = append(plan.Reused, i)
	}
	if plan.Steps, err = f.core.PlanSteps(ctx, run, at); err != nil {
		return nil, err
	}
	for _, s := range plan.Steps {
		for _, c := range s.Calls {
			plan.Calls[c.Kind]++
		}
	}
	if plan.Webhooks, err = f.core.PlanDeliveries(ctx, orgID, RetryEvents); err != nil {
		return nil, err
	}
	for _, c := range plan.Webhooks {
		plan.Calls[c.Kind]++
	}
	return plan, nil
}
