package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Retries: one row per run that retries a failed one, unique by the run it retries.

type runRetryModel struct {
	bun.BaseModel `bun:"table:run_retries,alias:rr"`

	OrgID     string          `bun:"org_id,pk"`
	RunID     string          `bun:"run_id,pk"`
	RetryOf   string          `bun:"retry_of,notnull"`
	FromStep  int             `bun:"from_step,notnull"`
	Reason    string          `bun:"reason,notnull"`
	Actor     json.RawMessage `bun:"actor,type:text,notnull"`
	CreatedAt time.Time       `bun:"created_at,notnull"`
}

func (m *runRetryModel) toRunRetry() *svctype.RunRetry {
	r := &svctype.RunRetry{OrgID: m.OrgID, RunID: m.RunID, RetryOf: m.RetryOf, FromStep: m.FromStep,
		Reason: m.Reason, CreatedAt: m.CreatedAt.UTC()}
	_ = json.Unmarshal(m.Actor, &r.Actor)
	return r
}

// PutRunRetry records that r.RunID retries r.RetryOf (ErrConflict when r.RetryOf was
// retried already).
func (q *querier) PutRunRetry(ctx context.Context, r *svctype.RunRetry) error {
	r.CreatedAt = orNow(r.CreatedAt, q.now())
	actor, err := json.Marshal(r.Actor)
	if err != nil {
		return wrap("put run retry", err)
	}
	m := &runRetryModel{OrgID: r.OrgID, RunID: r.RunID, RetryOf: r.RetryOf, FromStep: r.FromStep,
		Reason: r.Reason, Actor: actor, CreatedAt: r.CreatedAt}
	_, err = q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("put run retry", err)
}

// RunRetries returns runID's retry of another run and the retry of runID, nil when none.
func (q *querier) RunRetries(ctx context.Context, orgID, runID string) (of, by *svctype.RunRetry, err error) {
	var ms []runRetryModel
	if err := q.r.NewSelect().Model(&ms).Where("org_id = ? AND (run_id = ? OR retry_of = ?)", orgID, runID, runID).
		Scan(ctx); err != nil {
		return nil, nil, wrap("run retries", err)
	}
	for i := range ms {
		if ms[i].RunID == runID {
			of = ms[i].toRunRetry()
		} else {
			by = ms[i].toRunRetry()
		}
	}
	return of, by, nil
}

// Run operations: one row per operation, its progress rewritten after every batch.

type runOperationModel struct {
	bun.BaseModel `bun:"table:run_operations,alias:ro"`

	OrgID      string          `bun:"org_id,pk"`
	ID         string          `bun:"id,pk"`
	Action     string          `bun:"action,notnull"`
	Filter     json.RawMessage `bun:"filter,type:text,notnull"`
	Reason     string          `bun:"reason,notnull"`
	Actor      json.RawMessage `bun:"actor,type:text,notnull"`
	Status     string          `bun:"status,notnull"`
	Matched    int             `bun:"matched,notnull"`
	Done       int             `bun:"done,notnull"`
	Skipped    int             `bun:"skipped,notnull"`
	Failed     int             `bun:"failed,notnull"`
	Errors     json.RawMessage `bun:"errors,type:text,notnull"`
	Cursor     string          `bun:"cursor,notnull"`
	CreatedAt  time.Time       `bun:"created_at,notnull"`
	UpdatedAt  time.Time       `bun:"updated_at,notnull"`
	FinishedAt *time.Time      `bun:"finished_at"`
}

func runOperationToModel(op *svctype.RunOperation) (*runOperationModel, error) {
	actor, err := json.Marshal(op.Actor)
	if err != nil {
		return nil, err
	}
	errs := op.Errors
	if errs == nil {
		errs = []svctype.RunOperationError{}
	}
	rawErrs, err := json.Marshal(errs)
	if err != nil {
		return nil, err
	}
	filter := op.Filter
	if len(filter) == 0 {
		filter = json.RawMessage(`{}`)
	}
	return &runOperationModel{OrgID: op.OrgID, ID: op.ID, Action: string(op.Action), Filter: filter, Reason: op.Reason,
		Actor: actor, Status: string(op.Status), Matched: op.Matched, Done: op.Done, Skipped: op.Skipped, Failed: op.Failed,
		Errors: rawErrs, Cursor: op.Cursor, CreatedAt: op.CreatedAt, UpdatedAt: op.UpdatedAt, FinishedAt: op.FinishedAt}, nil
}

func (m *runOperationModel) toRunOperation() (svctype.RunOperation, error) {
	op := svctype.RunOperation{ID: m.ID, OrgID: m.OrgID, Action: svctype.RunOperationAction(m.Action), Filter: m.Filter,
		Reason: m.Reason, Status: svctype.RunOperationStatus(m.Status), Matched: m.Matched, Done: m.Done, Skipped: m.Skipped,
		Failed: m.Failed, Cursor: m.Cursor, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	if m.FinishedAt != nil {
		t := m.FinishedAt.UTC()
		op.FinishedAt = &t
	}
	if err := json.Unmarshal(m.Actor, &op.Actor); err != nil {
		return op, err
	}
	if err := json.Unmarshal(m.Errors, &op.Errors); err != nil {
		return op, err
	}
	return op, nil
}

// CreateRunOperation inserts op (ErrConflict when its id is taken).
func (q *querier) CreateRunOperation(ctx context.Context, op *svctype.RunOperation) error {
	t := q.now()
	op.CreatedAt = orNow(op.CreatedAt, t)
	op.UpdatedAt = orNow(op.UpdatedAt, op.CreatedAt)
	m, err := runOperationToModel(op)
	if err != nil {
		return wrap("create run operation", err)
	}
	_, err = q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create run operation", err)
}

// GetRunOperation returns one of the organization's run operations.
func (q *querier) GetRunOperation(ctx context.Context, orgID, id string) (*svctype.RunOperation, error) {
	var m runOperationModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get run operation", err)
	}
	op, err := m.toRunOperation()
	if err != nil {
		return nil, wrap("get run operation", err)
	}
	return &op, nil
}

// SaveRunOperation writes the status, counts, errors, cursor and times of an existing
// operation.
func (q *querier) SaveRunOperation(ctx context.Context, op *svctype.RunOperation) error {
	const op_ = "save run operation"
	op.UpdatedAt = orNow(op.UpdatedAt, q.now())
	m, err := runOperationToModel(op)
	if err != nil {
		return wrap(op_, err)
	}
	res, err := q.w.NewUpdate().Model(m).
		Column("status", "matched", "done", "skipped", "failed", "errors", "cursor", "updated_at", "finished_at").
		Where("org_id = ? AND id = ?", op.OrgID, op.ID).Exec(ctx)
	if err != nil {
		return wrap(op_, err)
	}
	return checkAffected(op_, res, notFound)
}

// ListRunOperations pages the organization's run operations newest first.
func (q *querier) ListRunOperations(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.RunOperation], error) {
	sel := q.r.NewSelect().Model((*runOperationModel)(nil)).Where("org_id = ?", orgID)
	return pageByCreated(ctx, "list run operations", sel, true, opts,
		func(m *runOperationModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*runOperationModel).toRunOperation)
}
