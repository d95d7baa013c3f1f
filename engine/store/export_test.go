package store

import (
	"context"
	"testing"

	"github.com/svcflow/svcflow/engine/storage"
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

// HoldWriter takes s's SQLite writer as a claim does (lockWriter) and returns its release.
func HoldWriter(s *Store) func() { return s.lockWriter() }

// OnWriterQueue has queued called each time a caller starts to wait for s's SQLite
// writer, behind it or in a commit group. Set it before the callers start.
func OnWriterQueue(s *Store, queued func()) { s.writer.queued = queued }

// ExecTx runs a statement in tx, a transaction InTx handed to its function.
func ExecTx(ctx context.Context, tx storage.Tx, query string, args ...any) error {
	_, err := tx.(*storeTx).w.ExecContext(ctx, query, args...)
	return err
}

// ExecWriter runs a statement on s's writer, outside any transaction.
func ExecWriter(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.write.ExecContext(ctx, query, args...)
	return err
}

// QueryStrings reads one text column's values through s's writer.
func QueryStrings(ctx context.Context, s *Store, query string) ([]string, error) {
	var out []string
	err := s.write.NewRaw(query).Scan(ctx, &out)
	return out, err
}

const GroupMax = groupMax

// QueryStringsTx reads one text column's values in tx, a transaction InTx handed to its
// function.
func QueryStringsTx(ctx context.Context, tx storage.Tx, query string) ([]string, error) {
	var out []string
	err := tx.(*storeTx).w.NewRaw(query).Scan(ctx, &out)
	return out, err
}
