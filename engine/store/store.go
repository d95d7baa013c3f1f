// Package store is the bun implementation of every engine store, for SQLite and
// PostgreSQL, and the migrations that create their schema. It is the only place in the
// project that holds SQL: the engine declares what it needs (storage.Full, storage.Tx) and
// sees engine types only, never a bun model.
//
// Open takes one connection-string form everywhere: sqlite:PATH, sqlite::memory: (a private
// in-memory database per call) or postgres://... . On SQLite every write goes through one
// writer connection (WAL, synchronous=NORMAL), which is what makes job claiming safe
// without row locks; plain reads use a separate pool. On PostgreSQL one pool serves both
// and ClaimJobs uses FOR UPDATE SKIP LOCKED so many workers can share the jobs table.
//
// Every tenant query carries the org id: another organization's resource is not found.
// Errors wrap storage.ErrNotFound, storage.ErrConflict and storage.ErrLeaseLost, and never
// carry SQL text.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Dialect names returned by Store.Dialect.
const (
	dialectSQLite   = "sqlite"
	dialectPostgres = "postgres"
)

const (
	sqliteReadConns   = 4
	postgresPoolConns = 20
	// postgresClaimConns is the claim pool's size (pgclaim.go): a worker claims from one
	// goroutine, so one connection serves it; a second lets a Work or a test claim beside it.
	postgresClaimConns = 2
	sqliteBusyTimeout  = 10 * time.Second
	// sqliteCacheSize is the page cache of the readers and the checkpointer: 16 MiB
	// (openSQLite); the writer's is writerPragmas'.
	sqliteCacheSize = "cache_size(-16384)"
)

// Store is an storage.Full over a bun database.
type Store struct {
	querier
	write    *bun.DB
	read     *bun.DB // the same as write on PostgreSQL
	claims   *sql.DB // PostgreSQL only: the claims' pool, synchronous_commit off (pgclaim.go)
	dialect  string
	prepared *sqlitePrepared // nil on PostgreSQL
	memory   string          // sqlite::memory: only: the shared-cache database's URI

	writer      fifoMutex       // SQLite only: see lockWriter
	writerBusy  atomic.Int64    // SQLite only: nanoseconds the writer was held (WriterBusy)
	checkpoints *checkpointer   // SQLite files only: checkpoint.go
	pgConfig    *pgx.ConnConfig // PostgreSQL only: for connections outside the pool (LISTEN)
	listen      listener
}

// roundRobin is where a Store's fair claim resumes: the organization it last took a job
// from.
type roundRobin struct {
	sync.Mutex
	lastOrg string
}

var (
	_ storage.Full = (*Store)(nil)
	_ storage.All  = (*storeTx)(nil)
	_ storage.Tx   = (*storeTx)(nil)
)

// Option configures a Store at Open.
type Option func(*Store)

// WithNow sets the store's clock, nil meaning time.Now: the time it stamps on what it
// writes and the now against which it sets and compares job leases and run_at. A test
// hands the store the clock it hands the engine (engine.Config.Now), so that moving that
// clock makes a timer due or a lease expire without waiting. Every process sharing a
// database must keep clocks that agree (docs/decisions.md, "The store's clock").
func WithNow(now func() time.Time) Option {
	return func(s *Store) { s.clock = now }
}

