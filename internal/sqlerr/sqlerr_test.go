package sqlerr_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/svcflow/svcflow/internal/sqlerr"
)

// openDBs returns a database of each dialect with a parent table and a child table: SQLite
// in memory with foreign keys enforced (as the stores open it), and PostgreSQL (temporary
// tables on one connection) when SVC_TEST_POSTGRES_DSN is set.
func openDBs(t *testing.T) map[string]*sql.DB {
	t.Helper()
	dbs := map[string]*sql.DB{}
	lite, err := sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)")
	require.NoError(t, err)
	dbs["sqlite"] = lite
	if dsn := os.Getenv("SVC_TEST_POSTGRES_DSN"); dsn != "" {
		pg, err := sql.Open("pgx", dsn)
		require.NoError(t, err)
		dbs["postgres"] = pg
	}
	for name, db := range dbs {
		db.SetMaxOpenConns(1) // an in-memory database, temporary tables: the connection's
		t.Cleanup(func() { _ = db.Close() })
		temp := ""
		if name == "postgres" {
			temp = "TEMPORARY "
		}
		for _, stmt := range []string{
			"CREATE " + temp + "TABLE parent (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, n INTEGER CHECK (n > 0))",
			"CREATE " + temp + "TABLE child (id TEXT PRIMARY KEY, parent_id TEXT NOT NULL REFERENCES parent (id))",
			"INSERT INTO parent (id, name, n) VALUES ('p1', 'one', 1)",
		} {
			_, err := db.Exec(stmt)
			require.NoError(t, err, "%s: %s", name, stmt)
		}
	}
	return dbs
}

func TestViolations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name        string
		stmt        string
		unique, fks bool
	}{
		{"a primary key taken", "INSERT INTO parent (id, name, n) VALUES ('p1', 'two', 1)", true, false},
		{"a unique value taken", "INSERT INTO parent (id, name, n) VALUES ('p2', 'one', 1)", true, false},
		{"no such parent", "INSERT INTO child (id, parent_id) VALUES ('c1', 'p9')", false, true},
		{"a null", "INSERT INTO parent (id, name, n) VALUES ('p3', NULL, 1)", false, false},
		{"a check", "INSERT INTO parent (id, name, n) VALUES ('p4', 'four', 0)", false, false},
		{"bad SQL", "INSERT INTO nowhere VALUES (1)", false, false},
	}
	for name, db := range openDBs(t) {
		for _, c := range cases {
			_, err := db.ExecContext(ctx, c.stmt)
			require.Error(t, err, "%s: %s", name, c.name)
			wrapped := fmt.Errorf("insert: %w", err)
			require.Equal(t, c.unique, sqlerr.IsUniqueViolation(wrapped), "%s: %s: %v", name, c.name, err)
			require.Equal(t, c.fks, sqlerr.IsForeignKeyViolation(wrapped), "%s: %s: %v", name, c.name, err)
		}
	}
	require.False(t, sqlerr.IsUniqueViolation(errors.New("UNIQUE constraint failed")), "not a database's error")
	require.False(t, sqlerr.IsForeignKeyViolation(nil))
}
