package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// querier implements storage.Full for both the Store (w is the writer, r the read pool)
// and a transaction (both are the bun.Tx).
type querier struct {
	w       bun.IDB
	r       bun.IDB
	dialect string
	clock   func() time.Time // the store's clock (WithNow); nil is time.Now: read it by now
	inTx    bool

	prepared *sqlitePrepared         // SQLite only: the step-commit statements (sqlitefast.go)
	sqlTx    *sql.Tx                 // the transaction under w, for prepared statements
	txStmts  map[*sql.Stmt]*sql.Stmt // the prepared statements bound to sqlTx (txStmt)
	tx       *txConn                 // PostgreSQL, InTx: the connection, whose BEGIN may be pending (pgbegin.go)

	// defs holds, in a transaction, the custom-table index declarations its writes read
	// (tableindexes.go): they cannot change before it ends.
	defs map[string][]svctype.TableIndex
	// known is the Store's index declarations as last read (PostgreSQL only; pgdecls.go).
	known *knownDecls
	// jobsChannel is where a job made claimable is announced (PostgreSQL only; notify.go).
	jobsChannel string
	// rr is the Store's round robin of claims, which a step commit's claim shares.
	rr *roundRobin
	// claims, in InTx on PostgreSQL, are the claims its step commits made, handed to their
	// NextClaim once the transaction has committed (pgclaim.go).
	claims *txClaims
}

var _ storage.All = (*querier)(nil)

// now is the store's clock in store form (dbTime).
func (q *querier) now() time.Time {
	if q.clock == nil {
		return dbTime(time.Now())
	}
	return dbTime(q.clock())
}

// atomic runs fn in the current transaction, or in a new one on the writer: for the
// methods that write more than one statement.
func (q *querier) atomic(ctx context.Context, fn func(ctx context.Context, db bun.IDB) error) error {
	if q.inTx {
		return fn(ctx, q.w)
	}
	return q.w.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, tx)
	})
}

// newID is a time-ordered UUID (v7), so ids inserted together sit together in an index.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// jsonArg renders raw JSON as a statement argument (bun would render a []byte as a blob).
func jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// Workflows.

func (q *querier) CreateWorkflow(ctx context.Context, w *svctype.Workflow) error {
	const op = "create workflow"
	if w.ID == "" {
		w.ID = newID()
	}
	if w.Version == 0 {
		w.Version = 1
	}
	t := q.now()
	w.CreatedAt = orNow(w.CreatedAt, t)
	w.UpdatedAt = orNow(w.UpdatedAt, w.CreatedAt)
	m, err := workflowToModel(w)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		if err := insertNew(ctx, db, op, m); err != nil {
			return err
		}
		_, err = db.NewInsert().Model(versionOf(m, w.UpdatedAt)).Exec(ctx)
		return wrap(op, err)
	})
}

func versionOf(m *workflowModel, at time.Time) *workflowVersionModel {
	return &workflowVersionModel{
		OrgID: m.OrgID, ID: m.ID, Version: m.Version, Name: m.Name,
		Definition: m.Definition, Warnings: m.Warnings, CreatedAt: at,
	}
}

func (q *querier) UpdateWorkflow(ctx context.Context, w *svctype.Workflow) error {
	const op = "update workflow"
	w.UpdatedAt = orNow(w.UpdatedAt, q.now())
	m, err := workflowToModel(w)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		// One look finds both the workflow and a namesake, so that neither case reaches
		// the database as a constraint violation.
		var ids []string
		err := db.NewSelect().Model((*workflowModel)(nil)).Column("id").
			Where("org_id = ?", w.OrgID).
			Where("(id = ? OR name = ?)", w.ID, w.Name).
			Scan(ctx, &ids)
		if err != nil {
			return wrap(op, err)
		}
		if !slices.Contains(ids, w.ID) {
			return notFound(op)
		}
		if len(ids) > 1 {
			return conflict(op) // another workflow has the name
		}
		// ErrConflict: that version exists, a concurrent update won.
		if err := insertNew(ctx, db, op, versionOf(m, w.UpdatedAt)); err != nil {
			return err
		}
		var created time.Time
		err = db.NewUpdate().Model(m).
			Column("name", "version", "definition", "warnings", "updated_at").
			WherePK().
			Returning("created_at").
			Scan(ctx, &created)
		if err != nil {
			return wrap(op, err)
		}
		w.CreatedAt = created.UTC()
		return nil
	})
}

