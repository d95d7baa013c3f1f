package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// The step commit on SQLite. bun renders every argument into the statement text, so SQLite
// compiles each of its statements anew, and compiling was a third of a step commit's time.
// The statements of a step commit (renew the job, put context, put the step record, append
// one event, update the run) are therefore prepared once on the writer connection and bound.
// Each says what its bun twin in querier says: PostgreSQL, and SQLite before the schema
// is current, take the bun path, and the conformance suite runs both paths.
//
// The statements are prepared when the schema is current (every migration applied): by
// Open, by Migrate, or by the first InTx after another process migrated. Before that, and
// only then, the bun path serves; with the schema current a failure to prepare is an error
// of whichever of those calls met it, never a silent fallback.

type sqliteStatements struct {
	renewJob    *sql.Stmt
	renewLease  *sql.Stmt
	putContext  *sql.Stmt
	putStep     *sql.Stmt
	appendEvent *sql.Stmt
	updateRun   *sql.Stmt
	insertRow   *sql.Stmt
	upsertRow   *sql.Stmt
	// Custom-table indexes (tableindexes.go): a write reads the declarations and keeps the entries.
	tableIndexes  *sql.Stmt
	insertEntry   *sql.Stmt
	deleteEntries *sql.Stmt
	insertRun     *sql.Stmt
	enqueueJob    *sql.Stmt
	// The claim's write (store.go, ClaimJobs): once per claim, like the commit's.
	claimJobs *sql.Stmt
	// Ending a run; and starting one reads its workflow in the transaction.
	completeJob *sql.Stmt
	getWorkflow *sql.Stmt

	// Reads prepared on the read pool: what every status poll reads.
	getRun       *sql.Stmt
	getContext   *sql.Stmt
	contextBrief *sql.Stmt
	listSteps    *sql.Stmt
	stepStatuses *sql.Stmt
	// The fair claim's read (store.go, sqlClaimCandidates).
	claimCandidates *sql.Stmt
	// What a custom-table read step reads before its rows (tableindexes.go), and a
	// workflow read outside a transaction.
	tableIndexesRead *sql.Stmt
	countRows        *sql.Stmt
	getWorkflowRead  *sql.Stmt
}

