package gwstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/uptrace/bun/migrate"

	"github.com/svcflow/svcflow/hosts/gateway/gwstore/migrations"
)

// Where the gateway's migrations (migrations.All) are recorded: tables of its own, beside
// the engine's bun_migrations.
const (
	migrationsTable      = "gateway_migrations"
	migrationsLocksTable = "gateway_migration_locks"
)

// schemaHistory is the migrations of gwstore/migrations, for bun's migrator.
func schemaHistory() *migrate.Migrations {
	ms := migrate.NewMigrations()
	for _, m := range migrations.All() {
		ms.Add(m)
	}
	return ms
}

// Migrate brings the gateway's schema up to date; it is safe to call on every start and
// from several processes at once. On PostgreSQL it holds an advisory lock of its own (one
// per schema) for the duration, so processes starting together migrate one after the
// other; on SQLite the one writer connection and SQLite's own locking serialize it.
func (s *Store) Migrate(ctx context.Context) error {
	if s.postgres {
		unlock, err := s.migrationLock(ctx)
		if err != nil {
			return err
		}
		defer unlock()
	}
	m := migrate.NewMigrator(s.w, schemaHistory(),
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
	all := migrations.All()
	missing := 0
	for _, m := range all {
		if !have[m.Name] {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("gwstore: %d of %d gateway migrations not applied: %w", missing, len(all), ErrSchemaBehind)
	}
	return nil
}
