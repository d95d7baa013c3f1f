package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/sqlerr"
	"github.com/svcflow/svcflow/internal/sqlpage"
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
	case sqlerr.IsUniqueViolation(err):
		return fmt.Errorf("store: %s: %w", op, storage.ErrConflict)
	case sqlerr.IsForeignKeyViolation(err):
		return fmt.Errorf("store: %s: %w", op, storage.ErrNotFound)
	case sqlerr.IsTryAgain(err):
		return fmt.Errorf("store: %s: %w", op, tryAgain{err})
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// tryAgain is a database error that aborted its transaction over a conflict with another
// (sqlerr.IsTryAgain): errors.Is finds storage.ErrTryAgain in it, errors.As the driver's
// error, and its message is the driver's.
type tryAgain struct{ err error }

func (t tryAgain) Error() string        { return t.err.Error() }
func (t tryAgain) Unwrap() error        { return t.err }
func (t tryAgain) Is(target error) bool { return target == storage.ErrTryAgain }

// markTryAgain is err, marked as storage.ErrTryAgain when it is a database's abort over a
// conflict that nothing on its way marked (a transaction's fn may wrap a statement's error
// in its own).
func markTryAgain(err error) error {
	if err == nil || errors.Is(err, storage.ErrTryAgain) || !sqlerr.IsTryAgain(err) {
		return err
	}
	return tryAgain{err}
}

func notFound(op string) error { return fmt.Errorf("store: %s: %w", op, storage.ErrNotFound) }
func conflict(op string) error { return fmt.Errorf("store: %s: %w", op, storage.ErrConflict) }
func leaseLost(op string) error {
	return fmt.Errorf("store: %s: %w", op, storage.ErrLeaseLost)
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

// insertNew inserts m through db, or answers ErrConflict (wrapped for op) when a row has its
// key already: DO NOTHING rather than a unique violation, which on PostgreSQL would abort
// the caller's transaction.
func insertNew(ctx context.Context, db bun.IDB, op string, m any) error {
	res, err := db.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
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

// Listing pages: internal/sqlpage's limits, cursors and keyset query, under the names the
// store's listings use, with its errors the store's (pageErr).

func pageLimit(opts svctype.ListOptions) int { return sqlpage.Limit(opts) }

// listByName pages an organization's rows of model M by a unique text column (a name),
// ascending (pageByName). op names the operation in errors.
func listByName[M, T any](ctx context.Context, q *querier, op, orgID, column string, opts svctype.ListOptions,
	name func(*M) string, conv func(*M) (T, error)) (svctype.Page[T], error) {
	sel := q.r.NewSelect().Model((*M)(nil)).Where("org_id = ?", orgID)
	return pageByName(ctx, op, sel, column, opts, name, conv)
}

// pageByName finishes a listing of rows M by a unique text column, ascending: sel has the
// organization and the filters; this adds the order, the limit, the cursor (the last
// row's name) and scans the page. op names the operation in errors.
func pageByName[M, T any](ctx context.Context, op string, sel *bun.SelectQuery, column string, opts svctype.ListOptions,
	name func(*M) string, conv func(*M) (T, error)) (svctype.Page[T], error) {
	var page svctype.Page[T]
	limit := pageLimit(opts)
	sel = sel.OrderExpr("? ASC", bun.Ident(column)).Limit(int64(limit + 1))
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
	return page, wrap(op, err)
}

// pageByCreated finishes a listing of model M by (created_at, id), newest first when desc
// (sqlpage.ByCreated): sel has the organization and the filters. op names the operation.
func pageByCreated[M, T any](ctx context.Context, op string, sel *bun.SelectQuery, desc bool, opts svctype.ListOptions,
	key func(*M) (time.Time, string), conv func(*M) (T, error)) (svctype.Page[T], error) {
	page, err := sqlpage.ByCreated(ctx, sel, desc, opts, key, conv)
	return page, pageErr(op, err)
}

// pageErr is the store's error for a listing's: a malformed cursor is the caller's
// (malformedCursor), any other is wrapped for op.
func pageErr(op string, err error) error {
	if errors.Is(err, sqlpage.ErrMalformedCursor) {
		return malformedCursor()
	}
	return wrap(op, err)
}

// pageOf turns the rows of a listing query (which asks for limit+1 rows) into a page
// (sqlpage.Of).
func pageOf[M, T any](ms []M, limit int, cursor func(*M) string, conv func(*M) (T, error)) (svctype.Page[T], error) {
	return sqlpage.Of(ms, limit, cursor, conv)
}

// valueOf adapts a model's conversion to a pointer (toWorkflow, toAction, ...) to the
// conversion to a value that a page holds.
func valueOf[M, T any](conv func(*M) (*T, error)) func(*M) (T, error) {
	return func(m *M) (T, error) {
		t, err := conv(m)
		if err != nil {
			var zero T
			return zero, err
		}
		return *t, nil
	}
}

// A cursor is the position of the last item of a page: its sort key, opaque to callers.
func encodeCursor(parts ...string) string { return sqlpage.EncodeCursor(parts...) }

func decodeCursor(cursor string, n int) ([]string, error) {
	parts, err := sqlpage.DecodeCursor(cursor, n)
	if err != nil {
		return nil, malformedCursor()
	}
	return parts, nil
}

func encodeTimeCursor(t time.Time, id string) string { return sqlpage.EncodeTimeCursor(t, id) }

func decodeTimeCursor(cursor string) (time.Time, string, error) {
	t, id, err := sqlpage.DecodeTimeCursor(cursor)
	if err != nil {
		return time.Time{}, "", malformedCursor()
	}
	return t, id, nil
}

// malformedCursor: the caller sent a cursor that no listing issued.
func malformedCursor() error { return fmt.Errorf("store: %w", storage.ErrInvalidCursor) }
