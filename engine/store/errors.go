package store

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

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// wrap turns a database error into the store's: sql.ErrNoRows is storage.ErrNotFound, a
// unique violation storage.ErrConflict, a foreign-key violation (a row for a table that does
// not exist) storage.ErrNotFound. Driver messages are kept for other errors: neither pgx
// nor SQLite puts the statement or its values in them.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: %s: %w", op, storage.ErrNotFound)
	case isUniqueViolation(err):
		return fmt.Errorf("store: %s: %w", op, storage.ErrConflict)
	case isForeignKeyViolation(err):
		return fmt.Errorf("store: %s: %w", op, storage.ErrNotFound)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

func notFound(op string) error { return fmt.Errorf("store: %s: %w", op, storage.ErrNotFound) }
func conflict(op string) error { return fmt.Errorf("store: %s: %w", op, storage.ErrConflict) }
func leaseLost(op string) error {
	return fmt.Errorf("store: %s: %w", op, storage.ErrLeaseLost)
}

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

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23503"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return true
		case sqlite3.SQLITE_CONSTRAINT:
			return strings.Contains(liteErr.Error(), "FOREIGN KEY constraint failed")
		}
	}
	return false
}

// affectedRows is res.RowsAffected with its error wrapped for op. A failure to count is
// an error of its own: read as zero it would be reported as a conflict, a missing row or a
// lost lease, none of which happened.
func affectedRows(op string, res sql.Result) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: %s: counting affected rows: %w", op, err)
	}
	return n, nil
}

// checkAffected returns the error of counting res's rows, or none(op) when the statement
// touched no row, or nil.
func checkAffected(op string, res sql.Result, none func(op string) error) error {
	n, err := affectedRows(op, res)
	if err != nil {
		return err
	}
	if n == 0 {
		return none(op)
	}
	return nil
}

// resealOutcome is the end of a compare-and-swap reseal (an UPDATE of the sealed bytes
// where they are still the ones read): a statement that touched no row found the row
// deleted since it was read (exists answers ErrNotFound) or changed (ErrConflict).
func resealOutcome(op string, res sql.Result, err error, exists func() error) error {
	if err != nil {
		return wrap(op, err)
	}
	n, err := affectedRows(op, res)
	if err != nil || n > 0 {
		return err
	}
	if err := exists(); err != nil {
		return err
	}
	return conflict(op)
}

// Listing pages.

const (
	defaultPageLimit = 50
	maxPageLimit     = 500
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

// listByName pages an organization's rows of model M by a unique text column (a name),
// ascending; the cursor is the last row's name. op names the operation in errors.
func listByName[M, T any](ctx context.Context, q *querier, op, orgID, column string, opts svctype.ListOptions,
	name func(*M) string, conv func(*M) (T, error)) (svctype.Page[T], error) {
	var page svctype.Page[T]
	limit := pageLimit(opts)
	sel := q.r.NewSelect().Model((*M)(nil)).
		Where("org_id = ?", orgID).
		OrderExpr("? ASC", bun.Ident(column)).
		Limit(int64(limit + 1))
	if opts.Cursor != "" {
		parts, err := decodeCursor(opts.Cursor, 1)
		if err != nil {
			return page, err
		}
		sel = sel.Where("? > ?", bun.Ident(column), parts[0])
	}
	var ms []M
	if err := sel.Scan(ctx, &ms); err != nil {
		return page, wrap(op, err)
	}
	page, err := pageOf(ms, limit, func(m *M) string { return encodeCursor(name(m)) }, conv)
	if err != nil {
		return page, wrap(op, err)
	}
	return page, nil
}

// pageByCreated finishes a listing of model M by (created_at, id), newest first when desc:
// sel has the organization and the filters; this adds the order, the limit, the cursor
// (an encodeTimeCursor of the last row) and scans the page. op names the operation.
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
	if err != nil {
		return page, wrap(op, err)
	}
	return page, nil
}

// pageOf turns the rows of a listing query (which asks for limit+1 rows) into a page:
// at most limit items converted by conv, and the cursor of the last one when a row more
// was found.
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

// A cursor is the position of the last item of a page: its sort key, opaque to callers.
func encodeCursor(parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, "\x00")))
}

// maxCursorLen is far above any cursor a listing issues (a time and a UUID, or a table
// name, base64-encoded): a longer one was not issued, and is not decoded.
const maxCursorLen = 1024

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

// malformedCursor: the caller sent a cursor that no listing issued.
func malformedCursor() error { return fmt.Errorf("store: %w", storage.ErrInvalidCursor) }
