package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store/migrations"
)

// Migrate brings the schema up to date. On PostgreSQL it holds an advisory lock (one per
// schema) for the duration, so processes starting together migrate one after the other;
// on SQLite the single writer connection and SQLite's own locking serialize it.
func (s *Store) Migrate(ctx context.Context) error {
	if s.dialect == dialectPostgres {
		conn, err := s.write.Conn(ctx)
		if err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
		defer conn.Close()
		var schema string
		if err := conn.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
			return fmt.Errorf("store: migrate: current schema: %w", err)
		}
		key := migrationLockKey(schema)
		if _, err := conn.NewRaw("SELECT pg_advisory_lock(?)", key).Exec(ctx); err != nil {
			return fmt.Errorf("store: migrate: lock: %w", err)
		}
		defer func() {
			// Unlock even when ctx is done; closing the connection would release it anyway.
			unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = conn.NewRaw("SELECT pg_advisory_unlock(?)", key).Exec(unlockCtx)
		}()
	}
	m := newMigrator(s.write)
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("store: migrate: init: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if s.prepared != nil {
		if err := s.prepared.prepare(ctx); err != nil {
			return fmt.Errorf("store: migrate: prepare: %w", err)
		}
	}
	return nil
}

// schemaHistory is the migrations of engine/store/migrations, for bun's migrator.
func schemaHistory() *migrate.Migrations {
	ms := migrate.NewMigrations()
	for _, m := range migrations.All() {
		ms.Add(m)
	}
	return ms
}

// migrationsTable is where the migrations applied are recorded.
const migrationsTable = "bun_migrations"

func newMigrator(db *bun.DB) *migrate.Migrator {
	return migrate.NewMigrator(db, schemaHistory(),
		migrate.WithTableName(migrationsTable),
		migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithUpsert(true))
}

// Ready implements storage.Readiness: one read of the migrations table, on the read pool
// (never SQLite's writer, so a probe does not queue behind step commits), compared with
// the migrations this build has. Migrations the database has and this build does not (a
// newer build migrated it) are not an error here.
func (s *Store) Ready(ctx context.Context) error {
	var applied []string
	if err := s.read.NewSelect().Table(migrationsTable).Column("name").Scan(ctx, &applied); err != nil {
		return fmt.Errorf("store: ready: %w", err)
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
		return fmt.Errorf("store: %d of %d migrations not applied: %w", missing, len(all), storage.ErrSchemaBehind)
	}
	return nil
}

// sqliteSchemaCurrent reports whether every migration has been applied to the SQLite
// database.
func (s *Store) sqliteSchemaCurrent(ctx context.Context) (bool, error) {
	var tables int
	err := s.write.NewRaw(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, migrationsTable).
		Scan(ctx, &tables)
	if err != nil || tables == 0 {
		return false, err
	}
	ms, err := newMigrator(s.write).MigrationsWithStatus(ctx)
	if err != nil {
		return false, err
	}
	return len(ms.Unapplied()) == 0, nil
}

func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("svcflow.migrate:" + schema))
	return int64(h.Sum64())
}
