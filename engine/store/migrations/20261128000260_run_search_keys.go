package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// runSearchKeys is migration 20261128000260: the search key index. A run whose workflow
// declares search keys has one row per value they found in its input, written with the
// run; GET /runs?key= reads it newest first, the primary key's order.
func runSearchKeys(ctx context.Context, tx bun.Tx) error {
	return exec(ctx, tx, `CREATE TABLE IF NOT EXISTS "run_search_keys" (
		"org_id" VARCHAR NOT NULL, "value" VARCHAR NOT NULL, "created_at" {time} NOT NULL,
		"run_id" VARCHAR NOT NULL, PRIMARY KEY ("org_id", "value", "created_at", "run_id"))`)
}
