package store

import (
	"context"

	"github.com/uptrace/bun"
)

// Shared is a Store's database as a store beside the engine's sees it: one that keeps its
// own tables, migrations and contract in the same database (the gateway's,
// hosts/gateway/gwstore). It hands out the Store's own connections rather than a second
// pool, so that SQLite keeps one writer connection, and the Store's writer queue for
// transactions. It knows no table of that store, and the Store knows none of its.
type Shared struct{ s *Store }

// Shared is s's database for a store beside it. It is closed with s.
func (s *Store) Shared() Shared { return Shared{s} }

// Dialect is "sqlite" or "postgres".
func (h Shared) Dialect() string { return h.s.dialect }

// Writer is the database every write goes through: on SQLite the Store's one writer
// connection (a statement waits while a transaction holds it), on PostgreSQL the pool.
// A write of more than one statement uses InTx.
func (h Shared) Writer() *bun.DB { return h.s.write }

// Reader is the database plain reads go through: SQLite's read-only pool, PostgreSQL's
// pool. On sqlite::memory: a read of a table that an open transaction has written waits
// for the transaction to end: inside InTx's fn, read through the tx.
func (h Shared) Reader() *bun.DB { return h.s.read }

// InTx runs fn in one transaction on the writer, queued with the engine's own transactions
// in arrival order on SQLite (Store.InTx): fn's error is returned as it is.
func (h Shared) InTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	defer h.s.lockWriter()()
	return h.s.write.RunInTx(ctx, nil, fn)
}

// Ready is the engine's readiness (Store.Ready): a store beside it serves only when the
// database it shares does.
func (h Shared) Ready(ctx context.Context) error { return h.s.Ready(ctx) }
