package runops

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// JobRunOperation works through a run operation, one batch a claim
// (payload OperationPayload).
const JobRunOperation = "runops.operation"

// OperationBatch is how many runs one claim of an operation's job acts on before it saves
// its progress and hands the job back to the queue, so other work takes its turn.
const OperationBatch = 100

// countPage is how many runs a count reads at a time.
const countPage = 500

// OperationPayload is the payload of a JobRunOperation job.
type OperationPayload struct {
	OperationID string `json:"operation_id"`
}

// OperationInput asks for a run operation: the action, the runs (the runs listing's
// filter: every field it has), why, and with DryRun only how many runs it would touch.
type OperationInput struct {
	Action svctype.RunOperationAction
	Filter storage.RunFilter
	Reason string
	DryRun bool
}

// CreateRunOperation starts a run operation: it matches the runs of in.Filter that exist now
// (runs started later are not touched) and is worked through by a worker, in batches;
// GetRunOperation follows it. With in.DryRun it only counts them: the answer has no id and
// Matched set, and nothing is kept.
func (f *RunOps) CreateRunOperation(ctx context.Context, orgID string, in OperationInput, actor core.Actor) (*svctype.RunOperation, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if in.Action != svctype.RunOperationCancel && in.Action != svctype.RunOperationRetry {
		return nil, core.Invalid("/action", "must be cancel or retry")
	}
	if err := core.CheckRunFilter(in.Filter); err != nil {
		return nil, err
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if err := checkReason(in.Reason); err != nil {
		return nil, err
	}
	if actor.Type == "" {
		actor.Type = "api"
	}
	in.Filter.ListOptions = svctype.ListOptions{}
	filter, err := json.Marshal(in.Filter)
	if err != nil {
		return nil, err
	}
	now := f.core.Now().UTC()
	op := &svctype.RunOperation{
		OrgID: orgID, Action: in.Action, Filter: filter, Reason: in.Reason, Actor: actor,
		Status: svctype.RunOperationPending, Errors: []svctype.RunOperationError{}, CreatedAt: now, UpdatedAt: now,
	}
	if in.DryRun {
		if op.Matched, err = f.count(ctx, op); err != nil {
			return nil, err
		}
		return op, nil
	}
	op.ID = "rop-" + uuid.NewString()
	payload, err := json.Marshal(OperationPayload{OperationID: op.ID})
	if err != nil {
		return nil, err
	}
	err = f.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.CreateRunOperation(ctx, op); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, &svctype.Job{OrgID: orgID, Kind: JobRunOperation, RunAt: now, Payload: payload})
	})
	if err != nil {
		return nil, err
	}
	f.core.Notify()
	return op, nil
}

// GetRunOperation returns a run operation as it stands.
func (f *RunOps) GetRunOperation(ctx context.Context, orgID, id string) (*svctype.RunOperation, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return f.store.GetRunOperation(ctx, orgID, id)
}

// ListRunOperations pages the organization's run operations, newest first.
func (f *RunOps) ListRunOperations(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.RunOperation], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.RunOperation]{}, err
	}
	return f.store.ListRunOperations(ctx, orgID, opts)
}

// OperationFilter decodes the filter an operation keeps.
func OperationFilter(op *svctype.RunOperation) (storage.RunFilter, error) {
	var rf storage.RunFilter
	err := json.Unmarshal(op.Filter, &rf)
	return rf, err
}

// page reads the next runs an operation matches after cursor: those of its filter that
// existed when it was created.
func (f *RunOps) page(ctx context.Context, op *svctype.RunOperation, cursor string, limit int) ([]svctype.Run, string, error) {
	rf, err := OperationFilter(op)
	if err != nil {
		return nil, "", err
	}
	rf.ListOptions = svctype.ListOptions{Limit: limit, Cursor: cursor}
	page, err := f.store.ListRuns(ctx, op.OrgID, rf)
	if err != nil {
		return nil, "", err
	}
	runs := page.Items[:0]
	for _, r := range page.Items {
		if !r.CreatedAt.After(op.CreatedAt) {
			runs = append(runs, r)
		}
	}
	return runs, page.NextCursor, nil
}