const (
	sqlRenewJob = `UPDATE "jobs" SET "run_at" = ?, "payload" = ?, "attempts" = ?, "lease_until" = ?,
 "lease_token" = CASE WHEN ? IS NULL THEN NULL ELSE "lease_token" END
 WHERE "org_id" = ? AND "id" = ? AND "lease_token" = ?`
	// A step commit keeps its job's lease and leaves run_at as it is: not naming run_at
	// leaves the two indexes on it untouched (SQLite rewrites the entries of every index on
	// a column an UPDATE sets, whatever the value), two pages fewer in the commit.
	sqlRenewLease = `UPDATE "jobs" SET "payload" = ?, "attempts" = ?, "lease_until" = ?
 WHERE "org_id" = ? AND "id" = ? AND "lease_token" = ? AND "run_at" = ?`
	sqlPutContext = `INSERT INTO "run_context" ("org_id", "run_id", "key", "value", "size", "parts") VALUES (?, ?, ?, ?, ?, 0)
 ON CONFLICT ("org_id", "run_id", "key") DO UPDATE SET "value" = excluded."value", "size" = excluded."size", "parts" = 0`
	sqlPutStep = `INSERT INTO "run_steps" ("org_id", "run_id", "idx", "type", "status", "input_summary",
 "output", "effects", "decisions", "error", "started_at", "finished_at")
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
 ON CONFLICT ("org_id", "run_id", "idx") DO UPDATE SET "type" = excluded."type",
 "status" = excluded."status", "input_summary" = excluded."input_summary",
 "output" = excluded."output", "effects" = excluded."effects", "decisions" = excluded."decisions",
 "error" = excluded."error", "started_at" = excluded."started_at", "finished_at" = excluded."finished_at"`
	sqlAppendEvent = `INSERT INTO "events" ("delivery_id", "org_id", "run_id", "event", "ts", "payload")
 VALUES (?, ?, ?, ?, ?, ?)`
	sqlUpdateRun = `UPDATE "runs" SET "status" = ?, "cursor" = ?, "reason" = ?, "updated_at" = ?,
 "finished_at" = ? WHERE "org_id" = ? AND "id" = ?`
	// Custom-table writes are the body of most steps.
	sqlInsertRow = `INSERT INTO "table_rows" ("id", "org_id", "table_name", "key_hash", "key_columns", "data", "created_at", "updated_at")
 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	sqlTableIndexes  = `SELECT "indexes" FROM "custom_tables" WHERE "org_id" = ? AND "name" = ?`
	sqlInsertEntry   = `INSERT INTO "table_index_entries" ("org_id", "table_name", "index_key", "value_hash", "row_id") VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlDeleteEntries = `DELETE FROM "table_index_entries" WHERE "org_id" = ? AND "table_name" = ? AND "row_id" = ?`
	// Starting a run.
	sqlInsertRun = `INSERT INTO "runs" ("org_id", "id", "workflow_id", "workflow_version", "status", "input",
 "definition", "cursor", "reason", "idempotency_key", "created_at", "updated_at", "finished_at")
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	sqlEnqueueJob = `INSERT INTO "jobs" ("org_id", "kind", "run_id", "workflow_id", "run_at", "attempts",
 "lease_token", "lease_until", "payload") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// Claiming the jobs picked from the candidates: the keys come as one JSON array of
	// [org_id, id] pairs, so that one statement serves any number of them. The first IN
	// finds the rows by id (the table's rowid); the second keeps each to its organization.
	sqlClaimJobs = `UPDATE "jobs" SET "lease_token" = lower(hex(randomblob(16))), "lease_until" = ?,
 "attempts" = "attempts" + 1, "claims" = "claims" + 1
 WHERE "id" IN (SELECT "value" ->> 1 FROM json_each(?))
 AND ("org_id", "id") IN (SELECT "value" ->> 0, "value" ->> 1 FROM json_each(?))
 AND "run_at" <= ? AND ("lease_until" IS NULL OR "lease_until" < ?)
 RETURNING "id", "org_id", "kind", "run_id", "workflow_id", "run_at", "attempts", "claims", "lease_token", "lease_until", "payload"`
	sqlCompleteJob = `DELETE FROM "jobs" WHERE "org_id" = ? AND "id" = ? AND "lease_token" = ?`
	sqlGetWorkflow = `SELECT "org_id", "id", "name", "version", "definition", "warnings", "created_at", "updated_at"
 FROM "workflows" WHERE "org_id" = ? AND "id" = ?`
	// CountRows' limit is a CAST, as the claim's: a bound LIMIT is compiled anew at each bind.
	sqlCountRows = `SELECT count(*) FROM (SELECT 1 FROM "table_rows" WHERE "org_id" = ? AND "table_name" = ?
 LIMIT CAST(? AS INTEGER))`
	sqlGetRun     = `SELECT * FROM "runs" WHERE "org_id" = ? AND "id" = ?`
	sqlGetContext = `SELECT * FROM "run_context" WHERE "org_id" = ? AND "run_id" = ?`
	// ContextBrief's: a large value's column is not read (contextparts.go); its bound is the
	// first argument. Prepared: what execute?wait and GET /runs/{id}/status read for the
	// document's context, which SQLite compiled at every call when bun rendered it.
	sqlContextBrief = `SELECT "key", "size", "parts", CASE WHEN "parts" > 0 OR "size" <= ? THEN "value" END AS "value"
 FROM "run_context" WHERE "org_id" = ? AND "run_id" = ?`
	sqlListSteps    = `SELECT * FROM "run_steps" WHERE "org_id" = ? AND "run_id" = ? ORDER BY "idx"`
	sqlStepStatuses = `SELECT "idx", "status" FROM "run_steps" WHERE "org_id" = ? AND "run_id" = ?`
	sqlUpsertRow    = sqlInsertRow + `
 ON CONFLICT ("org_id", "table_name", "key_hash") DO UPDATE SET "data" = excluded."data",
 "key_columns" = excluded."key_columns", "updated_at" = excluded."updated_at" RETURNING "id", "created_at"`
)

// sqlitePrepared holds the statements once the schema is current (nil before).
type sqlitePrepared struct {
	db    *sql.DB
	read  *bun.DB // the read pool, for the prepared reads and for scanning their rows
	stmts atomic.Pointer[sqliteStatements]
	off   bool // tests turn the fast path off to exercise the bun path on SQLite
	// shapes are the reads prepared by their text (sqliteshapes.go).
	shapes shapes
}

