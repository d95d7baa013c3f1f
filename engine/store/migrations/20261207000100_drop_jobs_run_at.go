package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// dropJobsRunAt drops jobs_run_at (run_at, id), which no query has read since claims walk
// jobs_org_run_at (fair claims): jobs is the hottest table, each job inserted, leased,
// renewed and deleted within milliseconds, and every index on it is written at each insert
// and at each update that cannot be HOT.
func dropJobsRunAt(ctx context.Context, tx bun.Tx) error {
	return exec(ctx, tx, `DROP INDEX IF EXISTS "jobs_run_at"`)
}
