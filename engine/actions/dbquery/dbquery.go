// Package dbquery is the network-facing half of the db action: it runs one parameterised
// query against an organization's own database, named by a connection string
// (postgres://..., mysql://user:pass@host:port/db, sqlite:PATH), and returns its rows as
// JSON-ready maps. Parameters are bound, never written into the SQL; a query returns at most
// 10,000 rows or fails; a statement timeout holds server-side where the database has one, and
// through the context everywhere. Connections go through engine/outbound's address
// guard, so a tenant's connection string cannot reach this machine or its private network
// unless the deployment allows private targets.
//
// It never logs, and it never puts the connection string, or any part of it but the
// database kind, into an error. It knows nothing of org config, steps or runs: callers
// resolve orgconfig:db:<name> to a connection string and turn rows into a step's output.
package dbquery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Limits and defaults.
const (
	// MaxRows is the most rows a query may return: one more is an error, not a cut. It is
	// the bound documents and custom-table reads use (docs/decisions.md).
	MaxRows = 10_000
	// DefaultTimeout bounds a query when Options leaves it unset.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxDatabases and DefaultIdleTimeout bound a Pool when PoolOptions leave them
	// unset.
	DefaultMaxDatabases = 16
	DefaultIdleTimeout  = 5 * time.Minute

	// contextGrace is how much longer than the statement timeout the context gives a query
	// on a server that enforces the timeout itself: the server's own cancel leaves the
	// connection usable and says why; the context is the backstop (a stuck network, a
	// server that ignored it).
	contextGrace  = time.Second
	connsPerDB    = 4
	connMaxLife   = 30 * time.Minute
	connMaxIdle   = time.Minute
	sqliteBusyFor = 5 * time.Second
)

// Sentinel errors; every error Query returns is an *Error wrapping one of them.
var (
	// ErrUnsupportedDSN: the connection string is not postgres://, postgresql://, mysql://
	// or sqlite:, or does not parse.
	ErrUnsupportedDSN = errors.New("unsupported connection string")
	// ErrParams: the query's $1..$n and the parameters do not match, or a parameter cannot
	// be bound.
	ErrParams = errors.New("parameters do not match the query")
	// ErrTooManyRows: the query returned more than MaxRows rows. Nothing it did is kept
	// (its transaction is rolled back).
	ErrTooManyRows = errors.New("too many rows")
	// ErrTimeout: the query ran past its timeout and was cancelled.
	ErrTimeout = errors.New("query timed out")
	// ErrConnect: the database could not be reached or refused the login.
	ErrConnect = errors.New("cannot connect")
	// ErrQuery: the database refused or failed the query.
	ErrQuery = errors.New("query failed")
	// ErrClosed: the pool was closed.
	ErrClosed = errors.New("pool closed")
)

// Machine codes, snake_case like the API's.
const (
	CodeUnsupportedDSN   = "unsupported_dsn"
	CodeParams           = "invalid_params"
	CodeTooManyRows      = "too_many_rows"
	CodeTimeout          = "timeout"
	CodeConnect          = "connection_failed"
	CodeQuery            = "query_failed"
	CodeTargetNotAllowed = "target_not_allowed"
	CodeCanceled         = "canceled"
)

