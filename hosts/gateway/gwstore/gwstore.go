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
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
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
	case isUniqueViolation(err):
		return fmt.Errorf("gwstore: %s: %w", op, ErrConflict)
	}
	return fmt.Errorf("gwstore: %s: %w", op, err)
}

func notFound(op string) error { return fmt.Errorf("gwstore: %s: %w", op, ErrNotFound) }
func conflict(op string) error { return fmt.Errorf("gwstore: %s: %w", op, ErrConflict) }

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		case sqlite3.SQLITE_CONSTRAINT:
			return strings.Contains(liteErr.Error(), "UNIQUE constraint failed")
		}
	}
	return false
}

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

// Listing pages: the same limits and cursor forms as the engine's listings.

const (
	defaultPageLimit = 50
	maxPageLimit     = 500
	// maxCursorLen is far above any cursor a listing issues: a longer one is not decoded.
	maxCursorLen = 1024
)

func pageLimit(opts svctype.ListOptions) int {
	switch {
	case opts.Limit <= 0:
		return defaultPageLimit
	case opts.Limit > maxPageLimit:
		return maxPageLimit
	}
	return opts.Limit
}

// malformedCursor: the caller sent a cursor that no listing issued.
func malformedCursor() error { return fmt.Errorf("gwstore: %w", ErrInvalidCursor) }

// A cursor is the position of the last item of a page: its sort key, opaque to callers.
func encodeCursor(parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, "\x00")))
}

func decodeCursor(cursor string, n int) ([]string, error) {
	if len(cursor) > maxCursorLen {
		return nil, malformedCursor()
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		if parts := strings.Split(string(b), "\x00"); len(parts) == n {
			return parts, nil
		}
	}
	return nil, malformedCursor()
}

func encodeTimeCursor(t time.Time, id string) string {
	return encodeCursor(t.UTC().Format(time.RFC3339Nano), id)
}

func decodeTimeCursor(cursor string) (time.Time, string, error) {
	parts, err := decodeCursor(cursor, 2)
	if err != nil {
		return time.Time{}, "", err
	}
	t, perr := time.Parse(time.RFC3339Nano, parts[0])
	if perr != nil {
		return time.Time{}, "", malformedCursor()
	}
	return dbTime(t), parts[1], nil
}

// pageByCreated finishes a listing of model M by (created_at, id), newest first when desc:
// sel has the filters; this adds the order, the limit, the cursor and scans the page.
func pageByCreated[M, T any](ctx context.Context, op string, sel *bun.SelectQuery, desc bool, opts svctype.ListOptions,
	key func(*M) (time.Time, string), conv func(*M) (T, error)) (svctype.Page[T], error) {
	var page svctype.Page[T]
	limit := pageLimit(opts)
	order, after := "created_at ASC, id ASC", ">"
	if desc {
		order, after = "created_at DESC, id DESC", "<"
	}
	sel = sel.OrderExpr(order).Limit(int64(limit + 1))
	if opts.Cursor != "" {
		at, id, err := decodeTimeCursor(opts.Cursor)
		if err != nil {
			return page, err
		}
		sel = sel.Where("(created_at "+after+" ? OR (created_at = ? AND id "+after+" ?))", at, at, id)
	}
	var ms []M
	if err := sel.Scan(ctx, &ms); err != nil {
		return page, wrap(op, err)
	}
	page, err := pageOf(ms, limit, func(m *M) string { return encodeTimeCursor(key(m)) }, conv)
	return page, wrap(op, err)
}

// pageOf turns the rows of a listing query (which asks for limit+1 rows) into a page: at
// most limit items converted by conv, and the cursor of the last one when a row more was
// found.
func pageOf[M, T any](ms []M, limit int, cursor func(*M) string, conv func(*M) (T, error)) (svctype.Page[T], error) {
	page := svctype.Page[T]{Items: make([]T, 0, min(len(ms), limit))}
	for i := range ms {
		if i == limit {
			page.NextCursor = cursor(&ms[i-1])
			break
		}
		item, err := conv(&ms[i])
		if err != nil {
			return page, err
		}
		page.Items = append(page.Items, item)
	}
	return page, nil
}
