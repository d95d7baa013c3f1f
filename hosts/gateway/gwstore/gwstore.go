// Package gwstore is the gateway's data: integrators' accounts, the organizations they own
// and the keys to them, usage and shared rate-limit buckets, people (sign-in codes,
// sessions, approver roles, sign-in policies) and the operator's records (tiers, issued
// licenses). It is the bun implementation, for SQLite and PostgreSQL, of what the gateway
// declares it needs (gateway.Store), with its own migrations recorded in a table of its own
// (gateway_migrations): the engine's store knows none of these tables.
//
// The tables live in the engine's database, through the engine store's connections
// (store.Shared): on SQLite every write goes through the engine store's one writer
// connection and every transaction queues with the engine's, never a second writer on the
// same file. A Store does not own those connections: closing the engine's store closes it.
//
// Errors wrap ErrNotFound, ErrConflict and ErrInvalidCursor, and never carry SQL text.
package gwstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/sqlerr"
	"github.com/svcflow/svcflow/internal/sqlpage"
)

// Sentinel errors of the store. Check with errors.Is.
var (
	// ErrNotFound: no such row (for an organization or key read, none of this account's).
	// It is svctype.ErrNotFound, as the engine's stores wrap.
	ErrNotFound = svctype.ErrNotFound
	// ErrConflict: a unique value is taken, or the row changed meanwhile (svctype.ErrConflict).
	ErrConflict = svctype.ErrConflict
	// ErrInvalidCursor: a paging cursor that the listing did not issue.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrSchemaBehind: the database answers but lacks gateway migrations this build has
	// (Ready). The engine's own schema being behind is the engine store's error.
	ErrSchemaBehind = errors.New("gateway schema is behind this build")
)

const dialectPostgres = "postgres"

// Store is the gateway's storage over the engine store's database.
type Store struct {
	db       store.Shared
	w        *bun.DB // the writer (SQLite's one connection)
	r        *bun.DB // plain reads
	postgres bool
}

// New returns the gateway's store over db, the engine store's database (store.Store's
// Shared). It does not migrate: call Migrate.
func New(db store.Shared) *Store {
	return &Store{db: db, w: db.Writer(), r: db.Reader(), postgres: db.Dialect() == dialectPostgres}
}

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.db.Dialect() }

// atomic runs fn in one transaction on the writer, queued with the engine's transactions:
// for the methods that write more than one statement.
func (s *Store) atomic(ctx context.Context, fn func(ctx context.Context, tx bun.IDB) error) error {
	return s.db.InTx(ctx, func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx) })
}

// wrap turns a database error into the store's: sql.ErrNoRows is ErrNotFound, a unique
// violation ErrConflict. Driver messages are kept for other errors: neither pgx nor SQLite
// puts the statement or its values in them.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("gwstore: %s: %w", op, ErrNotFound)
	case sqlerr.IsUniqueViolation(err):
		return fmt.Errorf("gwstore: %s: %w", op, ErrConflict)
	}
	return fmt.Errorf("gwstore: %s: %w", op, err)
}

func notFound(op string) error { return fmt.Errorf("gwstore: %s: %w", op, ErrNotFound) }
func conflict(op string) error { return fmt.Errorf("gwstore: %s: %w", op, ErrConflict) }

// checkAffected returns the error of counting res's rows, or none(op) when the statement
// touched no row, or nil. A failure to count is an error of its own: read as zero it would
// be reported as a missing row or a conflict, neither of which happened.
func checkAffected(op string, res sql.Result, none func(op string) error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("gwstore: %s: counting affected rows: %w", op, err)
	}
	if n == 0 {
		return none(op)
	}
	return nil
}

// Times are stored in UTC to the microsecond (PostgreSQL's precision).
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func now() time.Time { return dbTime(time.Now()) }

// orNow returns t in store form, or current when t is zero.
func orNow(t, current time.Time) time.Time {
	if t.IsZero() {
		return current
	}
	return dbTime(t)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// laterOf keeps a bucket's clock from running backwards when gateway clocks differ a little.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Listing pages: internal/sqlpage's limits, cursors and keyset query, the engine's, with
// its errors the gateway's (pageErr).

func pageLimit(opts svctype.ListOptions) int { return sqlpage.Limit(opts) }

// malformedCursor: the caller sent a cursor that no listing issued.
func malformedCursor() error { return fmt.Errorf("gwstore: %w", ErrInvalidCursor) }

// pageByCreated finishes a listing of model M by (created_at, id), newest first when desc
// (sqlpage.ByCreated): sel has the filters. op names the operation.
func pageByCreated[M, T any](ctx context.Context, op string, sel *bun.SelectQuery, desc bool, opts svctype.ListOptions,
	key func(*M) (time.Time, string), conv func(*M) (T, error)) (svctype.Page[T], error) {
	page, err := sqlpage.ByCreated(ctx, sel, desc, opts, key, conv)
	return page, pageErr(op, err)
}

// pageErr is the gateway's error for a listing's: a malformed cursor is the caller's
// (malformedCursor), any other is wrapped for op.
func pageErr(op string, err error) error {
	if errors.Is(err, sqlpage.ErrMalformedCursor) {
		return malformedCursor()
	}
	return wrap(op, err)
}
