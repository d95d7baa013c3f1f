package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
)

// sqliteExec runs statements on the SQLite database at dsn outside any Store, to put it in
// a state no svcflow release leaves it in.
func sqliteExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite:"))
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range stmts {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}
}

func migratedSQLite(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dsn := store.NewTestDSN(t, "sqlite")
	s, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	require.True(t, store.StatementsPrepared(s), "Migrate prepares")
	require.NoError(t, s.Close())
	return dsn
}

func noop(context.Context, storage.Tx) error { return nil }

// TestPrepareFailureSurfaces: on SQLite the step-commit statements are prepared once the
// schema is current; if that fails with the schema current, the failure is an error (of
// Open, or of the first InTx when another process migrated after Open), not a silent
// fallback to the slower bun path.
func TestPrepareFailureSurfaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Open", func(t *testing.T) {
		t.Parallel()
		dsn := migratedSQLite(t)
		sqliteExec(t, dsn, `DROP TABLE run_context`) // migrated, yet a statement cannot compile
		s, err := store.Open(ctx, dsn)
		if err == nil {
			_ = s.Close()
		}
		require.ErrorContains(t, err, "prepare")
		require.ErrorContains(t, err, "run_context")
	})

	t.Run("first InTx after another process migrated", func(t *testing.T) {
		t.Parallel()
		dsn := store.NewTestDSN(t, "sqlite")
		early, err := store.Open(ctx, dsn) // not migrated yet: nothing to prepare
		require.NoError(t, err)
		t.Cleanup(func() { _ = early.Close() })
		require.False(t, store.StatementsPrepared(early))

		other, err := store.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })
		require.NoError(t, other.Migrate(ctx))
		sqliteExec(t, dsn, `DROP TABLE run_context`)

		require.ErrorContains(t, early.InTx(ctx, noop), "prepare", "the first caller gets the error")
		require.False(t, store.StatementsPrepared(early))
	})
}

// TestPrepareWhenSchemaCurrent: a database not migrated yet, or migrated by an older
// release, opens without its statements (the one expected failure to prepare), and gets
// them as soon as the schema is current: from Migrate, or from the first InTx after another
// process migrated.
func TestPrepareWhenSchemaCurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("older schema", func(t *testing.T) {
		t.Parallel()
		dsn := migratedSQLite(t)
		// As an older release left it: without the last migration (run_retries and
		// run_operations). Its undoing must be whole: a column dropped that Migrate then
		// does not add back (the jobs' claims, once the last) is no schema any release
		// left, and the claim's prepared statement names it.
		sqliteExec(t, dsn,
			`DELETE FROM bun_migrations WHERE name = (SELECT max(name) FROM bun_migrations)`,
			`DROP TABLE run_retries`,
			`DROP TABLE run_operations`)
		s, err := store.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.False(t, store.StatementsPrepared(s))
		require.NoError(t, s.Migrate(ctx))
		require.True(t, store.StatementsPrepared(s))
	})

	t.Run("migrated by another process", func(t *testing.T) {
		t.Parallel()
		dsn := store.NewTestDSN(t, "sqlite")
		early, err := store.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = early.Close() })
		other, err := store.Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })
		require.NoError(t, other.Migrate(ctx))

		require.False(t, store.StatementsPrepared(early))
		require.NoError(t, early.InTx(ctx, noop))
		require.True(t, store.StatementsPrepared(early), "the first InTx prepares")
	})

	t.Run("reopened", func(t *testing.T) {
		t.Parallel()
		s, err := store.Open(ctx, migratedSQLite(t))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.True(t, store.StatementsPrepared(s), "Open prepares on a current schema")
	})
}
