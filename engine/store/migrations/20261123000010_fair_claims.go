package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// fairClaims is fair claiming. jobs_org_run_at lets the claim walk the organizations with
// jobs (one index probe each) and read each one's oldest due jobs; claims counts every
// lease taken on a job, never reset.
func fairClaims(ctx context.Context, tx bun.Tx) error {
	if err := addColumn(ctx, tx, "jobs", "claims BIGINT NOT NULL DEFAULT 0"); err != nil {
		return err
	}
	return exec(ctx, tx, `CREATE INDEX IF NOT EXISTS "jobs_org_run_at" ON "jobs" ("org_id", "run_at", "id")`)
}
