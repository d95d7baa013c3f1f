package migrations_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store/migrations"
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
}

// TestAllIsTheHistory: All lists every shipped migration under its id, in the order bun
// runs them (by id), each once, each with something to run.
func TestAllIsTheHistory(t *testing.T) {
	t.Parallel()
	id := regexp.MustCompile(`^\d{14}$`)
	var names []string
	for i, m := range migrations.All() {
		require.Regexp(t, id, m.Name, "an id is a timestamp, YYYYMMDDhhmmss")
		require.NotEmpty(t, m.Comment, m.Name)
		require.NotNil(t, m.Up, m.Name)
		if i > 0 {
			require.Less(t, names[i-1], m.Name, "ids in strictly increasing order: a new migration goes at the end")
		}
		names = append(names, m.Name)
	}
	require.Equal(t, shipped, names)
}

// TestOneFilePerMigration: the files of this folder are the migrations of All, each named
// by its id (a migration in two parts has two files with its id).
func TestOneFilePerMigration(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	file := regexp.MustCompile(`^(\d{14})_[a-z0-9_]+\.go$`)
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "migrations.go" || name == "sql.go" {
			continue
		}
		m := file.FindStringSubmatch(name)
		require.NotNil(t, m, "%s: a migration's file is <id>_<what it does>.go", name)
		ids = append(ids, m[1])
	}
	ids = slices.Compact(ids)
	var names []string
	for _, m := range migrations.All() {
		names = append(names, m.Name)
	}
	require.Equal(t, names, ids)
}