// Error is a failed query: the kind of database, a machine code, the database's own error
// code when it gave one (a PostgreSQL SQLSTATE, a MySQL error number, an SQLite result
// code), and a message from which the connection string and its password are removed.
// It unwraps to one of the sentinels (or outbound.ErrTargetNotAllowed, or the context's
// error), never to a driver error, whose text is not checked for secrets.
type Error struct {
	Database string // postgres, mysql, sqlite; "" when the string named none of them
	Code     string
	DBCode   string
	Message  string
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("dbquery: ")
	if e.Database != "" {
		b.WriteString(e.Database + ": ")
	}
	b.WriteString(e.Err.Error())
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Options bound one query.
type Options struct {
	// Timeout bounds the query (connecting included); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxRows lowers the row bound; 0 (or more than MaxRows) means MaxRows.
	MaxRows int
}

// PoolOptions configure a Pool.
type PoolOptions struct {
	// AllowPrivateTargets lets connection strings name loopback, private and link-local
	// hosts, Unix sockets and SQLite files (the binary's --allow-private-targets). Without
	// it a tenant's connection string could read the service's own database.
	AllowPrivateTargets bool
	// MaxDatabases bounds how many databases (distinct connection strings) have a
	// connection pool open at once; the least recently used idle one is closed to make
	// room. Default 16.
	MaxDatabases int
	// IdleTimeout closes a database's pool after it has gone unused this long. Default
	// 5 min.
	IdleTimeout time.Duration
}

// Pool keeps one *sql.DB per connection string, each with a few connections, so a workflow
// that queries the same database at every run does not log in every time. Safe for
// concurrent use; the executor keeps one.
type Pool struct {
	opts PoolOptions

	mu     sync.Mutex
	dbs    map[string]*entry
	closed bool
}

type entry struct {
	key  string
	tgt  target
	db   *sql.DB
	refs int
	used time.Time
	idle *time.Timer
	gone bool // evicted or expired: close when the last query ends

	mu      sync.Mutex
	mariadb *bool // MySQL family only, learnt on first use
}

// NewPool returns an empty pool.
func NewPool(opts PoolOptions) *Pool {
	if opts.MaxDatabases <= 0 {
		opts.MaxDatabases = DefaultMaxDatabases
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	return &Pool{opts: opts, dbs: make(map[string]*entry)}
}

// Close closes every database; queries in flight finish first.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	dbs := p.dbs
	p.dbs = make(map[string]*entry)
	p.mu.Unlock()
	var errs []error
	for _, e := range dbs {
		if e.idle != nil {
			e.idle.Stop()
		}
		errs = append(errs, e.db.Close())
	}
	return errors.Join(errs...)
}

func (p *Pool) acquire(dsn string, tgt target) (*entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	e := p.dbs[dsn]
	if e == nil {
		for len(p.dbs) >= p.opts.MaxDatabases {
			p.evictLocked()
		}
		db, err := tgt.open()
		if err != nil {
			return nil, err
		}
		e = &entry{key: dsn, tgt: tgt, db: db}
		p.dbs[dsn] = e
	}
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	e.refs++
	return e, nil
}

// evictLocked drops the least recently used database, idle ones first; one in use is
// closed when its last query ends.
func (p *Pool) evictLocked() {
	var victim *entry
	for _, e := range p.dbs {
		if victim == nil || (e.refs == 0 && victim.refs > 0) ||
			((e.refs == 0) == (victim.refs == 0) && e.used.Before(victim.used)) {
			victim = e
		}
	}
	delete(p.dbs, victim.key)
	victim.gone = true
	if victim.idle != nil {
		victim.idle.Stop()
	}
	if victim.refs == 0 {
		go victim.db.Close()
	}
}

func (p *Pool) release(e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.refs--
	e.used = time.Now()
	if e.refs > 0 {
		return
	}
	if e.gone || p.closed {
		go e.db.Close()
		return
	}
	e.idle = time.AfterFunc(p.opts.IdleTimeout, func() { p.expire(e) })
}

func (p *Pool) expire(e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.refs > 0 || e.gone || p.dbs[e.key] != e {
		return
	}
	delete(p.dbs, e.key)
	e.gone = true
	go e.db.Close()
}

// Query runs query on the database dsn names, binding params to $1..$n, and returns its
// rows, each a map of column name to a JSON-ready value (see jsonValue: int64, float64,
// json.Number for exact decimals, string, bool, nil, parsed JSON; times as RFC 3339). The
// query runs in a transaction of its own that commits when every row was read, so a
// statement that writes (INSERT ... RETURNING) either happens whole or, when it fails or
// returns too many rows, not at all.
func (p *Pool) Query(ctx context.Context, dsn, query string, params []any, opts Options) ([]map[string]any, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	maxRows := opts.MaxRows
	if maxRows <= 0 || maxRows > MaxRows {
		maxRows = MaxRows
	}
	tgt, err := parseDSN(dsn, p.opts.AllowPrivateTargets)
	if err != nil {
		return nil, err
	}
	fail := func(code string, sentinel error, msg string) *Error {
		return &Error{Database: tgt.dialect.String(), Code: code, Err: sentinel, Message: msg}
	}
	stmt, args, err := bindParams(tgt.dialect, query, params)
	if err != nil {
		return nil, fail(CodeParams, ErrParams, strings.TrimPrefix(err.Error(), ErrParams.Error()+": "))
	}
	for i, a := range args {
		if args[i], err = paramValue(a); err != nil {
			return nil, fail(CodeParams, ErrParams, "a parameter does not encode as JSON")
		}
	}

	e, err := p.acquire(dsn, tgt)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, fail(CodeCanceled, ErrClosed, "")
		}
		return nil, tgt.classify(ctx, err, ErrConnect)
	}
	defer p.release(e)

	deadline := timeout
	if tgt.dialect != sqlite {
		deadline += contextGrace
	}
	qctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	conn, err := e.db.Conn(qctx)
	if err != nil {
		return nil, tgt.classify(ctx, err, ErrConnect)
	}
	defer conn.Close()
	if tgt.dialect == mysqlDialect {
		if err := e.setMySQLTimeout(qctx, conn, timeout); err != nil {
			return nil, tgt.classify(ctx, err, ErrQuery)
		}
	}
	tx, err := conn.BeginTx(qctx, nil)
	if err != nil {
		return nil, tgt.classify(ctx, err, ErrConnect)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if tgt.dialect == postgres {
		// Local to the transaction, so it cannot outlive this query on a pooled connection.
		if _, err := tx.ExecContext(qctx, "SELECT set_config('statement_timeout', $1, true)", fmt.Sprint(timeout.Milliseconds())); err != nil {
			return nil, tgt.classify(ctx, err, ErrQuery)
		}
	}
	rows, err := tx.QueryContext(qctx, stmt, args...)
	if err != nil {
		return nil, tgt.classify(ctx, err, ErrQuery)
	}
	defer rows.Close()
	out, err := readRows(rows, maxRows)
	if err != nil {
		if errors.Is(err, ErrTooManyRows) {
			return nil, fail(CodeTooManyRows, ErrTooManyRows, fmt.Sprintf("more than %d rows; narrow the query (WHERE, LIMIT)", maxRows))
		}
		return nil, tgt.classify(ctx, err, ErrQuery)
	}
	if err := tx.Commit(); err != nil {
		return nil, tgt.classify(ctx, err, ErrQuery)
	}
	return out, nil
}

