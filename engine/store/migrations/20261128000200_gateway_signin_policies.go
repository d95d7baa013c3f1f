package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// gatewaySignInPolicies is the gateway's part of migration 20261128000200: who may sign in
// to an organization (gateway_signin_policies), and the public form a session was opened on
// (gateway_sessions.form_id). Its engine part is assigneeRole.
func gatewaySignInPolicies(ctx context.Context, tx bun.Tx) error {
	err := exec(ctx, tx,
		`CREATE TABLE IF NOT EXISTS "gateway_signin_policies" (
			"org_id" VARCHAR NOT NULL, "anyone" BOOLEAN NOT NULL, "domains" text NOT NULL,
			"updated_at" {time} NOT NULL, PRIMARY KEY ("org_id"))`,
	)
	if err != nil {
		return err
	}
	return addColumn(ctx, tx, "gateway_sessions", "form_id VARCHAR NOT NULL DEFAULT ''")
}
