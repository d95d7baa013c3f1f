package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Group commit on SQLite. Every write goes through the one writer connection, and each
// transaction's COMMIT writes a WAL frame for every page it changed: three commits a run
// write mostly the same right-most leaf pages of runs, jobs, events and their indexes
// again. A transaction that arrives while the writer is held joins the group waiting last
// in the writer's queue, if there is one (fifo.go); the group's first caller, its leader,
// runs the group's functions in arrival order in one SQLite transaction, each under its
// own SAVEPOINT, and commits once. A function that fails is rolled back to its savepoint,
// alone; each caller learns its result only after the COMMIT. A group of one runs as a
// plain transaction. The leader runs one group and returns: the next group has a leader
// of its own, queued behind whatever arrived after the group closed.

// groupMax is the most transactions one commit carries.
const groupMax = 16

// errGroupAborted is what a transaction of a group that was rolled back as a whole over
// another member (a panic, or an error that ended SQLite's transaction) returns: its
// writes are gone, and it may run again.
var errGroupAborted = fmt.Errorf("store: transaction: its commit group was rolled back over another transaction: %w", storage.ErrTryAgain)

// txCall is one InTx call waiting in, or running in, a commit group.
type txCall struct {
	ctx context.Context
	fn  func(ctx context.Context, tx storage.Tx) error

	// Set by the leader before done is closed.
	err      error
	panicked bool
	panicVal any
	done     chan struct{} // closed by the leader once it has set the above (not for its own call)
}

// commitGroup is the calls one transaction carries, in arrival order.
type commitGroup struct {
	calls []*txCall
}

// groupStats counts the commits of groups and the transactions they carried (SQLite).
type groupStats struct {
	commits atomic.Int64 // transactions committed on the writer by InTx
	calls   atomic.Int64 // InTx calls that committed in them
}

// GroupCommits reports, for measurements, how many SQLite transactions InTx committed and
// how many InTx calls committed in them: their ratio is the mean group size. Zero on
// PostgreSQL.
func (s *Store) GroupCommits() (commits, calls int64) {
	return s.groups.commits.Load(), s.groups.calls.Load()
}

// inGroup is InTx on SQLite: fn joins the open group or leads a new one.
func (s *Store) inGroup(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error {
	c := &txCall{ctx: ctx, fn: fn, done: make(chan struct{})}
	g := s.writer.lockOrJoin(c, groupMax)
	if g == nil {
		<-c.done
	} else {
		s.runGroup(g)
		s.writer.Unlock()
		for _, o := range g.calls[1:] {
			close(o.done)
		}
	}
	if c.panicked {
		panic(c.panicVal)
	}
	return markTryAgain(c.err)
}

// runGroup runs g's calls in one transaction and sets each call's result. It holds the
// writer. The transaction belongs to no caller: it begins and commits without the
// cancellation of any one of them, and each function runs with its caller's ctx.
func (s *Store) runGroup(g *commitGroup) {
	var live []*txCall
	for _, c := range g.calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err // nothing of it runs
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	ctx := context.WithoutCancel(live[0].ctx)
	fail := func(calls []*txCall, err error) {
		for _, c := range calls {
			c.err = err
		}
	}
	// Outside the transaction, which would hold the one writer connection that preparing
	// needs; once prepared this is one atomic load.
	if err := s.prepareStatements(ctx); err != nil {
		fail(live, err)
		return
	}
	// A savepoint is taken only once the transaction holds writes to keep: a function
	// that fails with none before it is rolled back with the transaction, and the next
	// begins another (so a group of one is a plain transaction).
	var tx bun.Tx
	begun := false
	stmts := map[*sql.Stmt]*sql.Stmt{} // bound to tx: valid for every function of the group
	var ok []*txCall                   // the calls whose writes the commit carries
	for i, c := range live {
		if err := c.ctx.Err(); err != nil {
			c.err = err // done while the calls before it ran: nothing of it runs
			continue
		}
		if !begun {
			var err error
			if tx, err = s.write.BeginTx(ctx, nil); err != nil {
				fail(live[i:], markTryAgain(err))
				return
			}
			begun = true
			clear(stmts)
		}
		savepoint := len(ok) > 0
		if savepoint {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT svcflow_group"); err != nil {
				_ = tx.Rollback()
				fail(ok, errGroupAborted)
				fail(live[i:], markTryAgain(err))
				return
			}
		}
		c.panicked, c.panicVal, c.err = s.runCall(c, tx, stmts)
		if c.panicked {
			_ = tx.Rollback()
			fail(ok, errGroupAborted)
			fail(live[i+1:], errGroupAborted)
			return
		}
		if !savepoint {
			if c.err != nil {
				_ = tx.Rollback()
				begun = false
				continue
			}
			ok = append(ok, c)
			continue
		}
		// ROLLBACK TO and RELEASE both fail when SQLite has ended the transaction under
		// the function (an error that rolls back the whole transaction, an interrupt):
		// what the calls before it wrote is gone too.
		var end error
		if c.err != nil {
			_, end = tx.ExecContext(ctx, "ROLLBACK TO svcflow_group")
		}
		if end == nil {
			_, end = tx.ExecContext(ctx, "RELEASE svcflow_group")
		}
		if end != nil {
			_ = tx.Rollback()
			if c.err == nil {
				c.err = markTryAgain(fmt.Errorf("store: transaction: %w", end))
			}
			fail(ok, errGroupAborted)
			fail(live[i+1:], errGroupAborted)
			return
		}
		if c.err == nil {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return // every function failed: each rolled back with its transaction
	}
	if err := tx.Commit(); err != nil {
		// A COMMIT that SQLite refused (a deferred constraint) leaves its transaction open
		// on the connection, which database/sql no longer counts as in one: end it, or the
		// next BEGIN on the writer would fail. No transaction open: an error, ignored.
		_, _ = s.write.ExecContext(ctx, "ROLLBACK")
		fail(ok, markTryAgain(err))
		return
	}
	s.groups.commits.Add(1)
	s.groups.calls.Add(int64(len(ok)))
}

// runCall runs c's function in tx with a transaction store of its own: the index
// declarations it reads are its own (a function before it in the group may have changed
// them); the prepared statements bound to tx are shared. A panic is caught and returned,
// for the caller's goroutine to panic again.
func (s *Store) runCall(c *txCall, tx bun.Tx, stmts map[*sql.Stmt]*sql.Stmt) (panicked bool, val any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked, val, err = true, p, nil
		}
	}()
	st := &storeTx{querier{
		w: tx, r: tx, dialect: s.dialect, clock: s.clock, inTx: true, prepared: s.prepared, sqlTx: tx.Tx,
		txStmts: stmts, defs: map[string][]svctype.TableIndex{}, known: s.known, jobsChannel: s.jobsChannel,
	}}
	return false, nil, c.fn(c.ctx, st)
}
