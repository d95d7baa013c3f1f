package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// assigneeRole is migration 20261128000200: the role a form pause is assigned to. The
// migration of that id had a gateway part too (sign-in policies, a session's form), which is
// the gateway's own now (hosts/gateway/gwstore).
func assigneeRole(ctx context.Context, tx bun.Tx) error {
	return addColumn(ctx, tx, "form_pauses", "assignee_role VARCHAR NOT NULL DEFAULT ''")
}