func (q *querier) GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error) {
	var m workflowModel
	var err error
	if st := q.fast(); st != nil {
		// Every Execute reads its workflow: its row scanned by hand, not through bun's
		// reflection.
		var row *sql.Row
		if q.inTx {
			row = q.queryRow(ctx, st.getWorkflow, orgID, id)
		} else {
			row = st.getWorkflowRead.QueryRowContext(ctx, orgID, id)
		}
		var def, warnings sql.NullString
		var created, updated any
		if err = row.Scan(&m.OrgID, &m.ID, &m.Name, &m.Version, &def, &warnings, &created, &updated); err == nil {
			m.Definition, m.Warnings = rawOf(def), rawOf(warnings)
			if m.CreatedAt, err = sqliteScannedTime(created); err == nil {
				m.UpdatedAt, err = sqliteScannedTime(updated)
			}
		}
	} else if db := q.pgPrepared(); db != nil {
		// Every Execute reads its workflow: prepared on PostgreSQL, as the step commit's
		// statements, so that it is not planned anew each time (pg_stat_statements: 130 µs
		// of planning a call, rendered by bun).
		// In a transaction, its BEGIN goes with it (pgbegin.go).
		var def, warnings sql.NullString
		var row rowScanner
		if q.pgTx() {
			row = q.pgQueryRow(ctx, pgGetWorkflow, orgID, id)
		} else {
			row = db.QueryRowContext(ctx, pgGetWorkflow, pgx.QueryExecModeCacheStatement, orgID, id)
		}
		err = row.Scan(&m.OrgID, &m.ID, &m.Name, &m.Version, &def, &warnings, &m.CreatedAt, &m.UpdatedAt)
		m.Definition, m.Warnings = rawOf(def), rawOf(warnings)
	} else {
		err = q.r.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx)
	}
	if err == nil && m.ID == "" {
		err = sql.ErrNoRows // ScanRows leaves a model untouched when there is no row
	}
	if err != nil {
		return nil, wrap("get workflow", err)
	}
	return m.toWorkflow()
}

func (q *querier) GetWorkflowVersion(ctx context.Context, orgID, id string, version int) (*svctype.Workflow, error) {
	var m workflowVersionModel
	err := q.r.NewSelect().Model(&m).
		Where("org_id = ? AND id = ? AND version = ?", orgID, id, version).
		Scan(ctx)
	if err != nil {
		return nil, wrap("get workflow version", err)
	}
	return m.toWorkflow()
}

// ListWorkflows pages an org's workflows in creation order.
func (q *querier) ListWorkflows(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Workflow], error) {
	sel := q.r.NewSelect().Model((*workflowModel)(nil)).Where("org_id = ?", orgID)
	return pageByCreated(ctx, "list workflows", sel, false, opts,
		func(m *workflowModel) (time.Time, string) { return m.CreatedAt, m.ID }, valueOf((*workflowModel).toWorkflow))
}

func (q *querier) DeleteWorkflow(ctx context.Context, orgID, id string) error {
	const op = "delete workflow"
	return q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		res, err := db.NewDelete().Model((*workflowModel)(nil)).
			Where("org_id = ? AND id = ?", orgID, id).Exec(ctx)
		if err != nil {
			return wrap(op, err)
		}
		if err := checkAffected(op, res, notFound); err != nil {
			return err
		}
		_, err = db.NewDelete().Model((*workflowVersionModel)(nil)).
			Where("org_id = ? AND id = ?", orgID, id).Exec(ctx)
		if err != nil {
			return wrap(op, err)
		}
		_, err = db.NewDelete().Model((*generatedFormSchemaModel)(nil)).
			Where("org_id = ? AND workflow_id = ?", orgID, id).Exec(ctx)
		return wrap(op, err)
	})
}

// Runs.

// newRunModel fills a new run's defaults (id, status, times on the store's clock, as
// t) and returns its row.
func newRunModel(run *svctype.Run, t time.Time) (*runModel, error) {
	if run.ID == "" {
		run.ID = newID()
	}
	if run.Status == "" {
		run.Status = svctype.RunRunning
	}
	run.CreatedAt = orNow(run.CreatedAt, t)
	run.UpdatedAt = orNow(run.UpdatedAt, run.CreatedAt)
	run.FinishedAt = dbTimePtr(run.FinishedAt)
	m, err := runToModel(run)
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	return m, nil
}

