package migrations

import (
	"context"

	"github.com/uptrace/bun"

	schema "github.com/svcflow/svcflow/engine/store/migrations"
)

// signInPolicies is who may sign in to an organization (gateway_signin_policies), and the
// public form a session was opened on (gateway_sessions.form_id). (The engine's migration
// of the same id, from when the two were one, keeps its own part: form_pauses.assignee_role.)
func signInPolicies(ctx context.Context, tx bun.Tx) error {
	err := schema.Exec(ctx, tx,
		`CREATE TABLE IF NOT EXISTS "gateway_signin_policies" (
			"org_id" VARCHAR NOT NULL, "anyone" BOOLEAN NOT NULL, "domains" text NOT NULL,
			"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id"))`,
	)
	if err != nil {
		return err
	}
	return schema.AddColumn(ctx, tx, "gateway_sessions", "form_id VARCHAR NOT NULL DEFAULT ''")
}
