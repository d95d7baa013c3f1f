package migrationtest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/migrate"

	"github.com/svcflow/svcflow/internal/migrationtest"
)

func up(context.Context, *migrate.Migrator, *migrate.Migration) error { return nil }

func history() []migrate.Migration {
	return []migrate.Migration{
		{Name: "20261124000140", Comment: "accounts", Up: up},
		{Name: "20261126000150", Comment: "sign_in", Up: up},
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	shipped := []string{"20261124000140", "20261126000150"}
	require.NoError(t, migrationtest.History(history(), shipped))

	cases := map[string]struct {
		edit    func(ms []migrate.Migration) []migrate.Migration
		shipped []string
		says    string
	}{
		"an id not a timestamp": {func(ms []migrate.Migration) []migrate.Migration { ms[1].Name = "2026112600015"; return ms }, shipped, "YYYYMMDDhhmmss"},
		"no comment":            {func(ms []migrate.Migration) []migrate.Migration { ms[0].Comment = ""; return ms }, shipped, "no comment"},
		"nothing to run":        {func(ms []migrate.Migration) []migrate.Migration { ms[1].Up = nil; return ms }, shipped, "Up is nil"},
		"out of order": {func(ms []migrate.Migration) []migrate.Migration { return []migrate.Migration{ms[1], ms[0]} },
			[]string{"20261126000150", "20261124000140"}, "strictly increasing"},
		"twice":                {func(ms []migrate.Migration) []migrate.Migration { return append(ms, ms[1]) }, append(shipped, shipped[1]), "strictly increasing"},
		"a shipped id renamed": {func(ms []migrate.Migration) []migrate.Migration { ms[1].Name = "20261126000151"; return ms }, shipped, "never changes"},
		"a new one not listed": {func(ms []migrate.Migration) []migrate.Migration {
			return append(ms, migrate.Migration{Name: "20261128000200", Comment: "policies", Up: up})
		}, shipped, "never changes"},
		"a shipped one gone": {func(ms []migrate.Migration) []migrate.Migration { return ms[:1] }, shipped, "never changes"},
	}
	for name, c := range cases {
		err := migrationtest.History(c.edit(history()), c.shipped)
		require.ErrorContains(t, err, c.says, name)
	}
}

// folder writes empty files of these names into a new folder.
func folder(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	return dir
}

func TestFiles(t *testing.T) {
	t.Parallel()
	good := []string{"20261124000140_accounts.go", "20261126000150_sign_in.go", "20261126000150_sign_in_data.go",
		"migrations.go", "migrations_test.go", "README.txt"}
	require.NoError(t, migrationtest.Files(folder(t, good...), history(), "migrations.go"))

	cases := map[string]struct {
		files []string
		skip  []string
		says  string
	}{
		"a helper file not skipped": {append(good, "sql.go"), []string{"migrations.go"}, "sql.go: a migration's file"},
		"a file badly named":        {[]string{"20261124000140-accounts.go", "20261126000150_sign_in.go"}, nil, "20261124000140-accounts.go"},
		"a migration without file":  {[]string{"20261124000140_accounts.go"}, nil, "the files' ids"},
		"a file without migration":  {append(good, "20261128000200_policies.go"), []string{"migrations.go"}, "the files' ids"},
		"files out of order of All": {[]string{"20261126000150_a.go", "20261124000140_z.go"}, nil, ""},
	}
	for name, c := range cases {
		err := migrationtest.Files(folder(t, c.files...), history(), c.skip...)
		if c.says == "" {
			require.NoError(t, err, name) // a folder lists its files by name, so by id
			continue
		}
		require.ErrorContains(t, err, c.says, name)
	}
	require.Error(t, migrationtest.Files(filepath.Join(t.TempDir(), "none"), history()))
}
