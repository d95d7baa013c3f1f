package gwstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// migration is one step of the gateway's schema history. Its name (a timestamp) orders it
// and is what the migrations table records; up runs in one transaction. A migration builds
// its tables from models frozen in its own file (never the runtime models, which follow the
// latest schema) with bun's query builder, so one step serves SQLite and PostgreSQL.
type migration struct {
	name    string
	comment string
	up      func(ctx context.Context, tx bun.Tx, postgres bool) error
}

// migrations is the gateway's schema history in the order it is applied: a new migration
// is a new file (migration_<name>.go) and goes at the end, with a later name. Every step
// creates IF NOT EXISTS and adds a column only when it is missing: the engine's migrations
// created these tables (under the same names) before the gateway had migrations of its own,
// and on such a database the steps adopt what is there, keeping every row, and record
// themselves in the gateway's table. A step run twice, or by two processes at once,
// converges.
var migrations = []migration{
	migration20261124000140, // accounts, organizations, keys, usage, buckets
	migration20261126000150, // sign-in codes, sessions, approver roles, tiers, licenses; account tier
	migration20261128000200, // sign-in policies; a session's form
}

// Where the gateway's migrations are recorded: tables of its own, beside the engine's
// bun_migrations.
const (
	migrationsTable      = "gateway_migrations"
	migrationsLocksTable = "gateway_migration_locks"
)

// bunMigrations is the list as bun's migrator takes it, checked to be in name order (bun
// applies in name order: the list's order must be that one).
func bunMigrations() (*migrate.Migrations, error) {
	ms := migrate.NewMigrations()
	for i, m := range migrations {
		if i > 0 && m.name <= migrations[i-1].name {
			return nil, fmt.Errorf("gwstore: migration %s is listed after %s: the list is in name order", m.name, migrations[i-1].name)
		}
		ms.Add(migrate.Migration{Name: m.name, Comment: m.comment,
			Up: func(ctx context.Context, mg *migrate.Migrator, _ *migrate.Migration) error {
				postgres := mg.DB().Dialect().Name() == dialect.PG
				return mg.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return m.up(ctx, tx, postgres) })
			}})
	}
	return ms, nil
}

// Migrate brings the gateway's schema up to date; it is safe to call on every start and
// from several processes at once. On PostgreSQL it holds an advisory lock of its own (one
// per schema) for the duration, so processes starting together migrate one after the
// other; on SQLite the one writer connection and SQLite's own locking serialize it.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := bunMigrations()
	if err != nil {
		return err
	}
	if s.postgres {
		unlock, err := s.migrationLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	m := migrate.NewMigrator(s.w, ms,
		migrate.WithTableName(migrationsTable),
		migrate.WithLocksTableName(migrationsLocksTable),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithUpsert(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("gwstore: migrate: init: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("gwstore: migrate: %w", err)
	}
	return nil
}

// migrationLock takes PostgreSQL's advisory lock of the gateway's migrations in the current
// schema on a connection of its own, and returns its release.
func (s *Store) migrationLock(ctx context.Context) (func(), error) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("gwstore: migrate: %w", err)
	}
	var schema string
	if err := conn.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("gwstore: migrate: current schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("svcflow.migrate.gateway:" + schema))
	key := int64(h.Sum64())
	if _, err := conn.NewRaw("SELECT pg_advisory_lock(?)", key).Exec(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("gwstore: migrate: lock: %w", err)
	}
	return func() {
		// Unlock even when ctx is done; closing the connection would release it anyway.
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.NewRaw("SELECT pg_advisory_unlock(?)", key).Exec(unlockCtx)
		_ = conn.Close()
	}, nil
}

// Ready is whether the gateway can serve this build on its database: the engine's schema
// first (the engine store's Ready, whose error is returned as it is), then one read of the
// gateway's migrations table on the read pool (never SQLite's writer, so a probe does not
// queue behind step commits), compared with the migrations this build has: ErrSchemaBehind
// (wrapped) when one is missing. Migrations the database has and this build does not (a
// newer build migrated it) are not an error here.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.db.Ready(ctx); err != nil {
		return err
	}
	var applied []string
	if err := s.r.NewSelect().Table(migrationsTable).Column("name").Scan(ctx, &applied); err != nil {
		return fmt.Errorf("gwstore: ready: %w", err)
	}
	have := make(map[string]bool, len(applied))
	for _, name := range applied {
		have[name] = true
	}
	missing := 0
	for _, m := range migrations {
		if !have[m.name] {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("gwstore: %d of %d gateway migrations not applied: %w", missing, len(migrations), ErrSchemaBehind)
	}
	return nil
}

// hasColumn reports whether table has column, in the current schema.
func hasColumn(ctx context.Context, db bun.IDB, postgres bool, table, column string) (bool, error) {
	var n int
	var err error
	if postgres {
		err = db.NewRaw(`SELECT count(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`, table, column).Scan(ctx, &n)
	} else {
		err = db.NewRaw(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(ctx, &n)
	}
	return n > 0, err
}

// addColumn adds column (of type and default def) to table unless it has one already.
func addColumn(ctx context.Context, tx bun.Tx, postgres bool, table, column, def string) error {
	exists, err := hasColumn(ctx, tx, postgres, table, column)
	if err != nil || exists {
		return err
	}
	_, err = tx.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN "+column+" "+def)
	return err
}

// createTables creates each model's table unless it exists.
func createTables(ctx context.Context, tx bun.Tx, models ...any) error {
	for _, model := range models {
		if _, err := tx.NewCreateTable().Model(model).IfNotExists().Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
