package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/svcflow/svcflow/engine"
)

// runStatusChannel is the PostgreSQL notification channel on which UpdateRun announces a
// run that left running; the payload is "<org id>\n<run id>".
const runStatusChannel = "svcflow_run_status"

var _ engine.RunStatusWatcher = (*Store)(nil)

// watchers are the LISTEN loops of a PostgreSQL Store, stopped by Close.
type watchers struct {
	mu      sync.Mutex
	closed  bool
	cancels []context.CancelFunc
	wg      sync.WaitGroup
}

// WatchRunStatus calls fn for every run whose status left running, committed by any
// process on the same PostgreSQL database, until stop is called or the Store closes. It
// listens on a connection of its own (outside the pool, so no query ever waits for it),
// reconnecting after a second when the connection drops; a change committed while it is
// down is not reported (the engine's poll catches it). On SQLite it does nothing: every
// writer shares the process, and the engine's poll covers another process on the file.
func (s *Store) WatchRunStatus(fn func(orgID, runID string)) (stop func()) {
	if s.dialect != dialectPostgres {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.watch.mu.Lock()
	if s.watch.closed {
		s.watch.mu.Unlock()
		cancel()
		return func() {}
	}
	s.watch.cancels = append(s.watch.cancels, cancel)
	s.watch.wg.Add(1)
	s.watch.mu.Unlock()
	go func() {
		defer s.watch.wg.Done()
		for ctx.Err() == nil {
			err := s.listen(ctx, fn)
			if ctx.Err() != nil {
				return
			}
			slog.Warn("store: listening for run status changes failed; reconnecting in 1s", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return cancel
}

func (s *Store) listen(ctx context.Context, fn func(orgID, runID string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig.Copy())
	if err != nil {
		return scrubbed(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+runStatusChannel); err != nil {
		return scrubbed(err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return scrubbed(err)
		}
		if org, run, ok := strings.Cut(n.Payload, "\n"); ok {
			fn(org, run)
		}
	}
}

// stopWatchers ends every LISTEN loop and waits for them.
func (s *Store) stopWatchers() {
	s.watch.mu.Lock()
	s.watch.closed = true
	cancels := s.watch.cancels
	s.watch.cancels = nil
	s.watch.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	s.watch.wg.Wait()
}

// scrubbed keeps a connection failure's message out of logs: pgx's connect errors name the
// server and user of the connection string.
func scrubbed(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return errors.New("cannot connect to the database")
	}
	return err
}
