package migrations

import (
	"context"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// step is one part of a migration, run in its transaction.
type step func(ctx context.Context, tx bun.Tx) error

// statements is a step that runs these statements in order (see exec).
func statements(sql ...string) step {
	return func(ctx context.Context, tx bun.Tx) error {
		return exec(ctx, tx, sql...)
	}
}

// inTx is a migration's Up: its steps in order, in one transaction.
func inTx(steps ...step) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, s := range steps {
				if err := s(ctx, tx); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// The column types the two dialects write differently: the types bun gave the Go fields
// (int and int64, time.Time, []byte, json.RawMessage, an autoincrement primary key) of the
// models these tables were first created from. JSON is NUMERIC affinity on SQLite, harmless
// for a column that only holds objects.
var (
	sqliteTypes = strings.NewReplacer(
		"{int}", "INTEGER",
		"{time}", "TIMESTAMP",
		"{bytes}", "BLOB",
		"{json}", "JSON",
		"{serial}", "INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT")
	postgresTypes = strings.NewReplacer(
		"{int}", "BIGINT",
		"{time}", "TIMESTAMPTZ",
		"{bytes}", "BYTEA",
		"{json}", "JSONB",
		"{serial}", "BIGSERIAL NOT NULL PRIMARY KEY")
)

// exec runs statements in order, with the dialect's column types in place of {int},
// {time}, {bytes}, {json} and {serial}.
func exec(ctx context.Context, tx bun.Tx, statements ...string) error {
	types := sqliteTypes
	if postgres(tx) {
		types = postgresTypes
	}
	for _, s := range statements {
		if _, err := tx.ExecContext(ctx, types.Replace(s)); err != nil {
			return err
		}
	}
	return nil
}

// addColumn adds a column to table unless it is there already (SQLite has no ADD COLUMN IF
// NOT EXISTS); definition is the column's name and type, as in "claims BIGINT NOT NULL
// DEFAULT 0".
func addColumn(ctx context.Context, tx bun.Tx, table, definition string) error {
	name, _, _ := strings.Cut(definition, " ")
	exists, err := hasColumn(ctx, tx, table, name)
	if err != nil || exists {
		return err
	}
	return exec(ctx, tx, `ALTER TABLE "`+table+`" ADD COLUMN `+definition)
}

func hasColumn(ctx context.Context, db bun.IDB, table, column string) (bool, error) {
	var n int
	var err error
	if postgres(db) {
		err = db.NewRaw(`SELECT count(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`, table, column).Scan(ctx, &n)
	} else {
		err = db.NewRaw(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(ctx, &n)
	}
	return n > 0, err
}

func postgres(db bun.IDB) bool {
	return db.Dialect().Name() == dialect.PG
}

// The way this package writes a migration, for a store beside the engine's that keeps its
// own schema history in the same database the same way (the gateway's,
// hosts/gateway/gwstore/migrations): SQL text with {int}, {time}, {bytes}, {json} and
// {serial} for the column types the dialects spell differently, guarded ADD COLUMNs, each
// migration in one transaction.

// Step is one part of a migration, run in its transaction.
type Step = step

// Statements is a step that runs these statements in order (see Exec).
func Statements(sql ...string) Step { return statements(sql...) }

// InTx is a migration's Up: its steps in order, in one transaction.
func InTx(steps ...Step) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return inTx(steps...)
}

// Exec runs statements in order, with the dialect's column types in place of {int},
// {time}, {bytes}, {json} and {serial}.
func Exec(ctx context.Context, tx bun.Tx, statements ...string) error {
	return exec(ctx, tx, statements...)
}

// AddColumn adds a column to table unless it is there already; definition is the column's
// name and type, as in "claims BIGINT NOT NULL DEFAULT 0".
func AddColumn(ctx context.Context, tx bun.Tx, table, definition string) error {
	return addColumn(ctx, tx, table, definition)
}