// prepare compiles the statements; it fails when the schema is not current. Callers other
// than Migrate go through Store.prepareStatements, which looks first.
func (p *sqlitePrepared) prepare(ctx context.Context) error {
	if p.off || p.stmts.Load() != nil {
		return nil
	}
	var (
		s    sqliteStatements
		errs []error
	)
	for _, it := range []struct {
		dst   **sql.Stmt
		query string
		read  bool
	}{
		{&s.renewJob, sqlRenewJob, false},
		{&s.renewLease, sqlRenewLease, false},
		{&s.putContext, sqlPutContext, false},
		{&s.putStep, sqlPutStep, false},
		{&s.appendEvent, sqlAppendEvent, false},
		{&s.updateRun, sqlUpdateRun, false},
		{&s.insertRow, sqlInsertRow, false},
		{&s.upsertRow, sqlUpsertRow, false},
		{&s.tableIndexes, sqlTableIndexes, false},
		{&s.insertEntry, sqlInsertEntry, false},
		{&s.deleteEntries, sqlDeleteEntries, false},
		{&s.insertRun, sqlInsertRun, false},
		{&s.enqueueJob, sqlEnqueueJob, false},
		{&s.claimJobs, sqlClaimJobs, false},
		{&s.completeJob, sqlCompleteJob, false},
		{&s.getWorkflow, sqlGetWorkflow, false},
		{&s.tableIndexesRead, sqlTableIndexes, true},
		{&s.countRows, sqlCountRows, true},
		{&s.getWorkflowRead, sqlGetWorkflow, true},
		{&s.getRun, sqlGetRun, true},
		{&s.getContext, sqlGetContext, true},
		{&s.contextBrief, sqlContextBrief, true},
		{&s.listSteps, sqlListSteps, true},
		{&s.stepStatuses, sqlStepStatuses, true},
		{&s.claimCandidates, sqlClaimCandidates, true},
	} {
		db := p.db
		if it.read {
			db = p.read.DB
		}
		stmt, err := db.PrepareContext(ctx, it.query)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*it.dst = stmt
	}
	if len(errs) > 0 {
		s.close()
		return errors.Join(errs...)
	}
	if !p.stmts.CompareAndSwap(nil, &s) {
		s.close()
	}
	return nil
}

// prepareStatements prepares the SQLite statements when the schema is current and they are
// not prepared yet. A schema not current (not migrated yet, or migrated by an older
// release) is the one case in which they may be missing: it is told by the migrations
// applied, not guessed from the error, and leaves them unprepared until Migrate.
func (s *Store) prepareStatements(ctx context.Context) error {
	p := s.prepared
	if p == nil || p.off || p.stmts.Load() != nil {
		return nil
	}
	current, err := s.sqliteSchemaCurrent(ctx)
	if err != nil {
		return fmt.Errorf("store: prepare statements: read the migrations applied: %w", err)
	}
	if !current {
		return nil
	}
	if err := p.prepare(ctx); err != nil {
		return fmt.Errorf("store: prepare statements: %w", err)
	}
	return nil
}

func (p *sqlitePrepared) close() {
	if s := p.stmts.Swap(nil); s != nil {
		s.close()
	}
	p.shapes.close()
}

