package store

import (
	"context"
	"path/filepath"
	"testing"
)

// OpenTestBunOnly is OpenTest(t, "sqlite") with the prepared step-commit statements of
// sqlitefast.go turned off, so that the suite also covers their bun twins on SQLite.
func OpenTestBunOnly(t testing.TB, opts ...Option) *Store {
	s := OpenTest(t, dialectSQLite, opts...)
	s.prepared.off = true
	s.prepared.close()
	return s
}

// StatementsPrepared reports whether s (SQLite) holds its prepared step-commit statements.
func StatementsPrepared(s *Store) bool {
	return s.prepared != nil && s.prepared.stmts.Load() != nil
}

// openTestFile opens a migrated SQLite store on a file of its own (the WAL, the
// checkpointer and the caches of a file, which OpenTest's memory database lacks), closed
// when the test ends, and returns the file's path.
func openTestFile(t *testing.T) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svcflow.db")
	s, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatalf("store: open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("store: migrate %s: %v", path, err)
	}
	return s, path
}
