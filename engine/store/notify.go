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

	"github.com/svcflow/svcflow/engine/storage"
)

// PostgreSQL notification channels. UpdateRun announces a run that left running on
// runStatusChannel (payload "<org id>\n<run id>"); EnqueueJob and a RenewJob that frees a
// lease announce a job ready to claim on jobsChannel (no payload), so a worker in another
// process claims it at once instead of at its next poll.
const (
	runStatusChannel = "svcflow_run_status"
	jobsChannel      = "svcflow_jobs"
	// listenReadyTimeout bounds how long the first watcher waits for LISTEN.
	listenReadyTimeout = 5 * time.Second
)

var (
	_ storage.RunStatusWatcher = (*Store)(nil)
	_ storage.JobWatcher       = (*Store)(nil)
)

// listener is the one LISTEN connection of a PostgreSQL Store, shared by every watcher
// and started by the first one; Close stops it.
type listener struct {
	mu        sync.Mutex
	closed    bool
	started   bool
	cancel    context.CancelFunc
	done      chan struct{}
	ready     chan struct{} // closed once the first LISTEN is in place
	readyOnce sync.Once
	next      int
	status    map[int]func(orgID, runID string)
	jobs      map[int]func()
}

// WatchRunStatus calls fn for every run whose status left running, committed by any
// process on the same PostgreSQL database, until stop is called or the Store closes. On
// SQLite it does nothing: every writer shares the process, and the engine's poll covers
// another process on the same file.
func (s *Store) WatchRunStatus(fn func(orgID, runID string)) (stop func()) {
	return s.watch(func(l *listener, id int) { l.status[id] = fn })
}

// WatchJobs calls fn whenever any process on the same PostgreSQL database makes a job
// claimable, until stop is called or the Store closes; nothing on SQLite.
func (s *Store) WatchJobs(fn func()) (stop func()) {
	return s.watch(func(l *listener, id int) { l.jobs[id] = fn })
}

// watch registers a callback and starts the listening connection on first use. It listens
// on a connection of its own (outside the pool, so no query ever waits for it) and
// reconnects a second after the connection drops; a change committed while it is down is
// not reported (the engine's poll catches run statuses, the worker's poll jobs).
func (s *Store) watch(add func(l *listener, id int)) (stop func()) {
	if s.dialect != dialectPostgres {
		return func() {}
	}
	l := &s.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return func() {}
	}
	if l.status == nil {
		l.status, l.jobs = map[int]func(string, string){}, map[int]func(){}
	}
	id := l.next
	l.next++
	add(l, id)
	if !l.started {
		l.started = true
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done, l.ready = cancel, make(chan struct{}), make(chan struct{})
		go s.listenLoop(ctx, l.done)
	}
	// The first watcher waits (briefly) for LISTEN to be in place, so that what it reads
	// next cannot predate a change it would then miss.
	ready := l.ready
	l.mu.Unlock()
	select {
	case <-ready:
	case <-time.After(listenReadyTimeout):
	}
	l.mu.Lock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.status, id)
		delete(l.jobs, id)
	}
}

func (s *Store) listenLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("store: listening for notifications failed; reconnecting in 1s", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig.Copy())
	if err != nil {
		return scrubbed(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{runStatusChannel, jobsChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return scrubbed(err)
		}
	}
	s.listen.readyOnce.Do(func() { close(s.listen.ready) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return scrubbed(err)
		}
		s.dispatch(n)
	}
}

func (s *Store) dispatch(n *pgconn.Notification) {
	l := &s.listen
	l.mu.Lock()
	var status []func(string, string)
	var jobs []func()
	switch n.Channel {
	case runStatusChannel:
		for _, fn := range l.status {
			status = append(status, fn)
		}
	case jobsChannel:
		for _, fn := range l.jobs {
			jobs = append(jobs, fn)
		}
	}
	l.mu.Unlock()
	if org, run, ok := strings.Cut(n.Payload, "\n"); ok {
		for _, fn := range status {
			fn(org, run)
		}
	}
	for _, fn := range jobs {
		fn()
	}
}

// stopListening ends the LISTEN connection and waits for it.
func (s *Store) stopListening() {
	l := &s.listen
	l.mu.Lock()
	l.closed = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
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