// Open connects to the database named by dsn: sqlite:PATH, sqlite::memory: or
// postgres://... (postgresql:// too). It does not migrate; call Migrate.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	var (
		s   *Store
		err error
	)
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		s, err = openSQLite(strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s, err = openPostgres(dsn, nil)
	default:
		// The DSN is not repeated: it may hold a password.
		return nil, errors.New("store: unsupported connection string: want sqlite:PATH, sqlite::memory: or postgres://...")
	}
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(s)
	}
	if err := s.ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.prepareStatements(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func openSQLite(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: sqlite: empty path")
	}
	pragmas := url.Values{}
	pragmas.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	pragmas.Add("_pragma", "foreign_keys(1)")
	var name string
	if path == ":memory:" {
		// A uniquely named shared-cache memory database, so that the writer and the readers
		// see the same data and no two Open calls share one. Memory databases cannot use WAL:
		// shared-cache locking is per table, and a read of a table that an open transaction
		// has written waits for it to end (the driver uses unlock_notify), so a reader never
		// sees uncommitted data. Do not read through the Store inside InTx's fn: use the Tx.
		name = "file:svcflow-" + uuid.NewString() + "?mode=memory&cache=shared"
	} else {
		pragmas.Add("_pragma", "journal_mode(WAL)")
		pragmas.Add("_pragma", "synchronous(NORMAL)")
		// Each step is a small commit: pages read through mmap (3-step runs from ~495 to
		// ~540 runs/s, step p99 from ~23 ms to ~10 ms with the checkpoints below;
		// docs/performance.md). A page cache of 16 MiB a connection: 64 MiB, each of the
		// writer, the readers and the checkpointer, measured no faster (runs, keyed reads
		// on a million rows, foreach writes) and held about 100 MiB more while a large
		// output was written (docs/decisions.md). No commit checkpoints: a goroutine does,
		// with a connection of its own (checkpoint.go); the WAL is cut back to 64 MiB after
		// a checkpoint.
		pragmas.Add("_pragma", sqliteCacheSize)
		pragmas.Add("_pragma", "wal_autocheckpoint(0)")
		pragmas.Add("_pragma", "journal_size_limit(67108864)")
		pragmas.Add("_pragma", "mmap_size(268435456)")
		name = path // a plain path; a file: URI passes through as such
	}
	sep := "?"
	if strings.Contains(name, "?") {
		sep = "&"
	}
	// One writer: every write and every transaction. IMMEDIATE takes the write lock at
	// BEGIN, so another process on the same file waits (busy_timeout) instead of failing
	// when its transaction first writes.
	writer, err := sql.Open("sqlite", name+sep+writerPragmas(pragmas).Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)

	readPragmas := url.Values{}
	for _, p := range pragmas["_pragma"] {
		readPragmas.Add("_pragma", p)
	}
	readPragmas.Add("_pragma", "query_only(1)")
	reader, err := sql.Open("sqlite", name+sep+readPragmas.Encode())
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("store: sqlite: %w", err)
	}
	reader.SetMaxOpenConns(sqliteReadConns)
	reader.SetMaxIdleConns(sqliteReadConns)
	reader.SetConnMaxLifetime(0)
	reader.SetConnMaxIdleTime(0)

	w := bun.NewDB(writer, sqlitedialect.New())
	r := bun.NewDB(reader, sqlitedialect.New())
	s := newStore(w, r, dialectSQLite)
	s.prepared = &sqlitePrepared{db: writer, read: r}
	if path == ":memory:" {
		s.memory = name
	}
	s.querier.prepared = s.prepared
	if path != ":memory:" {
		if s.checkpoints, err = startCheckpointer(name+sep+pragmas.Encode(), checkpointEvery); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("store: sqlite: %w", err)
		}
	}
	return s, nil
}

// writerPragmas are the writer connection's: pragmas, with a page cache of 4 MiB that may
// hold 16 MiB of a transaction's changes before it spills them. A commit that split a
// B-tree page ends by scanning the whole hash table of the writer's cache (SQLite's
// balance_nonroot renumbers pages through the lock page's number, and the commit's
// pcache1Truncate then takes the general path), so the table's size is paid at most
// commits: 5-6 % of make bench-runs' CPU with 16 MiB (4,096 pages), 1.0-1.4 % with 4 MiB
// (docs/performance.md, "SQLite: the cost of a run (issue 35, sixth session)"). The spill
// threshold stays at the readers' 16 MiB, so a large transaction's pages stay in memory
// until its commit, as before.
func writerPragmas(pragmas url.Values) url.Values {
	w := url.Values{}
	for _, p := range pragmas["_pragma"] {
		if p != sqliteCacheSize {
			w.Add("_pragma", p)
			continue
		}
		w.Add("_pragma", "cache_size(-4096)")
		w.Add("_pragma", "cache_spill(4096)")
	}
	return w
}