// count counts the runs an operation matches.
func (f *RunOps) count(ctx context.Context, op *svctype.RunOperation) (int, error) {
	n, cursor := 0, ""
	for {
		runs, next, err := f.page(ctx, op, cursor, countPage)
		if err != nil {
			return 0, err
		}
		n += len(runs)
		if next == "" {
			return n, nil
		}
		cursor = next
	}
}

// operationJob works through one batch of a run operation (JobRunOperation): it counts
// the runs first, then acts on the next OperationBatch runs, then saves where it stands
// and either hands the job back to the queue or, with no run left, completes the
// operation and its job. A worker that dies within a batch leaves the operation where the
// last batch saved it: the batch runs again, and each run it acted on already (cancelled,
// retried) is skipped, never acted on twice.
func (f *RunOps) operationJob(ctx context.Context, job *svctype.Job) error {
	var p OperationPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		f.core.Logger().Error("dropping a run operation job whose payload does not decode", "job_id", job.ID, "err", err)
		return f.finishJob(ctx, job, nil)
	}
	op, err := f.store.GetRunOperation(ctx, job.OrgID, p.OperationID)
	if errors.Is(err, core.ErrNotFound) {
		return f.finishJob(ctx, job, nil)
	}
	if err != nil {
		return err
	}
	if op.Status == svctype.RunOperationCompleted {
		return f.finishJob(ctx, job, nil)
	}
	if op.Status == svctype.RunOperationPending {
		// The count is kept before any run is acted on: a batch acted on and then lost
		// cannot change it.
		if op.Matched, err = f.count(ctx, op); err != nil {
			return err
		}
		op.Status, op.UpdatedAt = svctype.RunOperationRunning, f.core.Now().UTC()
		err := f.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
			tx := Tx(stx)
			if err := tx.RenewJob(ctx, job, f.core.Lease()); err != nil {
				return err
			}
			return tx.SaveRunOperation(ctx, op)
		})
		if err != nil {
			return err
		}
	}
	runs, next, err := f.page(ctx, op, op.Cursor, OperationBatch)
	if err != nil {
		return err
	}
	for i := range runs {
		f.act(ctx, op, &runs[i])
	}
	op.Cursor = next
	now := f.core.Now().UTC()
	op.UpdatedAt = now
	if next == "" {
		// Runs that left the filter between the count and the batch that would have
		// reached them (a running run that ended on its own) needed nothing either.
		op.Skipped = max(op.Skipped, op.Matched-op.Done-op.Failed)
		op.Status, op.FinishedAt = svctype.RunOperationCompleted, &now
		return f.finishJob(ctx, job, op)
	}
	return f.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.SaveRunOperation(ctx, op); err != nil {
			return err
		}
		job.RunAt = time.Time{}
		return tx.RenewJob(ctx, job, 0)
	})
}

// act does op's action to run and counts the outcome: done, skipped (nothing to do: a run
// that already ended, or was retried) or failed.
func (f *RunOps) act(ctx context.Context, op *svctype.RunOperation, run *svctype.Run) {
	var err error
	switch op.Action {
	case svctype.RunOperationCancel:
		_, err = f.core.CancelRun(ctx, op.OrgID, run.ID, op.Reason, op.Actor)
	case svctype.RunOperationRetry:
		_, err = f.RetryRun(ctx, op.OrgID, run.ID, op.Reason, op.Actor)
	}
	switch {
	case err == nil:
		op.Done++
	case errors.Is(err, core.ErrConflict), errors.Is(err, core.ErrNotFound):
		op.Skipped++
	default:
		op.Failed++
		if len(op.Errors) < svctype.MaxRunOperationErrors {
			op.Errors = append(op.Errors, svctype.RunOperationError{RunID: run.ID, Message: err.Error()})
		}
	}
}

// finishJob completes job, saving op (when set) in the same transaction.
func (f *RunOps) finishJob(ctx context.Context, job *svctype.Job, op *svctype.RunOperation) error {
	return f.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if op != nil {
			if err := tx.SaveRunOperation(ctx, op); err != nil {
				return err
			}
		}
		return tx.CompleteJob(ctx, job)
	})
}
