package store

import (
	"context"
	"database/sql"
	"sync"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Statements prepared by their text on SQLite, for the reads whose text varies with the
// shape of their arguments: ReadRows, a read step's one statement, has one text per set of
// where's columns, their values' JSON types and limit (readRowsQuery). bun rendered it with
// its values in the text, so SQLite compiled it at every call: about half of ReadRows' CPU,
// bun's scan of its rows most of the rest (docs/performance.md, "SQLite: the cost of a run
// (issue 35, sixth session)").
//
// A text is prepared on the read pool when a read outside a transaction first meets it.
// In a transaction it cannot be: preparing on the writer needs its one connection, which
// the transaction holds. The read compiles it then, as before, and the text waits in
// pending until InTx has ended its transaction, still first in the writer's queue; InTx
// prepares it there, and the transactions after find it.

// maxShapes bounds the texts prepared on each of the writer and the read pool; a text
// beyond them is compiled at each call.
const maxShapes = 64

// shapes holds the statements prepared by their text.
type shapes struct {
	mu      sync.Mutex
	write   map[string]*sql.Stmt // on the writer, for reads in a transaction
	read    map[string]*sql.Stmt // on the read pool
	pending map[string]bool      // met in a transaction, to prepare on the writer after it
}

// inTx returns the writer's statement for query, or nil after noting query for
// prepareWrites.
func (c *shapes) inTx(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stmt, ok := c.write[query]; ok {
		return stmt
	}
	if len(c.write)+len(c.pending) < maxShapes {
		if c.pending == nil {
			c.pending = map[string]bool{}
		}
		c.pending[query] = true
	}
	return nil
}

// prepareWrites prepares on db, the writer, the texts met in transactions. Its caller has
// the writer, with no transaction open. A text that fails to prepare is dropped: its reads
// compile it at each call, and report its error there.
func (c *shapes) prepareWrites(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for query := range pending {
		// Not under mu: a read in a transaction of the writer's may wait for it meanwhile.
		stmt, err := db.PrepareContext(ctx, query)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.write == nil {
			c.write = map[string]*sql.Stmt{}
		}
		c.write[query] = stmt
		c.mu.Unlock()
	}
}

// onReadPool returns the read pool's statement for query, preparing it on db when there is
// room; nil, nil when there is none.
func (c *shapes) onReadPool(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stmt, ok := c.read[query]; ok {
		return stmt, nil
	}
	if len(c.read) >= maxShapes {
		return nil, nil
	}
	stmt, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.read == nil {
		c.read = map[string]*sql.Stmt{}
	}
	c.read[query] = stmt
	return stmt, nil
}

func (c *shapes) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range []map[string]*sql.Stmt{c.write, c.read} {
		for _, stmt := range m {
			_ = stmt.Close()
		}
	}
	c.write, c.read, c.pending = nil, nil, nil
}

// sqliteReadRows is ReadRows on SQLite through a statement prepared for its text; false
// when the fast path is off (the bun path serves).
func (q *querier) sqliteReadRows(ctx context.Context, orgID, table string, where map[string]any, limit int) ([]svctype.Row, bool, error) {
	if q.fast() == nil || (q.inTx && q.sqlTx == nil) {
		return nil, false, nil
	}
	conds, err := q.readConditions(ctx, orgID, table, where)
	if err != nil {
		return nil, true, err
	}
	query, args := q.readRowsQuery(orgID, table, conds, limit)
	var rows *sql.Rows
	switch {
	case q.inTx:
		if stmt := q.prepared.shapes.inTx(query); stmt != nil {
			rows, err = q.txStmt(ctx, stmt).QueryContext(ctx, args...)
		} else {
			rows, err = q.sqlTx.QueryContext(ctx, query, args...)
		}
	default:
		var stmt *sql.Stmt
		if stmt, err = q.prepared.shapes.onReadPool(ctx, q.prepared.read.DB, query); err != nil {
			return nil, true, err
		}
		if stmt != nil {
			rows, err = stmt.QueryContext(ctx, args...)
		} else {
			rows, err = q.prepared.read.DB.QueryContext(ctx, query, args...)
		}
	}
	if err != nil {
		return nil, true, err
	}
	out, err := scanReadRows(rows)
	return out, true, err
}