// openPostgres opens a PostgreSQL store; tracer (nil for none) sees every statement of its
// pool and of its LISTEN connection (StatementCounter).
func openPostgres(dsn string, tracer pgx.QueryTracer) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the connection string; do not pass them on.
		return nil, errors.New("store: postgres: malformed connection string")
	}
	// bun renders arguments into the statement text, so there is nothing to prepare:
	// the simple protocol saves the prepare round trip and an unbounded statement cache.
	// The store's own prepared statements name their mode (pgx.QueryExecModeCacheStatement).
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.Tracer = tracer
	// The pool's connections send a transaction's BEGIN with its first statement
	// (pgbegin.go); a statement that names no mode still goes with the simple protocol.
	poolCfg := cfg.Copy()
	poolCfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	sqldb := sql.OpenDB(pgConnector{stdlib.GetConnector(*poolCfg)})
	sqldb.SetMaxOpenConns(postgresPoolConns)
	sqldb.SetMaxIdleConns(postgresPoolConns / 2)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	db := bun.NewDB(sqldb, pgdialect.New())
	s := newStore(db, db, dialectPostgres)
	s.claims = openClaimPool(cfg)
	s.pgConfig = cfg
	s.known = &knownDecls{}
	s.jobsChannel = jobsChannelOf(cfg)
	return s, nil
}

func newStore(write, read *bun.DB, dialect string) *Store {
	return &Store{
		querier: querier{w: write, r: read, dialect: dialect, rr: &roundRobin{}},
		write:   write,
		read:    read,
		dialect: dialect,
	}
}

func (s *Store) ping(ctx context.Context) error {
	if err := s.write.PingContext(ctx); err != nil {
		return fmt.Errorf("store: connect: %w", err)
	}
	if s.read != s.write {
		if err := s.read.PingContext(ctx); err != nil {
			return fmt.Errorf("store: connect: %w", err)
		}
	}
	return nil
}

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// Close closes the database. A sqlite::memory: database is gone afterwards.
func (s *Store) Close() error {
	var errs []error
	s.stopListening()
	if s.checkpoints != nil {
		errs = append(errs, s.checkpoints.close())
	}
	if s.prepared != nil {
		s.prepared.close()
	}
	if s.read != s.write {
		errs = append(errs, s.read.Close())
	}
	if s.claims != nil {
		errs = append(errs, s.claims.Close())
	}
	errs = append(errs, s.write.Close())
	return errors.Join(errs...)
}

// InTx runs fn in one transaction on the writer. fn's error is returned as it is, so the
// caller can test it with errors.Is; when the database aborted the transaction over a
// conflict with another (a deadlock), errors.Is finds storage.ErrTryAgain in it too. fn must do its work through tx, not through the Store:
// on SQLite the transaction holds the one writer connection, so a write through the Store
// would wait for it forever (and so would a read of a table the transaction has written,
// on sqlite::memory:).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	defer s.lockWriter()()
	// Outside the transaction, which would hold the one writer connection that preparing
	// needs; once prepared this is one atomic load.
	if err := s.prepareStatements(ctx); err != nil {
		return err
	}
	var conn *txConn
	var claims *txClaims
	if s.dialect == dialectPostgres {
		// BeginTx sets conn.c: the connection whose BEGIN goes with the first statement.
		// Forgotten when the transaction ends: the connection goes back to the pool, and a
		// Tx used after its end must meet sql.ErrTxDone, not another transaction's BEGIN.
		conn = &txConn{}
		ctx = context.WithValue(ctx, txConnKey{}, conn)
		defer func() { conn.c = nil }()
		claims = &txClaims{}
	}
	err := s.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, &storeTx{querier{
			w: tx, r: tx, dialect: s.dialect, clock: s.clock, inTx: true, prepared: s.prepared, sqlTx: tx.Tx,
			defs: map[string][]svctype.TableIndex{}, known: s.known, jobsChannel: s.jobsChannel, tx: conn,
			rr: s.rr, claims: claims,
		}})
	})
	if err == nil && claims != nil {
		claims.committed(s.rr)
	}
	if s.prepared != nil {
		s.prepared.shapes.prepareWrites(ctx, s.prepared.db)
	}
	return markTryAgain(err)
}

