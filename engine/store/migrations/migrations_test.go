package migrations_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store/migrations"
	"github.com/svcflow/svcflow/internal/migrationtest"
)

// shipped is the id of every migration of the engine a database may have recorded in
// bun_migrations. A migration's id never changes once it has shipped: a database migrated
// by an older build would run it again under its new id. Append a new migration's id here
// as well. 20261124000140 and 20261126000150 were the gateway's tables, which are the
// gateway's own migrations now (hosts/gateway/gwstore, recorded in gateway_migrations under
// the same ids); a database keeps their old records here, which the engine ignores.
var shipped = []string{
	"20250601000001",
	"20261122000001",
	"20261123000001",
	"20261123000010",
	"20261123000020",
	"20261123000030",
	"20261123000040",
	"20261123000050",
	"20261123000060",
	"20261123000070",
	"20261123000080",
	"20261123000090",
	"20261123000100",
	"20261123000110",
	"20261123000120",
	"20261124000130",
	"20261126000160",
	"20261126000170",
	"20261126000180",
	"20261126000190",
	"20261128000200",
	"20261128000230",
	"20261128000260",
	"20261128001500",
	"20261207000100",
	"20261207000200",
	"20261208000100",
}

// TestAllIsTheHistory: All lists every shipped migration under its id, in the order bun
// runs them (by id), each once, each with something to run.
func TestAllIsTheHistory(t *testing.T) {
	t.Parallel()
	require.NoError(t, migrationtest.History(migrations.All(), shipped))
}

// TestOneFilePerMigration: the files of this folder are the migrations of All, each named
// by its id (a migration in two parts has two files with its id).
func TestOneFilePerMigration(t *testing.T) {
	t.Parallel()
	require.NoError(t, migrationtest.Files(".", migrations.All(), "migrations.go", "sql.go"))
}
