package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// A custom-table write on PostgreSQL without its own read of the table's index
// declarations. A transaction's first write to a table read its declarations (one
// statement) before the write (another): two of a step's five statements. Now the Store
// keeps the declarations it last read for each table (knownDecls), and the write carries
// them as a condition: it writes only if the table's declarations are still, in the write
// statement's own snapshot, the ones it computed the row's index entries from. When they
// are not (an index was declared since, here or in another process), it writes nothing, and
// the write reads the declarations and is sent again, as before. So what a transaction
// writes is what it would have written after reading the declarations first: the
// declarations it used are those of one snapshot taken after it began, and a declaration
// committed after that snapshot waits for the transaction to end before its build starts
// (tableindexes.go). SQLite is unchanged: its one writer orders declarations and writes.

// knownDecls holds, by organization and table, the index declarations as last read.
// Declarations only grow (an index is added, then made ready), and every use is checked by
// the write that relies on it, so a stale entry costs one statement more, never a wrong row.
type knownDecls struct {
	mu sync.Mutex
	m  map[string]knownDecl
}

// knownDecl is a table's indexes column as read: its text, and whether it was NULL.
type knownDecl struct {
	raw   string
	valid bool
}

// maxKnownDecls bounds knownDecls; past it, it starts again empty.
const maxKnownDecls = 4096

func (k *knownDecls) get(key string) (knownDecl, bool) {
	if k == nil {
		return knownDecl{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	d, ok := k.m[key]
	return d, ok
}

func (k *knownDecls) put(key string, d knownDecl) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxKnownDecls {
		k.m = map[string]knownDecl{}
	}
	k.m[key] = d
}

func declKey(orgID, table string) string { return orgID + "\x00" + table }

// declGuard is the condition a guarded write carries: the declarations it assumed.
type declGuard struct {
	decl knownDecl
}

// arg is the guard's parameter: the indexes column's text, or NULL.
func (g *declGuard) arg() any {
	if !g.decl.valid {
		return nil
	}
	return g.decl.raw
}

// writeDefs returns the declarations a PostgreSQL write to table in q's transaction
// computes its index entries from, and the guard it must carry: nil when this
// transaction read them already (they cannot change before it ends), else those the Store
// knows, unread. Without either, it reads them (indexDefs), unguarded.
func (q *querier) writeDefs(ctx context.Context, db bun.IDB, orgID, table string) ([]svctype.TableIndex, *declGuard, error) {
	key := declKey(orgID, table)
	if defs, ok := q.defs[key]; ok {
		return defs, nil, nil
	}
	if q.defs != nil { // a transaction's
		if d, ok := q.known.get(key); ok {
			if defs, err := parseIndexes(d.raw); err == nil {
				return defs, &declGuard{decl: d}, nil
			}
		}
	}
	defs, err := q.indexDefs(ctx, db, orgID, table)
	return defs, nil, err
}

// guardHeld records, after a guarded write succeeded, that this transaction saw defs.
func (q *querier) guardHeld(orgID, table string, defs []svctype.TableIndex) {
	if q.defs != nil {
		q.defs[declKey(orgID, table)] = defs
	}
}

// staleGuard reports whether err is a guarded write's refusal: it wrote nothing, the
// table's declarations not being those it assumed (or the table being gone).
func staleGuard(g *declGuard, err error) bool {
	return g != nil && errors.Is(err, sql.ErrNoRows)
}

// hasKeyIndex reports whether defs declare the index on keys an upsert needs.
func hasKeyIndex(defs []svctype.TableIndex, keys []string) bool {
	key := svctype.IndexKey(keys)
	return slices.ContainsFunc(defs, func(d svctype.TableIndex) bool { return d.Key() == key })
}

// readDefs returns the declarations a read with where is planned from. Outside a
// transaction, when the declarations the Store knows hold a ready index for where, those,
// unread: a ready index stays ready and no table is dropped, so its entries are there, and
// an index made since can only make the read cheaper, never change what it returns.
// Otherwise it reads them (indexDefs).
func (q *querier) readDefs(ctx context.Context, orgID, table string, where map[string]any) ([]svctype.TableIndex, error) {
	if !q.inTx {
		if d, ok := q.known.get(declKey(orgID, table)); ok {
			if defs, err := parseIndexes(d.raw); err == nil {
				if _, ok := svctype.BestIndex(defs, where); ok {
					return defs, nil
				}
			}
		}
	}
	return q.indexDefs(ctx, q.r, orgID, table)
}