// lockWriter queues for the SQLite writer in arrival order and returns the unlock; on
// PostgreSQL it does nothing. database/sql hands a free connection to a random waiter, so
// with one writer connection and many callers (executes, step commits, claims) one caller
// could lose the draw many times in a row: a run claimed first would then start after runs
// claimed later. The queue is strictly first in, first out.
func (s *Store) lockWriter() func() {
	if s.dialect != dialectSQLite {
		return func() {}
	}
	s.writer.Lock()
	start := s.wallNow()
	return func() {
		s.writerBusy.Add(int64(s.wallNow().Sub(start)))
		s.writer.Unlock()
	}
}

// WriterBusy is how long SQLite's one writer has been held since the store opened: every
// transaction and claim, from taking the writer to letting it go, by the store's clock.
// Divided by the time elapsed it is the writer's share of that time; near 1, runs and
// requests that write queue for it, and more CPUs do not make them faster. ok is false on
// PostgreSQL, which has no such writer.
func (s *Store) WriterBusy() (busy time.Duration, ok bool) {
	if s.dialect != dialectSQLite {
		return 0, false
	}
	return time.Duration(s.writerBusy.Load()), true
}

// wallNow is the store's clock unrounded (WithNow; time.Now when none).
func (s *Store) wallNow() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock()
}

// storeTx is the storage.Tx handed to InTx's fn.
type storeTx struct {
	querier
}

// ClaimJobs leases up to n due jobs, taking organizations in turn. It reads, for every
// organization with jobs, its oldest few due jobs (a skip scan over the jobs_org_run_at
// index: one index probe per organization, whatever the queue length), picks from them
// round robin starting after the organization this Store served last, oldest first within
// each organization, and leases those whose lease is still free in one statement (SKIP
// LOCKED on PostgreSQL; on SQLite the single writer connection serializes claims). So one
// organization's backlog of any length delays another organization's job by at most one
// claim per organization with due work, and within an organization jobs start in the order
// of run_at (the time the run was accepted). Each claimed job gets its own random token.
func (s *Store) ClaimJobs(ctx context.Context, n int, lease time.Duration) ([]svctype.Job, error) {
	if n <= 0 {
		return nil, nil
	}
	t := s.now()
	if s.dialect == dialectPostgres {
		return s.pgClaimJobs(ctx, t, n, lease)
	}
	cands, err := s.claimCandidates(ctx, t, n)
	if err != nil {
		return nil, fmt.Errorf("store: claim jobs: %w", err)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	s.rr.Lock()
	picked, last := pickRoundRobin(cands, n, s.rr.lastOrg)
	s.rr.lastOrg = last
	s.rr.Unlock()

	keys := make([]jobKey, len(picked))
	for i, c := range picked {
		keys[i] = jobKey{orgID: c.OrgID, id: c.ID}
	}
	var claimed []jobModel
	if st := s.querier.fast(); st != nil {
		arg, err := claimKeys(keys)
		if err != nil {
			return nil, fmt.Errorf("store: claim jobs: %w", err)
		}
		at := sqliteTime(t)
		unlock := s.lockWriter()
		var rows *sql.Rows
		if rows, err = st.claimJobs.QueryContext(ctx, sqliteTime(t.Add(lease)), arg, arg, at, at); err == nil {
			claimed, err = scanClaimed(rows)
		}
		unlock()
		if err != nil {
			return nil, fmt.Errorf("store: claim jobs: %w", err)
		}
		return claimedJobs(claimed), nil
	}
	ids, match, args := jobKeysWhere(keys)
	until := dbTime(t.Add(lease))
	free := s.write.NewSelect().Model((*jobModel)(nil)).Column("id").
		Where("id IN (?)", bun.List(ids)).
		Where(match, args...).
		Where("run_at <= ?", t).
		Where("(lease_until IS NULL OR lease_until < ?)", t)
	token := "lower(hex(randomblob(16)))"
	if s.dialect == dialectPostgres {
		free = free.For("UPDATE SKIP LOCKED")
		token = "gen_random_uuid()::text"
	}
	unlock := s.lockWriter()
	err = s.write.NewUpdate().Model((*jobModel)(nil)).
		Set("lease_token = "+token).
		Set("lease_until = ?", until).
		Set("attempts = attempts + 1").
		Set("claims = claims + 1").
		Where("id IN (?)", free).
		Where(match, args...).
		Returning("*").
		Scan(ctx, &claimed)
	unlock()
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: claim jobs: %w", err)
	}
	return claimedJobs(claimed), nil
}

