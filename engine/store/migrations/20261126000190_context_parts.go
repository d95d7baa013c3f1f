package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// contextParts gives each run context value its size, and keeps a large array in parts
// (run_context_parts), the run_context row holding how it is split.
func contextParts(ctx context.Context, tx bun.Tx) error {
	for _, column := range []string{"size BIGINT NOT NULL DEFAULT 0", "parts INTEGER NOT NULL DEFAULT 0"} {
		if err := addColumn(ctx, tx, "run_context", column); err != nil {
			return err
		}
	}
	return exec(ctx, tx,
		`CREATE TABLE IF NOT EXISTS "run_context_parts" (
			"org_id" VARCHAR NOT NULL, "run_id" VARCHAR NOT NULL, "key" VARCHAR NOT NULL,
			"part" {int} NOT NULL, "value" text NOT NULL,
			PRIMARY KEY ("org_id", "run_id", "key", "part"))`,
	)
}