func (s *sqliteStatements) close() {
	for _, stmt := range []*sql.Stmt{s.renewJob, s.renewLease, s.putContext, s.putStep, s.appendEvent, s.updateRun, s.insertRow, s.upsertRow,
		s.tableIndexes, s.insertEntry, s.deleteEntries, s.insertRun, s.enqueueJob, s.claimJobs, s.completeJob, s.getWorkflow,
		s.tableIndexesRead, s.countRows, s.getWorkflowRead, s.getRun, s.getContext, s.contextBrief, s.listSteps, s.stepStatuses, s.claimCandidates} {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
}

// fast returns the prepared statements to use, or nil for the bun path.
func (q *querier) fast() *sqliteStatements {
	if q.prepared == nil {
		return nil
	}
	return q.prepared.stmts.Load()
}

// fastRead returns the prepared statements for a read outside a transaction (a read in
// one goes through the transaction, on the writer), or nil for the bun path.
func (q *querier) fastRead() *sqliteStatements {
	if q.inTx {
		return nil
	}
	return q.fast()
}

// scanClaimed reads sqlClaimJobs' rows and closes them: by hand, not through bun's
// reflection, which was a third of a claim's CPU beside its two statements.
func scanClaimed(rows *sql.Rows) ([]jobModel, error) {
	defer rows.Close()
	var out []jobModel
	for rows.Next() {
		var (
			m                 jobModel
			runAt, leaseUntil any
			payload           sql.NullString
		)
		if err := rows.Scan(&m.ID, &m.OrgID, &m.Kind, &m.RunID, &m.WorkflowID, &runAt, &m.Attempts, &m.Claims,
			&m.LeaseToken, &leaseUntil, &payload); err != nil {
			return nil, err
		}
		var err error
		if m.RunAt, err = sqliteScannedTime(runAt); err != nil {
			return nil, err
		}
		if leaseUntil != nil {
			until, err := sqliteScannedTime(leaseUntil)
			if err != nil {
				return nil, err
			}
			m.LeaseUntil = &until
		}
		m.Payload = rawOf(payload)
		out = append(out, m)
	}
	return out, rows.Err()
}

// claimKeys is sqlClaimJobs' argument: the keys as a JSON array of [org_id, id] pairs.
func claimKeys(keys []jobKey) (string, error) {
	pairs := make([][2]any, len(keys))
	for i, k := range keys {
		pairs[i] = [2]any{k.orgID, k.id}
	}
	b, err := json.Marshal(pairs)
	return string(b), err
}

// queryInto runs a prepared read on the read pool and scans its rows into dest (a model
// or a slice of models), as bun would.
func (q *querier) queryInto(ctx context.Context, stmt *sql.Stmt, dest any, args ...any) error {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return q.prepared.read.ScanRows(ctx, rows, dest)
}

// queryTxInto runs a prepared statement of the writer in tx (nil: on its own) and scans
// its rows into dest, as bun would.
func (q *querier) queryTxInto(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, dest any, args ...any) error {
	if tx != nil {
		stmt = tx.StmtContext(ctx, stmt)
	}
	return q.queryInto(ctx, stmt, dest, args...)
}

// exec runs a prepared statement in the querier's transaction, if any. The transaction is
// on the writer connection the statement was prepared on, so database/sql reuses it.
func (q *querier) exec(ctx context.Context, stmt *sql.Stmt, args ...any) (sql.Result, error) {
	return q.txStmt(ctx, stmt).ExecContext(ctx, args...)
}

// txStmt is stmt bound to the querier's transaction, if any. database/sql makes a new
// binding at each Tx.StmtContext: a step commit runs a handful of statements a dozen times
// in all, so each binding is kept for the transaction's life.
func (q *querier) txStmt(ctx context.Context, stmt *sql.Stmt) *sql.Stmt {
	if q.sqlTx == nil {
		return stmt
	}
	if s, ok := q.txStmts[stmt]; ok {
		return s
	}
	s := q.sqlTx.StmtContext(ctx, stmt)
	if q.txStmts == nil {
		q.txStmts = map[*sql.Stmt]*sql.Stmt{}
	}
	q.txStmts[stmt] = s
	return s
}

// sqliteTime formats t as bun writes times on SQLite, so that bound and rendered times
// compare as text.
func sqliteTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.999999-07:00")
}

func sqliteTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return sqliteTime(*t)
}

// queryRow runs a prepared statement that returns one row, in the querier's transaction.
func (q *querier) queryRow(ctx context.Context, stmt *sql.Stmt, args ...any) *sql.Row {
	return q.txStmt(ctx, stmt).QueryRowContext(ctx, args...)
}

// sqliteScannedTime reads a time column scanned from a prepared statement: the driver gives
// a time.Time for columns declared as times, else the text sqliteTime wrote.
func sqliteScannedTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case string:
		return time.Parse("2006-01-02 15:04:05.999999-07:00", t)
	case []byte:
		return time.Parse("2006-01-02 15:04:05.999999-07:00", string(t))
	}
	return time.Time{}, fmt.Errorf("unexpected time value %T", v)
}
