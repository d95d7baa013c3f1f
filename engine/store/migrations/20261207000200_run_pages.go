package migrations

import (
	"context"
	"strings"

	"github.com/uptrace/bun"
)

// runPages makes the B-trees a run writes fewer (docs/performance.md, "Issue 35: one
// process, fourth session"): on SQLite every table and index a commit touches is a page
// written to the WAL, and a run's writes are a handful of rows in each of a dozen B-trees.
//
//   - jobs_org_workflow serves only DeleteJobs by workflow (a workflow's schedule jobs);
//     a run's jobs have no workflow id, yet each was entered in it at its insert and
//     removed at its delete. It becomes partial, on the jobs that name a workflow (both
//     dialects: PostgreSQL's index writes fall the same way).
//   - run_context and run_steps were SQLite rowid tables with their primary key in a
//     second B-tree beside them: every row written twice. On SQLite they are rebuilt
//     WITHOUT ROWID, clustered on that key, the order every read of them takes.
func runPages(ctx context.Context, tx bun.Tx) error {
	if err := exec(ctx, tx,
		`DROP INDEX IF EXISTS "jobs_org_workflow"`,
		`CREATE INDEX IF NOT EXISTS "jobs_org_workflow_set" ON "jobs" ("org_id", "workflow_id") WHERE "workflow_id" <> ''`,
	); err != nil {
		return err
	}
	if postgres(tx) {
		return nil
	}
	if err := clusterSQLite(ctx, tx, "run_context", `CREATE TABLE "run_context_clustered" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "key" VARCHAR NOT NULL, "value" text,
		"size" BIGINT NOT NULL DEFAULT 0, "parts" INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY ("org_id", "run_id", "key")) WITHOUT ROWID`,
		`"org_id", "run_id", "key", "value", "size", "parts"`); err != nil {
		return err
	}
	return clusterSQLite(ctx, tx, "run_steps", `CREATE TABLE "run_steps_clustered" (
		"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "idx" INTEGER NOT NULL,
		"type" VARCHAR NOT NULL, "status" VARCHAR NOT NULL, "input_summary" text,
		"output" text, "effects" text, "decisions" text, "error" VARCHAR NOT NULL DEFAULT '',
		"started_at" TIMESTAMP, "finished_at" TIMESTAMP, PRIMARY KEY ("org_id", "run_id", "idx")) WITHOUT ROWID`,
		`"org_id", "run_id", "idx", "type", "status", "input_summary", "output", "effects", "decisions", "error", "started_at", "finished_at"`)
}

// clusterSQLite rebuilds table as create (a CREATE TABLE of table+"_clustered", WITHOUT
// ROWID), copying columns, unless table is WITHOUT ROWID already. No foreign key, index
// (beside the primary key), trigger or view names either table.
func clusterSQLite(ctx context.Context, tx bun.Tx, table, create, columns string) error {
	var ddl string
	if err := tx.NewRaw(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(ctx, &ddl); err != nil {
		return err
	}
	if strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID") {
		return nil
	}
	clustered := table + "_clustered"
	return exec(ctx, tx,
		`DROP TABLE IF EXISTS "`+clustered+`"`,
		create,
		`INSERT INTO "`+clustered+`" (`+columns+`) SELECT `+columns+` FROM "`+table+`"`,
		`DROP TABLE "`+table+`"`,
		`ALTER TABLE "`+clustered+`" RENAME TO "`+table+`"`,
	)
}
