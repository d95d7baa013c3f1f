package gwstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Migration 20261128000200: who may sign in (gateway_signin_policies) and the public form
// a session was opened on (gateway_sessions.form_id). Models frozen as of this migration.
// (The engine's migration of the same name keeps its part: form_pauses.assignee_role.)

var migration20261128000200 = migration{
	name:    "20261128000200",
	comment: "gateway sign-in policies; a session's form",
	up: func(ctx context.Context, tx bun.Tx, postgres bool) error {
		if err := createTables(ctx, tx, (*v20SignInPolicy)(nil)); err != nil {
			return err
		}
		return addColumn(ctx, tx, postgres, "gateway_sessions", "form_id", "VARCHAR NOT NULL DEFAULT ''")
	},
}

type v20SignInPolicy struct {
	bun.BaseModel `bun:"table:gateway_signin_policies"`

	OrgID     string    `bun:"org_id,pk"`
	Anyone    bool      `bun:"anyone,notnull"`
	Domains   string    `bun:"domains,type:text,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}
