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
// runStatusChannel (payload "<org id>\n<run id>"); EnqueueJob, a run's start and a
// RenewJob that frees a lease announce a job ready to claim on jobsChannel (payload: its
// id), so that a worker in another process (one: claimers.go) claims it at once instead of
// at its next poll.
const (
	runStatusChannel = "svcflow_run_status"
	jobsChannel      = "svcflow_jobs" // with a search_path, see jobsChannelOf
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

	// Wake-one (claimers.go): joined says the connection in place was opened as a
	// claimer, which it is when the Store had job watchers then; rejoin ends a connection
	// opened without, so that the next one joins.
	joined bool
	rejoin context.CancelFunc
	turn   claimTurn
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
	if l.started && !l.joined && len(l.jobs) > 0 && l.rejoin != nil {
		l.rejoin() // the connection reopens as a claimer's (claimers.go)
	}
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
		if errors.Is(err, errRejoin) {
			continue
		}
		slog.Warn("store: listening for notifications failed; reconnecting in 1s", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listenOnce(ctx context.Context) error {
	l := &s.listen
	connCtx, rejoin := context.WithCancelCause(ctx)
	defer rejoin(nil)
	cfg := s.pgConfig.Copy()
	l.mu.Lock()
	claimer := len(l.jobs) > 0
	l.joined = claimer
	l.rejoin = func() { rejoin(errRejoin) }
	l.mu.Unlock()
	name := ""
	if claimer {
		name = claimerName(cfg)
		cfg.RuntimeParams["application_name"] = name
	}
	conn, err := pgx.ConnectConfig(connCtx, cfg)
	if err != nil {
		return rejoined(connCtx, scrubbed(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{runStatusChannel, s.jobsChannel} {
		if _, err := conn.Exec(connCtx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return rejoined(connCtx, scrubbed(err))
		}
	}
	l.readyOnce.Do(func() { close(l.ready) })
	if claimer {
		refreshed := make(chan struct{})
		defer func() {
			rejoin(nil)
			<-refreshed
		}()
		go func() { defer close(refreshed); s.followClaimers(connCtx, name, conn.PgConn().PID()) }()
	}
	defer l.turn.set(-1, 0)
	for {
		n, err := conn.WaitForNotification(connCtx)
		if err != nil {
			return rejoined(connCtx, scrubbed(err))
		}
		s.dispatch(n)
	}
}

// rejoined is err, or errRejoin when the connection was ended to reopen as a claimer's.
func rejoined(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errRejoin) {
		return errRejoin
	}
	return err
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
	case s.jobsChannel:
		if !l.turn.mine(n.Payload) {
			break // another worker process claims it (claimers.go)
		}
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
