package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// orgFeatures creates the organizations' feature switches.
func orgFeatures(ctx context.Context, tx bun.Tx) error {
	return exec(ctx, tx,
		`CREATE TABLE IF NOT EXISTS "org_features" (
			"org_id" VARCHAR NOT NULL,
			"agent_forms" BOOLEAN NOT NULL,
			"updated_at" {time} NOT NULL,
			PRIMARY KEY ("org_id"))`,
	)
}
