package store

import "testing"

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
