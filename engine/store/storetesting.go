package store

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"modernc.org/sqlite"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// PostgresDSNEnv names the environment variable holding the PostgreSQL server the tests
// use, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable. Tests that need
// PostgreSQL are skipped when it is unset.
const PostgresDSNEnv = "SVC_TEST_POSTGRES_DSN"

// OpenTest opens a fresh, migrated store for one test and closes it when the test ends.
// dialect "sqlite" is a private in-memory database; "postgres" is a new schema, dropped
// when the test ends, in the database named by SVC_TEST_POSTGRES_DSN (skipped when unset).
// opts are Open's (WithNow: the test's clock).
func OpenTest(t testing.TB, dialect string, opts ...Option) *Store {
	t.Helper()
	dsn := "sqlite::memory:"
	if dialect != dialectSQLite {
		dsn = NewTestDSN(t, dialect)
	}
	ctx := context.Background()
	s, err := Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatalf("store.OpenTest: %v", err)
	}
	// Registered after NewTestDSN's cleanup, so it runs first: close, then drop the schema.
	t.Cleanup(func() { _ = s.Close() })
	if dialect == dialectSQLite {
		if err := s.copyMigrated(ctx); err != nil {
			t.Fatalf("store.OpenTest: %v", err)
		}
	}
	// On a copy of the migrated template this applies nothing; it prepares the
	// statements as it does after migrating.
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("store.OpenTest: %v", err)
	}
	return s
}

// CountAllJobs counts the jobs of every organization in s, which must be a *Store: tests use
// it to see a queue drain. It is a test helper on purpose, not a Store method: no engine
// interface reads tenant rows without an org id (DESIGN.md).
func CountAllJobs(tb testing.TB, s storage.Full) int {
	tb.Helper()
	st, ok := s.(*Store)
	if !ok {
		tb.Fatalf("store.CountAllJobs: %T is not a *store.Store", s)
	}
	n, err := st.read.NewSelect().Model((*jobModel)(nil)).Count(context.Background())
	if err != nil {
		tb.Fatalf("store.CountAllJobs: %v", err)
	}
	return int(n)
}

// AllJobs lists the jobs of every organization in s (a *Store), oldest run_at first: tests
// read what is queued, and when. A test helper, like CountAllJobs.
func AllJobs(tb testing.TB, s storage.Full) []svctype.Job {
	tb.Helper()
	st, ok := s.(*Store)
	if !ok {
		tb.Fatalf("store.AllJobs: %T is not a *store.Store", s)
	}
	var ms []jobModel
	if err := st.read.NewSelect().Model(&ms).Order("run_at", "id").Scan(context.Background()); err != nil {
		tb.Fatalf("store.AllJobs: %v", err)
	}
	jobs := make([]svctype.Job, len(ms))
	for i := range ms {
		jobs[i] = ms[i].toJob()
	}
	return jobs
}

