package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
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

// pgTx reports whether q runs the step commit's statements prepared: a PostgreSQL
// transaction.
func (q *querier) pgTx() bool { return q.dialect == dialectPostgres && q.sqlTx != nil }

// pgExec runs a prepared statement in q's PostgreSQL transaction.
func (q *querier) pgExec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.sqlTx.ExecContext(ctx, query, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
}

// pgQueryRow runs a prepared statement that returns one row in q's PostgreSQL transaction.
func (q *querier) pgQueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return q.sqlTx.QueryRowContext(ctx, query, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
}
