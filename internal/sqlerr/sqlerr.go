// Package sqlerr reads the constraint a database error reports, for PostgreSQL (pgx) and
// SQLite (modernc.org/sqlite): what the engine's store (engine/store) and the gateway's
// (hosts/gateway/gwstore) turn into their conflicts and missing rows. It maps to no
// store's error: that stays each store's.
package sqlerr

import (
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// IsUniqueViolation reports whether err is a unique (or primary key) constraint's.
func IsUniqueViolation(err error) bool {
	return is(err, "23505", "UNIQUE constraint failed",
		sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// IsForeignKeyViolation reports whether err is a foreign key constraint's.
func IsForeignKeyViolation(err error) bool {
	return is(err, "23503", "FOREIGN KEY constraint failed", sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY)
}

// IsTryAgain reports whether err is PostgreSQL aborting a transaction to settle a conflict
// with another one: a deadlock (40P01) or a serialization failure (40001). The
// transaction kept nothing and the same work may be tried again. SQLite has no such error
// here: its one writer takes transactions in turn.
func IsTryAgain(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// is reports whether err is PostgreSQL's pgCode, or SQLite's one of liteCodes (extended
// result codes), or its bare SQLITE_CONSTRAINT with liteText in the message (without
// extended result codes SQLite says which constraint only there).
func is(err error, pgCode, liteText string, liteCodes ...int) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == pgCode
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		code := liteErr.Code()
		return slices.Contains(liteCodes, code) ||
			code == sqlite3.SQLITE_CONSTRAINT && strings.Contains(liteErr.Error(), liteText)
	}
	return false
}