// NewTestDSN returns a connection string to an empty database for one test, not yet
// migrated: for "sqlite" a file in the test's temporary directory (so that several Opens
// share it), for "postgres" a new schema named t_<random> (via search_path), dropped when
// the test ends; skipped when SVC_TEST_POSTGRES_DSN is unset.
func NewTestDSN(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case dialectSQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "svcflow.db")
	case dialectPostgres:
	default:
		t.Fatalf("store.NewTestDSN: unknown dialect %q", dialect)
	}
	base := os.Getenv(PostgresDSNEnv)
	if base == "" {
		t.Skip(PostgresDSNEnv + " is unset: skipping a PostgreSQL test")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("store.NewTestDSN: %s is not a URL", PostgresDSNEnv)
	}
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("store.NewTestDSN: %v", err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		_ = admin.Close()
		t.Fatalf("store.NewTestDSN: create schema: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("store.NewTestDSN: drop schema %s: %v", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// StatementCounter counts, by their first words, the statements a PostgreSQL store sends:
// each one a round trip (pgx's tracer sees every query, rendered by bun or prepared), but a
// BEGIN sent with the statement after it (PipelinedPrefix, RoundTrips). It
// keeps the first text of each kind, so that a listing can say what each kind is.
type StatementCounter struct {
	mu      sync.Mutex
	by      map[string]int
	example map[string]string
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	key := statementKey(data.SQL)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by, c.example = map[string]int{}, map[string]string{}
	}
	c.by[key]++
	if _, ok := c.example[key]; !ok {
		c.example[key] = data.SQL
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// PipelinedPrefix starts the key of a statement counted that went to the server in one
// round trip with the statement after it (a transaction's BEGIN with its first statement):
// a statement all the same, but no round trip of its own.
const PipelinedPrefix = "pipelined "

// TraceBatchStart implements pgx.BatchTracer: each statement of the batch is counted, the
// ones before its last under PipelinedPrefix.
func (c *StatementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if data.Batch == nil {
		return ctx
	}
	qs := data.Batch.QueuedQueries
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by, c.example = map[string]int{}, map[string]string{}
	}
	for i, q := range qs {
		key := statementKey(q.SQL)
		if i < len(qs)-1 {
			key = PipelinedPrefix + key
		}
		c.by[key]++
		if _, ok := c.example[key]; !ok {
			c.example[key] = q.SQL
		}
	}
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// RoundTrips is the round trips of counts (Take's): its statements but those that went
// with the next one.
func RoundTrips(counts map[string]int) int {
	n := 0
	for k, v := range counts {
		if !strings.HasPrefix(k, PipelinedPrefix) {
			n += v
		}
	}
	return n
}

// Take returns the counts so far and starts again.
func (c *StatementCounter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.by
	c.by = map[string]int{}
	return out
}

// Example is the first statement text counted under key (a key of Take's map).
func (c *StatementCounter) Example(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.example[key]
}

// statementKey names a statement by its verb and first table, and by a hash of its text
// without its literals, so that two statements of one table are told apart:
// "INSERT table_rows #3fa2".
func statementKey(q string) string {
	f := strings.Fields(strings.NewReplacer(`"`, " ", "(", " ", ",", " ").Replace(q))
	if len(f) == 0 {
		return "?"
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(lists.ReplaceAllString(literals.ReplaceAllString(q, "?"), "?")))
	tag := fmt.Sprintf(" #%04x", h.Sum32()&0xffff)
	verb := strings.ToUpper(f[0])
	for i := 1; i < len(f); i++ {
		switch strings.ToUpper(f[i-1]) {
		case "INTO", "FROM", "UPDATE":
			return verb + " " + f[i] + tag
		}
	}
	return verb + tag
}

// literals matches a statement's quoted strings and numbers, lists a list of them.
var (
	literals = regexp.MustCompile(`'(?:[^']|'')*'|\b\d+\b`)
	lists    = regexp.MustCompile(`\?(?:, \?)+`)
)

// OpenCountingPostgres opens and migrates a PostgreSQL store at dsn, as Open does, whose
// statements c counts.
func OpenCountingPostgres(tb testing.TB, dsn string, c *StatementCounter) *Store {
	tb.Helper()
	s, err := openPostgres(dsn, c)
	if err != nil {
		tb.Fatalf("store.OpenCountingPostgres: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	if err := s.ping(ctx); err != nil {
		tb.Fatalf("store.OpenCountingPostgres: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		tb.Fatalf("store.OpenCountingPostgres: %v", err)
	}
	return s
}

// WaitBlockedBehind returns once another caller is blocked behind tx, a transaction of s
// in progress: on SQLite, queued for the one writer that tx holds; on PostgreSQL, waiting
// for a lock that tx's connection holds. It polls (every millisecond) until ctx ends.
// A test helper, like CountAllJobs: it reads the database's sessions.
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

// migratedSQLite is the process's one migrated sqlite::memory: database, kept open for the
// process's life: OpenTest copies it into each new SQLite store (the backup API, page by
// page) instead of migrating each one. Migrating was a quarter of the CPU of a package of
// HTTP tests under -race (hosts/runtime: 85 s of 371 s sampled); the copy is the same
// pages Migrate writes into an empty database (no migration writes a random value or a
// time), and the migrations themselves are tested on empty databases by this package's
// migration tests, which open with Open and Migrate, not OpenTest.
var migratedSQLite struct {
	once sync.Once
	uri  string
	err  error
}

// copyMigrated fills s, a new sqlite::memory: store, with the migrated template's pages.
func (s *Store) copyMigrated(ctx context.Context) error {
	migratedSQLite.once.Do(func() {
		tmpl, err := Open(ctx, "sqlite::memory:")
		if err != nil {
			migratedSQLite.err = err
			return
		}
		migratedSQLite.uri, migratedSQLite.err = tmpl.memory, tmpl.Migrate(ctx)
	})
	if migratedSQLite.err != nil {
		return fmt.Errorf("migrated template: %w", migratedSQLite.err)
	}
	conn, err := s.write.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		r, ok := dc.(interface {
			NewRestore(srcURI string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("copy the migrated template: %T has no NewRestore", dc)
		}
		b, err := r.NewRestore(migratedSQLite.uri)
		if err != nil {
			return fmt.Errorf("copy the migrated template: %w", err)
		}
		_, err = b.Step(-1)
		if ferr := b.Finish(); err == nil {
			err = ferr
		}
		if err != nil {
			return fmt.Errorf("copy the migrated template: %w", err)
		}
		return nil
	})
}
