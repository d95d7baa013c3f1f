package store

import (
	"context"
	"testing"
	"time"

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

// WaitBlockedBehind returns once another caller is blocked behind tx, a transaction of s
// in progress: on SQLite, queued for the one writer that tx holds; on PostgreSQL, waiting
// for a lock that tx's connection holds. It polls (every millisecond) until ctx ends.
func WaitBlockedBehind(ctx context.Context, s *Store, tx storage.Tx) error {
	blocked := func() (bool, error) {
		s.writer.mu.Lock()
		defer s.writer.mu.Unlock()
		return len(s.writer.waiters) > 0, nil
	}
	if s.dialect == dialectPostgres {
		var pid int
		if err := tx.(*storeTx).w.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid); err != nil {
			return err
		}
		blocked = func() (bool, error) {
			var n int
			err := s.read.NewRaw("SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", pid).Scan(ctx, &n)
			return n > 0, err
		}
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := blocked()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