// claimedJobs are the jobs a claim took, oldest first.
func claimedJobs(claimed []jobModel) []svctype.Job {
	jobs := make([]svctype.Job, len(claimed))
	for i := range claimed {
		jobs[i] = claimed[i].toJob()
	}
	slices.SortFunc(jobs, func(a, b svctype.Job) int {
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return jobs
}

// claimCandidate is a due job as the fair claim sees it.
type claimCandidate struct {
	ID    int64  `bun:"id"`
	OrgID string `bun:"org_id"`
}

// orgsWithJobs walks the distinct org ids of the jobs table through the jobs_org_run_at
// index, one probe per organization (a loose index scan), on both dialects.
const orgsWithJobs = `WITH RECURSIVE orgs(org_id) AS (
	SELECT (SELECT min(org_id) FROM jobs)
	UNION ALL
	SELECT (SELECT min(j.org_id) FROM jobs j WHERE j.org_id > orgs.org_id) FROM orgs WHERE orgs.org_id IS NOT NULL
) `

// claimCandidates returns, for each organization, its n oldest due jobs with a free lease,
// ordered by organization, then run_at and id. It reads without locking; the claim
// statement checks the lease again.
func (s *Store) claimCandidates(ctx context.Context, t time.Time, n int) ([]claimCandidate, error) {
	var cands []claimCandidate
	var err error
	var rows *sql.Rows
	switch st := s.querier.fastRead(); {
	case st != nil:
		// Once per claim, so prepared like the step commit's statements.
		rows, err = st.claimCandidates.QueryContext(ctx, sqliteTime(t), sqliteTime(t), n)
	case s.dialect == dialectPostgres:
		// Prepared (pgx's statement cache), as the step commit's statements: rendered by
		// bun it was parsed and planned at every claim.
		rows, err = s.read.DB.QueryContext(ctx, pgClaimCandidates, pgx.QueryExecModeCacheStatement, t, t, n)
	default:
		err = s.read.NewRaw(sqlClaimCandidates, t, t, n).Scan(ctx, &cands)
	}
	if rows != nil {
		// By hand, not through bun's reflection.
		for rows.Next() {
			var c claimCandidate
			if err = rows.Scan(&c.ID, &c.OrgID); err != nil {
				break
			}
			cands = append(cands, c)
		}
		err = errors.Join(err, rows.Err(), rows.Close())
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return cands, err
}

// pgClaimCandidates is claimCandidates on PostgreSQL: a LATERAL probe per organization.
const pgClaimCandidates = orgsWithJobs + `SELECT d.id, d.org_id FROM orgs CROSS JOIN LATERAL (
	SELECT id, org_id, run_at FROM jobs
	WHERE org_id = orgs.org_id AND run_at <= $1 AND (lease_until IS NULL OR lease_until < $2)
	ORDER BY run_at, id LIMIT $3) d
ORDER BY d.org_id, d.run_at, d.id`

// sqlClaimCandidates is claimCandidates on SQLite, which has no LATERAL: a correlated
// IN (... LIMIT ?) per organization, which SQLite answers from jobs_org_run_at. The limit
// is a CAST: a bare bound LIMIT makes SQLite compile the statement anew at every bind (to
// plan with its value, since 3.47), which was a fifth of the claim's time.
const sqlClaimCandidates = orgsWithJobs + `SELECT j.id, j.org_id FROM orgs JOIN jobs j ON j.id IN (
	SELECT d.id FROM jobs d
	WHERE d.org_id = orgs.org_id AND d.run_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
	ORDER BY d.run_at, d.id LIMIT CAST(? AS INTEGER))
ORDER BY j.org_id, j.run_at, j.id`

// pickRoundRobin takes up to n of cands (grouped by org, oldest first within each) one org
// at a time, starting with the first org after lastOrg in org order and wrapping around,
// and returns them and the org it took from last.
func pickRoundRobin(cands []claimCandidate, n int, lastOrg string) ([]claimCandidate, string) {
	type queue struct{ jobs []claimCandidate }
	var orgs []string
	queues := map[string]*queue{}
	for _, c := range cands {
		q := queues[c.OrgID]
		if q == nil {
			q = &queue{}
			queues[c.OrgID] = q
			orgs = append(orgs, c.OrgID)
		}
		q.jobs = append(q.jobs, c)
	}
	// orgs is sorted (cands are ordered by org): start after lastOrg.
	start, _ := slices.BinarySearch(orgs, lastOrg)
	if start < len(orgs) && orgs[start] == lastOrg {
		start++
	}
	picked := make([]claimCandidate, 0, n)
	last := lastOrg
	for len(picked) < n {
		took := false
		for k := range orgs {
			org := orgs[(start+k)%len(orgs)]
			q := queues[org]
			if len(q.jobs) == 0 {
				continue
			}
			picked = append(picked, q.jobs[0])
			q.jobs = q.jobs[1:]
			last, took = org, true
			if len(picked) == n {
				break
			}
		}
		if !took {
			break
		}
	}
	return picked, last
}

// jobKey names one job row: its organization and id and, for a holder, its lease token.
type jobKey struct {
	orgID string
	id    int64
	token string // empty: any
}

// jobKeysWhere returns the ids of keys and a condition that matches exactly the rows keys
// name, each on its org id, id and (when set) token together: separate lists of org ids,
// ids and tokens would match the cross product, one organization's id with another's org
// id. Statements use both, the id list for the primary key, the condition to filter.
func jobKeysWhere(keys []jobKey) (ids []int64, cond string, args []any) {
	ids = make([]int64, len(keys))
	args = make([]any, 0, 3*len(keys))
	var b strings.Builder
	b.WriteString("(")
	for i, k := range keys {
		ids[i] = k.id
		if i > 0 {
			b.WriteString(" OR ")
		}
		if k.token == "" {
			b.WriteString("(org_id = ? AND id = ?)")
			args = append(args, k.orgID, k.id)
			continue
		}
		b.WriteString("(org_id = ? AND id = ? AND lease_token = ?)")
		args = append(args, k.orgID, k.id, k.token)
	}
	b.WriteString(")")
	return ids, b.String(), args
}

// ExtendLeases moves lease_until of the jobs that still hold their tokens, in one
// statement, and updates LeaseUntil in jobs for those. A job is matched on its org id, id
// and token together.
func (s *Store) ExtendLeases(ctx context.Context, jobs []svctype.Job, lease time.Duration) error {
	if len(jobs) == 0 {
		return nil
	}
	keys := make([]jobKey, 0, len(jobs))
	for _, j := range jobs {
		if j.LeaseToken == "" {
			continue
		}
		keys = append(keys, jobKey{orgID: j.OrgID, id: j.ID, token: j.LeaseToken})
	}
	if len(keys) == 0 {
		return nil
	}
	ids, match, args := jobKeysWhere(keys)
	until := dbTime(s.now().Add(lease))
	var extended []claimCandidate // the org id and id of each job extended
	var among any = bun.List(ids)
	if s.dialect == dialectPostgres {
		// A job whose row is locked is committing a step, and that commit renews its lease
		// itself: skip it rather than queue behind it (and stall the jobs locked after it).
		among = s.write.NewSelect().Model((*jobModel)(nil)).Column("id").
			Where("id IN (?)", bun.List(ids)).
			Where(match, args...).
			For("UPDATE SKIP LOCKED")
	}
	unlock := s.lockWriter()
	err := s.write.NewUpdate().Model((*jobModel)(nil)).
		Set("lease_until = ?", until).
		Where("id IN (?)", among).
		Where(match, args...).
		Returning("id, org_id").
		Scan(ctx, &extended)
	unlock()
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: extend leases: %w", err)
	}
	for i := range jobs {
		if jobs[i].LeaseToken != "" && slices.Contains(extended, claimCandidate{ID: jobs[i].ID, OrgID: jobs[i].OrgID}) {
			u := until
			jobs[i].LeaseUntil = &u
		}
	}
	return nil
}
