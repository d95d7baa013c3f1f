package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// tableIndexes adds custom-table indexes: their declarations on custom_tables.indexes, their
// entries in table_index_entries, and an index on a row's entries for the writes that
// replace them. On SQLite the entries table is WITHOUT ROWID: the primary key is the table,
// one B-tree fewer per entry written.
func tableIndexes(ctx context.Context, tx bun.Tx) error {
	if err := addColumn(ctx, tx, "custom_tables", "indexes TEXT"); err != nil {
		return err
	}
	entries := `CREATE TABLE IF NOT EXISTS "table_index_entries" (
		"org_id" VARCHAR NOT NULL, "table_name" VARCHAR NOT NULL, "index_key" VARCHAR NOT NULL,
		"value_hash" VARCHAR NOT NULL, "row_id" VARCHAR NOT NULL,
		PRIMARY KEY ("org_id", "table_name", "index_key", "value_hash", "row_id"))`
	if !postgres(tx) {
		entries += " WITHOUT ROWID"
	}
	return exec(ctx, tx, entries,
		`CREATE INDEX IF NOT EXISTS "table_index_entries_row" ON "table_index_entries" ("org_id", "table_name", "row_id")`)
}
