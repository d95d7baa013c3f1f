package migrations_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway/gwstore/migrations"
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
// by its id.
func TestOneFilePerMigration(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	file := regexp.MustCompile(`^(\d{14})_[a-z0-9_]+\.go$`)
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "migrations.go" {
			continue
		}
		m := file.FindStringSubmatch(name)
		require.NotNil(t, m, "%s: a migration's file is <id>_<what it does>.go", name)
		ids = append(ids, m[1])
	}
	var names []string
	for _, m := range migrations.All() {
		names = append(names, m.Name)
	}
	require.Equal(t, names, slices.Compact(ids))
}
