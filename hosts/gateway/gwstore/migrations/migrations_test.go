package migrations_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway/gwstore/migrations"
	"github.com/svcflow/svcflow/internal/migrationtest"
)

// shipped is the id of every migration of the gateway a database may have recorded in
// gateway_migrations (and, from before the gateway had its own, in the engine's
// bun_migrations). Append a new migration's id here as well.
var shipped = []string{
	"20261124000140",
	"20261126000150",
	"20261128000200",
}

// TestAllIsTheHistory: All lists every shipped migration under its id, in the order bun
// runs them (by id), each once, each with something to run.
func TestAllIsTheHistory(t *testing.T) {
	t.Parallel()
	require.NoError(t, migrationtest.History(migrations.All(), shipped))
}

// TestOneFilePerMigration: the files of this folder are the migrations of All, each named
// by its id.
func TestOneFilePerMigration(t *testing.T) {
	t.Parallel()
	require.NoError(t, migrationtest.Files(".", migrations.All(), "migrations.go"))
}
