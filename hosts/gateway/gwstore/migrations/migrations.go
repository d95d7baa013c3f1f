// Package migrations is the schema history of the gateway's store (hosts/gateway/gwstore),
// written as the engine's (engine/store/migrations, whose helpers it uses): one file per
// migration, named by its id, and All, the list of them in the order they run. The store
// records them in gateway_migrations, apart from the engine's bun_migrations.
//
// These migrations were the engine's until the gateway had a store of its own: a database
// migrated before that has the tables already, and the engine's records of them. Every
// statement is IF NOT EXISTS or guarded by a look at the schema, so on such a database the
// migrations adopt the tables and every row in them, and record themselves; run twice, or
// by two processes at once, they converge. A migration's id never changes once it has
// shipped, and a shipped migration is never edited: a change is a new file and a new line
// at the end of All.
package migrations

import (
	"github.com/uptrace/bun/migrate"

	schema "github.com/svcflow/svcflow/engine/store/migrations"
)

// All returns every migration of the gateway, in the order they run: by id, oldest first.
// The ids are those they had in the engine's history.
func All() []migrate.Migration {
	return []migrate.Migration{
		{Name: "20261124000140", Comment: "gateway accounts, orgs, keys and usage", Up: schema.InTx(accounts)},
		{Name: "20261126000150", Comment: "gateway sign-in codes, sessions, approver roles, tiers, licenses; account tier", Up: schema.InTx(signIn)},
		{Name: "20261128000200", Comment: "gateway sign-in policies; a session's form", Up: schema.InTx(signInPolicies)},
	}
}
