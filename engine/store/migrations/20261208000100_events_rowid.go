package migrations

import (
	"context"
	"strings"

	"github.com/uptrace/bun"
)

// eventsRowid drops AUTOINCREMENT from the events table on SQLite (docs/performance.md,
// "SQLite: the cost of a run (issue 35, sixth session)"). AUTOINCREMENT reads and rewrites
// the table's row of sqlite_sequence at every insert: a page of every commit that appends
// an event, which a run's step commits otherwise would not write (the jobs table keeps
// its AUTOINCREMENT: the run-state cache relies on a job id never coming back). Without
// it SQLite numbers a row one past the table's largest seq. Events are never deleted, so
// seq still only grows, and a run's events, whose number is all that orders and pages
// them, are numbered in the order they were appended, as before. PostgreSQL's BIGSERIAL
// is left alone.
func eventsRowid(ctx context.Context, tx bun.Tx) error {
	if postgres(tx) {
		return nil
	}
	var ddl string
	if err := tx.NewRaw(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'`).Scan(ctx, &ddl); err != nil {
		return err
	}
	if !strings.Contains(strings.ToUpper(ddl), "AUTOINCREMENT") {
		return nil
	}
	const columns = `"seq", "delivery_id", "org_id", "run_id", "event", "ts", "payload"`
	// Dropping events drops its index and its row of sqlite_sequence.
	return exec(ctx, tx,
		`DROP TABLE IF EXISTS "events_rowid"`,
		`CREATE TABLE "events_rowid" (
		"seq" INTEGER NOT NULL PRIMARY KEY, "delivery_id" VARCHAR NOT NULL, "org_id" VARCHAR NOT NULL,
		"run_id" VARCHAR NOT NULL, "event" VARCHAR NOT NULL, "ts" TIMESTAMP NOT NULL,
		"payload" text)`,
		`INSERT INTO "events_rowid" (`+columns+`) SELECT `+columns+` FROM "events"`,
		`DROP TABLE "events"`,
		`ALTER TABLE "events_rowid" RENAME TO "events"`,
		`CREATE INDEX IF NOT EXISTS "events_org_run_seq" ON "events" ("org_id", "run_id", "seq")`,
	)
}
