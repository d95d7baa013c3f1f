package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// publishedWorkflowVersions records the workflow version a publication put, on the process
// (what it runs) and on the bundle, and the request an idempotency key was first used with.
// A process published before it is taken to run its workflow's version of then (the
// latest: what it ran until now); a key kept before it matches any request.
func publishedWorkflowVersions(ctx context.Context, tx bun.Tx) error {
	for _, c := range []struct{ table, column string }{
		{"studio_processes", "workflow_version INTEGER NOT NULL DEFAULT 0"},
		{"studio_bundles", "workflow_version INTEGER NOT NULL DEFAULT 0"},
		{"idempotency_keys", "request VARCHAR NOT NULL DEFAULT ''"},
	} {
		if err := addColumn(ctx, tx, c.table, c.column); err != nil {
			return err
		}
	}
	return exec(ctx, tx, `UPDATE studio_processes SET workflow_version = COALESCE((SELECT w.version FROM workflows w
		WHERE w.org_id = studio_processes.org_id AND w.id = studio_processes.workflow_id), 0)
		WHERE workflow_id <> '' AND workflow_version = 0`)
}