func readRows(rows *sql.Rows, maxRows int) ([]map[string]any, error) {
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cols))
	kinds := make([]valueKind, len(cols))
	for i, c := range cols {
		names[i] = c.Name()
		kinds[i] = kindOf(c.DatabaseTypeName())
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	out := []map[string]any{}
	for rows.Next() {
		if len(out) == maxRows {
			return nil, ErrTooManyRows
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(map[string]any, len(cols))
		for i, v := range vals {
			row[names[i]] = jsonValue(v, kinds[i])
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// setMySQLTimeout sets the session's statement timeout: MariaDB's max_statement_time
// (every statement) or MySQL's max_execution_time (SELECT only; MySQL has nothing for
// other statements). The setting is made before every query, so it never outlives one on
// a pooled connection.
func (e *entry) setMySQLTimeout(ctx context.Context, conn *sql.Conn, timeout time.Duration) error {
	e.mu.Lock()
	known := e.mariadb
	e.mu.Unlock()
	if known == nil {
		var version string
		if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return err
		}
		isMaria := strings.Contains(strings.ToLower(version), "mariadb")
		e.mu.Lock()
		e.mariadb = &isMaria
		e.mu.Unlock()
		known = &isMaria
	}
	var err error
	if *known {
		_, err = conn.ExecContext(ctx, fmt.Sprintf("SET SESSION max_statement_time = %.3f", timeout.Seconds()))
	} else {
		_, err = conn.ExecContext(ctx, fmt.Sprintf("SET SESSION max_execution_time = %d", timeout.Milliseconds()))
	}
	return err
}
