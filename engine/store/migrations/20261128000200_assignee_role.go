package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// assigneeRole is the engine's part of migration 20261128000200: the role a form pause is
// assigned to. Its gateway part is gatewaySignInPolicies.
func assigneeRole(ctx context.Context, tx bun.Tx) error {
	return addColumn(ctx, tx, "form_pauses", "assignee_role VARCHAR NOT NULL DEFAULT ''")
}
