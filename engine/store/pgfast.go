package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// The step commit on PostgreSQL. bun renders every argument into the statement text, so
// PostgreSQL parses and plans each statement anew: planning was 43 % of the statements'
// time in pg_stat_statements over the 3-step benchmark (docs/performance.md), most of it in
// the statements every step commit sends. Those go, inside a transaction, as prepared
// statements through pgx's per-connection statement cache: the SQLite fast path's SQL
// (sqlitefast.go) with $n placeholders and the casts PostgreSQL needs to type a parameter
// it cannot infer. Outside a transaction, and for every other statement, bun's path serves.

var (
	pgRenewJob     = strings.Replace(pgPlaceholders(sqlRenewJob), `CASE WHEN $5 IS NULL`, `CASE WHEN $5::timestamptz IS NULL`, 1)
	pgPutContext   = pgPlaceholders(sqlPutContext)
	pgPutStep      = pgPlaceholders(sqlPutStep)
	pgUpdateRun    = pgPlaceholders(sqlUpdateRun)
	pgTableIndexes = pgPlaceholders(sqlTableIndexes)
)

// pgPlaceholders numbers a statement's ? placeholders $1, $2, ... (the statements here have
// no ? inside a string literal).
func pgPlaceholders(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pgGetWorkflow is GetWorkflow's statement on PostgreSQL.
const pgGetWorkflow = `SELECT org_id, id, name, version, definition, warnings, created_at, updated_at
FROM workflows WHERE org_id = $1 AND id = $2`

// pgQueryer is a PostgreSQL transaction or pool, for prepared statements.
type pgQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// pgPrepared is where q sends a prepared statement on PostgreSQL: its transaction, or the
// pool; nil on SQLite.
func (q *querier) pgPrepared() pgQueryer {
	if q.dialect != dialectPostgres {
		return nil
	}
	if q.sqlTx != nil {
		return q.sqlTx
	}
	if db, ok := q.r.(*bun.DB); ok {
		return db.DB
	}
	return nil
}

// rawOf is a nullable text column as JSON, nil for NULL.
func rawOf(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// pgTx reports whether q runs the step commit's statements prepared: a PostgreSQL
// transaction.
func (q *querier) pgTx() bool { return q.dialect == dialectPostgres && q.sqlTx != nil }

// pgExec runs a prepared statement in q's PostgreSQL transaction, after its BEGIN in one
// round trip when it is the transaction's first statement (pgbegin.go).
func (q *querier) pgExec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if c := q.txConn(); c != nil {
		var tag pgconn.CommandTag
		sent, err := c.withBegin(ctx, query, args, func(rows pgx.Rows) error {
			for rows.Next() {
			}
			tag = rows.CommandTag()
			return rows.Err()
		})
		if sent {
			if err != nil {
				return nil, err
			}
			return driver.RowsAffected(tag.RowsAffected()), nil
		}
	}
	return q.sqlTx.ExecContext(ctx, query, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
}

// rowScanner is a row to scan: *sql.Row's Scan.
type rowScanner interface{ Scan(dest ...any) error }

// pgQueryRow runs a prepared statement that returns one row in q's PostgreSQL transaction,
// after its BEGIN in one round trip when it is the transaction's first statement
// (pgbegin.go). It is sent when the row is scanned.
func (q *querier) pgQueryRow(ctx context.Context, query string, args ...any) rowScanner {
	return pgRow{q: q, ctx: ctx, query: query, args: args}
}

// pgRow is pgQueryRow's row.
type pgRow struct {
	q     *querier
	ctx   context.Context
	query string
	args  []any
}

// Scan scans the row's columns into dest as *sql.Row does: sql.ErrNoRows without a row.
func (r pgRow) Scan(dest ...any) error {
	if c := r.q.txConn(); c != nil {
		sent, err := c.withBegin(r.ctx, r.query, r.args, func(rows pgx.Rows) error {
			if !rows.Next() {
				if err := rows.Err(); err != nil {
					return err
				}
				return sql.ErrNoRows
			}
			return rows.Scan(dest...)
		})
		if sent {
			return err
		}
	}
	return r.q.sqlTx.QueryRowContext(r.ctx, r.query, append([]any{pgx.QueryExecModeCacheStatement}, r.args...)...).Scan(dest...)
}

// txConn is the connection of q's PostgreSQL transaction when it may still owe its BEGIN,
// else nil.
func (q *querier) txConn() *pgConn {
	if q.tx == nil {
		return nil
	}
	return q.tx.c
}

// pgWriteRow inserts (or upserts, by key hash) m and, when the row is new, its index
// entries, in one statement: one round trip to PostgreSQL per row written. It is the one
// statement a table-writing step sends per row, so it goes as a prepared statement (pgx's
// per-connection cache; one text per number of entries), not as rendered text that
// PostgreSQL parses and plans anew each time. q is a PostgreSQL transaction (pgTx).
//
// With a guard (pgdecls.go) it writes only if the table's indexes column is still the one
// the guard names, and otherwise nothing: sql.ErrNoRows.
func (q *querier) pgWriteRow(ctx context.Context, m *rowModel, upsert bool, entries []indexEntryModel, guard *declGuard) (string, time.Time, error) {
	args := []any{m.ID, m.OrgID, m.TableName, m.KeyHash, m.KeyColumns, string(m.Data), m.CreatedAt, m.UpdatedAt}
	var b strings.Builder
	b.WriteString(`WITH up AS (INSERT INTO table_rows (id, org_id, table_name, key_hash, key_columns, data, created_at, updated_at)`)
	if guard == nil {
		b.WriteString(`
 VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8)`)
	} else {
		args = append(args, guard.arg())
		b.WriteString(`
 SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::timestamptz, $8::timestamptz
 WHERE EXISTS (SELECT 1 FROM custom_tables WHERE org_id = $2 AND name = $3 AND indexes IS NOT DISTINCT FROM $9::text)`)
	}
	if upsert {
		b.WriteString(` ON CONFLICT (org_id, table_name, key_hash) DO UPDATE SET data = EXCLUDED.data,
 key_columns = EXCLUDED.key_columns, updated_at = EXCLUDED.updated_at`)
	}
	b.WriteString(` RETURNING id, created_at)`)
	if len(entries) > 0 {
		b.WriteString(`, ent AS (INSERT INTO table_index_entries (org_id, table_name, index_key, value_hash, row_id)
 SELECT e.* FROM (VALUES `)
		for i, e := range entries {
			if i > 0 {
				b.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&b, "($%d::text, $%d::text, $%d::text, $%d::text, $%d::text)", n+1, n+2, n+3, n+4, n+5)
			args = append(args, e.OrgID, e.TableName, e.IndexKey, e.ValueHash, e.RowID)
		}
		// Only when the row is new: an upsert that updated keeps the row's id, not m.ID.
		b.WriteString(`) AS e(org_id, table_name, index_key, value_hash, row_id)
 WHERE EXISTS (SELECT 1 FROM up WHERE up.id = $1) ON CONFLICT DO NOTHING)`)
	}
	b.WriteString(` SELECT id, created_at FROM up`)
	var (
		id      string
		created time.Time
	)
	err := q.pgQueryRow(ctx, b.String(), args...).Scan(&id, &created)
	return id, created, err
}

// pgReadRows is ReadRows on PostgreSQL as a prepared statement (pgx's statement cache; one
// text per shape of where and limit): a read step's one statement, which bun rendered with
// its values in the text, so that PostgreSQL planned it anew each time (pg_stat_statements:
// 320 µs of planning in a 430 µs read through an index).
func (q *querier) pgReadRows(ctx context.Context, db pgQueryer, orgID, table string, where map[string]any, limit int) ([]svctype.Row, error) {
	conds, err := q.readConditions(ctx, orgID, table, where)
	if err != nil {
		return nil, err
	}
	query, args := q.readRowsQuery(orgID, table, conds, limit)
	rows, err := db.QueryContext(ctx, pgPlaceholders(query), append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
	if err != nil {
		return nil, err
	}
	return scanReadRows(rows)
}

// readRowsQuery is ReadRows' statement, with ? placeholders, and its arguments: one text
// per shape of where (its columns, the JSON types of their values, the index it reads)
// and limit, whatever the values.
func (q *querier) readRowsQuery(orgID, table string, conds []condition, limit int) (string, []any) {
	var b strings.Builder
	b.WriteString(`SELECT tr.id, tr.org_id, tr.table_name, tr.key_hash, tr.key_columns, tr.data, tr.created_at, tr.updated_at
FROM table_rows AS tr WHERE (` + q.rowScope(conds) + `)`)
	args := []any{orgID, table}
	for _, c := range conds {
		b.WriteString(" AND (" + c.expr + ")")
		args = append(args, c.args...)
	}
	b.WriteString(" ORDER BY tr.created_at ASC, tr.id ASC")
	if limit > 0 {
		b.WriteString(" LIMIT " + strconv.Itoa(limit))
	}
	return b.String(), args
}

// scanReadRows reads readRowsQuery's rows and closes them.
func scanReadRows(rows *sql.Rows) ([]svctype.Row, error) {
	defer rows.Close()
	var out []svctype.Row
	for rows.Next() {
		var m rowModel
		var data []byte
		if err := rows.Scan(&m.ID, &m.OrgID, &m.TableName, &m.KeyHash, &m.KeyColumns, &data, &m.CreatedAt, &m.UpdatedAt); err != nil {
			return nil, err
		}
		m.Data = data
		r, err := m.toRow()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if out == nil {
		out = []svctype.Row{}
	}
	return out, nil
}