func (q *querier) CreateRun(ctx context.Context, run *svctype.Run, keyExpires time.Time) error {
	const op = "create run"
	t := q.now()
	m, err := newRunModel(run, t)
	if err != nil {
		return err
	}
	insertRun := func(ctx context.Context, db bun.IDB) error {
		var res sql.Result
		var err error
		// The prepared statement is bound to the writer connection: only for a run without a
		// key, inserted through q.w (a keyed run goes through atomic's own transaction).
		if st := q.fast(); st != nil && run.IdempotencyKey == "" {
			var key any
			if m.IdempotencyKey != nil {
				key = *m.IdempotencyKey
			}
			res, err = q.exec(ctx, st.insertRun, m.OrgID, m.ID, m.WorkflowID, m.WorkflowVersion, m.Status,
				jsonArg(m.Input), jsonArg(m.Definition), string(m.Cursor), m.Reason, key,
				sqliteTime(m.CreatedAt), sqliteTime(m.UpdatedAt), sqliteTimePtr(m.FinishedAt))
		} else {
			res, err = db.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
		}
		if err != nil {
			return wrap(op, err)
		}
		return checkAffected(op, res, conflict)
	}
	if run.IdempotencyKey == "" {
		return insertRun(ctx, q.w)
	}
	return q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		_, err := db.NewDelete().Model((*idempotencyModel)(nil)).
			Where("org_id = ? AND key = ? AND expires_at <= ?", run.OrgID, run.IdempotencyKey, t).
			Exec(ctx)
		if err != nil {
			return wrap(op, err)
		}
		key := &idempotencyModel{
			OrgID: run.OrgID, Key: run.IdempotencyKey, RunID: run.ID, ExpiresAt: dbTime(keyExpires),
			Request: run.IdempotencyRequest,
		}
		res, err := db.NewInsert().Model(key).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return wrap(op, err)
		}
		if err := checkAffected(op, res, conflict); err != nil {
			return err
		}
		return insertRun(ctx, db)
	})
}

func (q *querier) RunIDForIdempotencyKey(ctx context.Context, orgID, key string, at time.Time) (string, string, error) {
	var m idempotencyModel
	err := q.r.NewSelect().Model(&m).Column("run_id", "request").
		Where("org_id = ? AND key = ? AND expires_at > ?", orgID, key, dbTime(at)).
		Scan(ctx)
	if err != nil {
		return "", "", wrap("run for idempotency key", err)
	}
	return m.RunID, m.Request, nil
}

func (q *querier) GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error) {
	var m runModel
	var err error
	if st := q.fastRead(); st != nil {
		err = q.queryInto(ctx, st.getRun, &m, orgID, id)
		if err == nil && m.ID == "" {
			err = sql.ErrNoRows // ScanRows leaves a model untouched when there is no row
		}
	} else {
		err = q.r.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx)
	}
	if err != nil {
		return nil, wrap("get run", err)
	}
	r, err := m.toRun()
	if err != nil {
		return nil, wrap("get run", err)
	}
	return &r, nil
}

func (q *querier) UpdateRun(ctx context.Context, run *svctype.Run) error {
	const op = "update run"
	run.UpdatedAt = orNow(run.UpdatedAt, q.now())
	run.FinishedAt = dbTimePtr(run.FinishedAt)
	m, err := runToModel(run)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var res sql.Result
	if st := q.fast(); st != nil {
		res, err = q.exec(ctx, st.updateRun, m.Status, jsonArg(m.Cursor), m.Reason,
			sqliteTime(m.UpdatedAt), sqliteTimePtr(m.FinishedAt), m.OrgID, m.ID)
	} else if q.pgTx() {
		res, err = q.pgExec(ctx, pgUpdateRun, m.Status, jsonArg(m.Cursor), m.Reason, m.UpdatedAt, m.FinishedAt, m.OrgID, m.ID)
	} else {
		res, err = q.w.NewUpdate().Model(m).
			Column("status", "cursor", "reason", "updated_at", "finished_at").
			WherePK().
			Exec(ctx)
	}
	if err != nil {
		return wrap(op, err)
	}
	if err := checkAffected(op, res, notFound); err != nil {
		return err
	}
	if q.dialect == dialectPostgres && run.Status != svctype.RunRunning {
		// Delivered to every listener when the transaction commits (never if it rolls back).
		if _, err := q.w.NewRaw("SELECT pg_notify(?, ?)", runStatusChannel, run.OrgID+"\n"+run.ID).Exec(ctx); err != nil {
			return wrap(op, err)
		}
	}
	return nil
}

// RunStatuses reads the status column of the org's runs in ids.
func (q *querier) RunStatuses(ctx context.Context, orgID string, ids []string) (map[string]svctype.RunStatus, error) {
	out := make(map[string]svctype.RunStatus, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID     string `bun:"id"`
		Status string `bun:"status"`
	}
	err := q.r.NewSelect().Model((*runModel)(nil)).Column("id", "status").
		Where("org_id = ?", orgID).
		Where("id IN (?)", bun.List(ids)).
		Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrap("run statuses", err)
	}
	for _, r := range rows {
		out[r.ID] = svctype.RunStatus(r.Status)
	}
	return out, nil
}
