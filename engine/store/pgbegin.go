package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// BEGIN sent with a transaction's first statement (PostgreSQL). database/sql sends BEGIN as
// soon as a transaction starts: a round trip of its own, ahead of the first statement, on
// every step's unit. The pool's connections (pgConn) put it off: a transaction begun with
// the default options sends nothing until its first statement. When that statement is one
// of the store's prepared ones (pgQueryRow, pgExec), BEGIN and it go to the server in one
// pipeline (pgx's batch: one round trip, one Sync, so the server runs BEGIN, then the
// statement, in the transaction BEGIN opened); any other first statement sends BEGIN on its
// own first, as before. A transaction that sent nothing commits and rolls back without a
// word to the server. The server sees the same statements in the same order; what a failed
// statement leaves is what it left before: the transaction aborted, rolled back by InTx.

// pgConnector makes the pool's connections pgConn.
type pgConnector struct{ driver.Connector }

// Connect implements driver.Connector.
func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := dc.(*stdlib.Conn)
	if !ok {
		return dc, nil
	}
	return &pgConn{Conn: sc}, nil
}

// pgConn is a pool connection whose transactions send BEGIN with their first statement.
// Its pgx connection's default mode is QueryExecModeCacheStatement, for the batch that
// carries BEGIN (pgx's batches take the connection's default mode); a statement through
// database/sql that names no mode goes with the simple protocol, as every one did before.
type pgConn struct {
	*stdlib.Conn
	// mu orders the transaction's statements sent past database/sql (withBegin) against a
	// rollback that database/sql starts when the transaction's context ends.
	mu sync.Mutex
	// pending is a transaction begun whose BEGIN is not sent yet.
	pending bool
}

// txConnKey is the context key under which InTx asks BeginTx for its connection.
type txConnKey struct{}

// txConn is the connection of InTx's transaction, set by BeginTx (the first one begun
// with the context: a transaction opened inside fn on the Store is another's).
type txConn struct{ c *pgConn }

// BeginTx implements driver.ConnBeginTx: BEGIN is put off for default options.
func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if sql.IsolationLevel(opts.Isolation) != sql.LevelDefault || opts.ReadOnly {
		return c.Conn.BeginTx(ctx, opts)
	}
	if c.Conn.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	c.mu.Lock()
	c.pending = true
	c.mu.Unlock()
	if l, ok := ctx.Value(txConnKey{}).(*txConn); ok && l.c == nil {
		l.c = c
	}
	return &pgLazyTx{c: c, ctx: ctx}, nil
}

// begun sends the pending BEGIN, if any, on its own.
func (c *pgConn) begun(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending {
		return nil
	}
	c.pending = false
	_, err := c.Conn.Conn().Exec(ctx, "begin")
	return err
}

// ExecContext implements driver.ExecerContext.
func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.begun(ctx); err != nil {
		return nil, err
	}
	return c.Conn.ExecContext(ctx, query, simpleUnlessSaid(args))
}

// QueryContext implements driver.QueryerContext.
func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.begun(ctx); err != nil {
		return nil, err
	}
	return c.Conn.QueryContext(ctx, query, simpleUnlessSaid(args))
}

// PrepareContext implements driver.ConnPrepareContext: its statement sends the pending
// BEGIN before it runs.
func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &pgStmt{Stmt: st.(*stdlib.Stmt), c: c}, nil
}

// Prepare implements driver.Conn.
func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// simpleUnlessSaid is args led by the simple protocol when they name no exec mode.
func simpleUnlessSaid(args []driver.NamedValue) []driver.NamedValue {
	if len(args) > 0 {
		if _, ok := args[0].Value.(pgx.QueryExecMode); ok {
			return args
		}
	}
	out := make([]driver.NamedValue, 0, len(args)+1)
	out = append(out, driver.NamedValue{Ordinal: 1, Value: pgx.QueryExecModeSimpleProtocol})
	for i, a := range args {
		a.Ordinal = i + 2
		out = append(out, a)
	}
	return out
}

// withBegin sends query (a statement of pgx's statement cache, with args) after the
// pending BEGIN in one round trip and hands its rows to read; sent is false when no BEGIN
// was pending, and nothing was sent. An error of either ends it: BEGIN's (the statement did
// not run) or the statement's (the transaction is aborted; InTx rolls it back).
func (c *pgConn) withBegin(ctx context.Context, query string, args []any, read func(pgx.Rows) error) (sent bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending {
		return false, nil
	}
	c.pending = false
	var b pgx.Batch
	b.Queue("begin")
	b.Queue(query, args...)
	br := c.Conn.Conn().SendBatch(ctx, &b)
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := br.Exec(); err != nil {
		return true, err
	}
	rows, err := br.Query()
	if err != nil {
		return true, err
	}
	if read != nil {
		err = read(rows)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	return true, err
}

// pgLazyTx is a transaction of pgConn: what pgx's transaction does at its end, or
// nothing when its BEGIN was never sent.
type pgLazyTx struct {
	c   *pgConn
	ctx context.Context // BeginTx's, as pgx's database/sql transaction uses
}

// Commit implements driver.Tx.
func (t *pgLazyTx) Commit() error {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending {
		c.pending = false
		return nil
	}
	conn := c.Conn.Conn()
	tag, err := conn.Exec(t.ctx, "commit")
	if err != nil {
		if conn.PgConn().TxStatus() != 'I' {
			_ = conn.Close(context.Background()) // the error is the one returned
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback implements driver.Tx.
func (t *pgLazyTx) Rollback() error {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending {
		c.pending = false
		return nil
	}
	conn := c.Conn.Conn()
	if _, err := conn.Exec(t.ctx, "rollback"); err != nil {
		// The connection's state is unknown: database/sql drops it (IsValid, ResetSession).
		_ = conn.Close(context.Background())
		return err
	}
	return nil
}

// pgStmt is a prepared statement of pgConn: it sends the pending BEGIN before it runs.
type pgStmt struct {
	*stdlib.Stmt
	c *pgConn
}

// ExecContext implements driver.StmtExecContext.
func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.begun(ctx); err != nil {
		return nil, err
	}
	return s.Stmt.ExecContext(ctx, args)
}

// QueryContext implements driver.StmtQueryContext.
func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.begun(ctx); err != nil {
		return nil, err
	}
	return s.Stmt.QueryContext(ctx, args)
}
