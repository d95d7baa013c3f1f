package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"

	"github.com/svcflow/svcflow/engine/storage"
)

// migrations is the schema history, one set for both dialects. A migration builds its
// tables from models frozen in this file (never the runtime models of models.go, which
// follow the latest schema) with bun's query builder, so the same code serves SQLite and
// PostgreSQL. Every statement is IF NOT EXISTS and each migration runs in one transaction,
// so a migration run twice, or by two processes at once, converges.
var migrations = migrate.NewMigrations()

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20250601000001",
		Comment: "initial_schema",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return createSchemaV1(ctx, tx)
			})
		},
	})
}

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

// migrationsTable is where the migrations applied are recorded.
const migrationsTable = "bun_migrations"

func newMigrator(db *bun.DB) *migrate.Migrator {
	return migrate.NewMigrator(db, migrations,
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
	all := migrations.Sorted()
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

// Schema version 1, frozen. Column types: strings are VARCHAR (TEXT affinity on SQLite),
// times TIMESTAMP(TZ), opaque JSON documents text; v1Row.Data is JSONB on PostgreSQL and
// JSON on SQLite (NUMERIC affinity, harmless for a column that only holds objects).

type v1Workflow struct {
	bun.BaseModel `bun:"table:workflows"`

	OrgID      string    `bun:"org_id,pk"`
	ID         string    `bun:"id,pk"`
	Name       string    `bun:"name,notnull"`
	Version    int       `bun:"version,notnull"`
	Definition string    `bun:"definition,type:text"`
	Warnings   string    `bun:"warnings,type:text"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
	UpdatedAt  time.Time `bun:"updated_at,notnull"`
}

type v1WorkflowVersion struct {
	bun.BaseModel `bun:"table:workflow_versions"`

	OrgID      string    `bun:"org_id,pk"`
	ID         string    `bun:"id,pk"`
	Version    int       `bun:"version,pk"`
	Name       string    `bun:"name,notnull"`
	Definition string    `bun:"definition,type:text"`
	Warnings   string    `bun:"warnings,type:text"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
}

type v1Run struct {
	bun.BaseModel `bun:"table:runs"`

	OrgID           string     `bun:"org_id,pk"`
	ID              string     `bun:"id,pk"`
	WorkflowID      string     `bun:"workflow_id,notnull"`
	WorkflowVersion int        `bun:"workflow_version,notnull"`
	Status          string     `bun:"status,notnull"`
	Input           string     `bun:"input,type:text"`
	Definition      string     `bun:"definition,type:text"`
	Cursor          string     `bun:"cursor,type:text"`
	Reason          string     `bun:"reason,notnull,default:''"`
	IdempotencyKey  string     `bun:"idempotency_key"`
	CreatedAt       time.Time  `bun:"created_at,notnull"`
	UpdatedAt       time.Time  `bun:"updated_at,notnull"`
	FinishedAt      *time.Time `bun:"finished_at"`
}

type v1IdempotencyKey struct {
	bun.BaseModel `bun:"table:idempotency_keys"`

	OrgID     string    `bun:"org_id,pk"`
	Key       string    `bun:"key,pk"`
	RunID     string    `bun:"run_id,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

type v1Context struct {
	bun.BaseModel `bun:"table:run_context"`

	OrgID string `bun:"org_id,pk"`
	RunID string `bun:"run_id,pk"`
	Key   string `bun:"key,pk"`
	Value string `bun:"value,type:text"`
}

type v1Step struct {
	bun.BaseModel `bun:"table:run_steps"`

	OrgID        string     `bun:"org_id,pk"`
	RunID        string     `bun:"run_id,pk"`
	Idx          int        `bun:"idx,pk"`
	Type         string     `bun:"type,notnull"`
	Status       string     `bun:"status,notnull"`
	InputSummary string     `bun:"input_summary,type:text"`
	Output       string     `bun:"output,type:text"`
	Effects      string     `bun:"effects,type:text"`
	Decisions    string     `bun:"decisions,type:text"`
	Error        string     `bun:"error,notnull,default:''"`
	StartedAt    *time.Time `bun:"started_at"`
	FinishedAt   *time.Time `bun:"finished_at"`
}

type v1LoopItem struct {
	bun.BaseModel `bun:"table:loop_items"`

	OrgID  string `bun:"org_id,pk"`
	RunID  string `bun:"run_id,pk"`
	Step   int    `bun:"step,pk"`
	Item   int    `bun:"item,pk"`
	Output string `bun:"output,type:text"`
}

type v1Event struct {
	bun.BaseModel `bun:"table:events"`

	Seq        int64     `bun:"seq,pk,autoincrement"`
	DeliveryID string    `bun:"delivery_id,notnull"`
	OrgID      string    `bun:"org_id,notnull"`
	RunID      string    `bun:"run_id,notnull"`
	Event      string    `bun:"event,notnull"`
	Timestamp  time.Time `bun:"ts,notnull"`
	Payload    string    `bun:"payload,type:text"`
}

type v1Job struct {
	bun.BaseModel `bun:"table:jobs"`

	ID         int64      `bun:"id,pk,autoincrement"`
	OrgID      string     `bun:"org_id,notnull"`
	Kind       string     `bun:"kind,notnull"`
	RunID      string     `bun:"run_id,notnull,default:''"`
	WorkflowID string     `bun:"workflow_id,notnull,default:''"`
	RunAt      time.Time  `bun:"run_at,notnull"`
	Attempts   int        `bun:"attempts,notnull,default:0"`
	LeaseToken string     `bun:"lease_token"`
	LeaseUntil *time.Time `bun:"lease_until"`
	Payload    string     `bun:"payload,type:text"`
}

type v1Table struct {
	bun.BaseModel `bun:"table:custom_tables"`

	OrgID     string    `bun:"org_id,pk"`
	Name      string    `bun:"name,pk"`
	Fields    string    `bun:"fields,type:text"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

type v1Row struct {
	bun.BaseModel `bun:"table:table_rows"`

	ID        string          `bun:"id,pk"`
	OrgID     string          `bun:"org_id,notnull"`
	TableName string          `bun:"table_name,notnull"`
	KeyHash   string          `bun:"key_hash"`
	Data      json.RawMessage `bun:"data,notnull"`
	CreatedAt time.Time       `bun:"created_at,notnull"`
	UpdatedAt time.Time       `bun:"updated_at,notnull"`
}

type v1Index struct {
	model   any
	name    string
	unique  bool
	columns []string
}

func createSchemaV1(ctx context.Context, db bun.IDB) error {
	tables := []struct {
		model any
		fks   []string
	}{
		{model: (*v1Workflow)(nil)},
		{model: (*v1WorkflowVersion)(nil)},
		{model: (*v1Run)(nil)},
		{model: (*v1IdempotencyKey)(nil)},
		{model: (*v1Context)(nil)},
		{model: (*v1Step)(nil)},
		{model: (*v1LoopItem)(nil)},
		{model: (*v1Event)(nil)},
		{model: (*v1Job)(nil)},
		{model: (*v1Table)(nil)},
		{model: (*v1Row)(nil), fks: []string{
			`("org_id", "table_name") REFERENCES "custom_tables" ("org_id", "name") ON DELETE CASCADE`,
		}},
	}
	for _, t := range tables {
		q := db.NewCreateTable().Model(t.model).IfNotExists()
		for _, fk := range t.fks {
			q = q.ForeignKey(fk)
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	indexes := []v1Index{
		{(*v1Workflow)(nil), "workflows_org_name", true, []string{"org_id", "name"}},
		{(*v1Workflow)(nil), "workflows_org_created", false, []string{"org_id", "created_at", "id"}},
		{(*v1Run)(nil), "runs_org_created", false, []string{"org_id", "created_at", "id"}},
		{(*v1Run)(nil), "runs_org_workflow_created", false, []string{"org_id", "workflow_id", "created_at", "id"}},
		{(*v1Event)(nil), "events_org_run_seq", false, []string{"org_id", "run_id", "seq"}},
		{(*v1Job)(nil), "jobs_run_at", false, []string{"run_at", "id"}},
		{(*v1Job)(nil), "jobs_org_run", false, []string{"org_id", "run_id"}},
		{(*v1Job)(nil), "jobs_org_workflow", false, []string{"org_id", "workflow_id"}},
		// NULL key hashes (rows from InsertRow) are distinct in a unique index on both dialects.
		{(*v1Row)(nil), "table_rows_org_table_key", true, []string{"org_id", "table_name", "key_hash"}},
		{(*v1Row)(nil), "table_rows_org_table_created", false, []string{"org_id", "table_name", "created_at", "id"}},
	}
	for _, ix := range indexes {
		q := db.NewCreateIndex().Model(ix.model).Index(ix.name).Column(ix.columns...).IfNotExists()
		if ix.unique {
			q = q.Unique()
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Schema version 2, frozen: documents. A document row carries its latest version's content
// type and size; versions are immutable; document_blobs holds the content when it is kept in
// the database (the default), one row per version; document_tags indexes tags for the ?tag=
// filter (the document row keeps them in order); document_event_subjects records the tags
// and content type of the document each document event is about, for webhook filters.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261122000001",
		Comment: "documents",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return createSchemaV2(ctx, tx)
			})
		},
	})
}

type v2Document struct {
	bun.BaseModel `bun:"table:documents"`

	OrgID       string     `bun:"org_id,pk"`
	ID          string     `bun:"id,pk"`
	Name        string     `bun:"name,notnull"`
	ContentType string     `bun:"content_type,notnull"`
	Tags        string     `bun:"tags,type:text"`
	SizeBytes   int64      `bun:"size_bytes,notnull"`
	Version     int        `bun:"version,notnull"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	CreatedAt   time.Time  `bun:"created_at,notnull"`
	UpdatedAt   time.Time  `bun:"updated_at,notnull"`
}

type v2DocumentVersion struct {
	bun.BaseModel `bun:"table:document_versions"`

	OrgID       string    `bun:"org_id,pk"`
	DocumentID  string    `bun:"document_id,pk"`
	Version     int       `bun:"version,pk"`
	ContentType string    `bun:"content_type,notnull"`
	SizeBytes   int64     `bun:"size_bytes,notnull"`
	SHA256      string    `bun:"sha256,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

type v2DocumentBlob struct {
	bun.BaseModel `bun:"table:document_blobs"`

	OrgID      string `bun:"org_id,pk"`
	DocumentID string `bun:"document_id,pk"`
	Version    int    `bun:"version,pk"`
	Data       []byte `bun:"data,notnull"`
}

type v2DocumentTag struct {
	bun.BaseModel `bun:"table:document_tags"`

	OrgID      string `bun:"org_id,pk"`
	DocumentID string `bun:"document_id,pk"`
	Tag        string `bun:"tag,pk"`
}

type v2DocumentEventSubject struct {
	bun.BaseModel `bun:"table:document_event_subjects"`

	OrgID       string `bun:"org_id,pk"`
	DeliveryID  string `bun:"delivery_id,pk"`
	DocumentID  string `bun:"document_id,notnull"`
	ContentType string `bun:"content_type,notnull"`
	Tags        string `bun:"tags,type:text"`
}

func createSchemaV2(ctx context.Context, db bun.IDB) error {
	tables := []struct {
		model any
		fks   []string
	}{
		{model: (*v2Document)(nil)},
		{model: (*v2DocumentVersion)(nil), fks: []string{
			`("org_id", "document_id") REFERENCES "documents" ("org_id", "id") ON DELETE CASCADE`,
		}},
		{model: (*v2DocumentBlob)(nil), fks: []string{
			`("org_id", "document_id", "version") REFERENCES "document_versions" ("org_id", "document_id", "version") ON DELETE CASCADE`,
		}},
		{model: (*v2DocumentTag)(nil), fks: []string{
			`("org_id", "document_id") REFERENCES "documents" ("org_id", "id") ON DELETE CASCADE`,
		}},
		{model: (*v2DocumentEventSubject)(nil)},
	}
	for _, t := range tables {
		q := db.NewCreateTable().Model(t.model).IfNotExists()
		for _, fk := range t.fks {
			q = q.ForeignKey(fk)
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	indexes := []v1Index{
		{(*v2Document)(nil), "documents_org_created", false, []string{"org_id", "created_at", "id"}},
		{(*v2DocumentTag)(nil), "document_tags_org_tag", false, []string{"org_id", "tag", "document_id"}},
	}
	for _, ix := range indexes {
		q := db.NewCreateIndex().Model(ix.model).Index(ix.name).Column(ix.columns...).IfNotExists()
		if ix.unique {
			q = q.Unique()
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Schema version 3, frozen: table_rows.key_columns, and a repair of key hashes.
//
// key_hash identifies an upserted row by its key columns (the upsert's keys, in order) and
// their values. Before this version the key columns were not stored, so a PATCH that changed
// a key column left the row's hash at its old key: a later upsert of the old key overwrote
// the patched row, and one of the new key added a second row. The key columns are now stored
// with every upserted row (UpsertRow writes them; UpdateRows recomputes the hash from them).
//
// Rows written before then have a hash and no key columns. The repair finds, for each, the
// key columns whose hash it holds: first among those already found in its table, else by
// trying the row's own columns in every order, up to four of them. A row whose hash matches
// no such list was patched on a key column (its hash is of values it no longer has); it
// takes its table's key columns when the table has only one list that fits the row, and its
// hash is recomputed. When another row already holds that key (the duplicate an upsert
// added after the patch), the row already holding it keeps it, and the patched row loses its
// key (key_hash and key_columns NULL): it stays, readable and patchable, but no upsert will
// touch it again. A row whose key columns cannot be determined keeps its hash as it is.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261123000001",
		Comment: "table_row_key_columns",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return migrateV3(ctx, tx, m.DB().Dialect().Name() == dialect.PG)
			})
		},
	})
}

type v3Row struct {
	bun.BaseModel `bun:"table:table_rows,alias:tr"`

	ID         string          `bun:"id,pk"`
	OrgID      string          `bun:"org_id,notnull"`
	TableName  string          `bun:"table_name,notnull"`
	KeyHash    *string         `bun:"key_hash"`
	KeyColumns *string         `bun:"key_columns"`
	Data       json.RawMessage `bun:"data,notnull"`
	CreatedAt  time.Time       `bun:"created_at,notnull"`
	UpdatedAt  time.Time       `bun:"updated_at,notnull"`
}

func migrateV3(ctx context.Context, db bun.IDB, postgres bool) error {
	exists, err := hasColumn(ctx, db, postgres, "table_rows", "key_columns")
	if err != nil {
		return err
	}
	if !exists {
		if _, err := db.NewAddColumn().Model((*v3Row)(nil)).ColumnExpr("key_columns VARCHAR").Exec(ctx); err != nil {
			return err
		}
	}
	// Every table with rows still to repair.
	var tables []struct {
		OrgID     string `bun:"org_id"`
		TableName string `bun:"table_name"`
	}
	err = db.NewSelect().Model((*v3Row)(nil)).Column("org_id", "table_name").Distinct().
		Where("key_hash IS NOT NULL AND key_columns IS NULL").
		OrderExpr("org_id, table_name").
		Scan(ctx, &tables)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := v3RepairTable(ctx, db, t.OrgID, t.TableName); err != nil {
			return fmt.Errorf("repair key hashes of %s/%s: %w", t.OrgID, t.TableName, err)
		}
	}
	return nil
}

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

const (
	v3RepairPage = 1000
	// v3SearchBudget bounds the key-column lists tried per table (SHA-256 of a few values
	// each): about a second of work.
	v3SearchBudget = 1_000_000
	v3MaxKeys      = 4
)

// v3RepairTable repairs one table's rows that have a key hash and no key columns.
func v3RepairTable(ctx context.Context, db bun.IDB, orgID, table string) error {
	var (
		candidates [][]string
		unresolved []string
		budget     = v3SearchBudget
		after      = ""
	)
	// Pass 1: the rows whose hash some key-column list explains get that list.
	for {
		var rows []v3Row
		err := db.NewSelect().Model(&rows).Column("id", "key_hash", "data").
			Where("org_id = ? AND table_name = ? AND key_hash IS NOT NULL AND key_columns IS NULL AND id > ?", orgID, table, after).
			OrderExpr("id").Limit(v3RepairPage).Scan(ctx)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		found := map[string][]string{} // key columns (JSON) -> ids
		for _, r := range rows {
			after = r.ID
			data, err := v3Data(r.Data)
			if err != nil {
				return err
			}
			keys := v3Explain(candidates, data, *r.KeyHash)
			if keys == nil {
				if keys = v3Search(data, *r.KeyHash, &budget); keys != nil {
					candidates = append(candidates, keys)
				}
			}
			if keys == nil {
				unresolved = append(unresolved, r.ID)
				continue
			}
			kc, _ := json.Marshal(keys)
			found[string(kc)] = append(found[string(kc)], r.ID)
		}
		for kc, ids := range found {
			_, err := db.NewUpdate().Model((*v3Row)(nil)).Set("key_columns = ?", kc).
				Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(ids)).
				Exec(ctx)
			if err != nil {
				return err
			}
		}
	}
	if len(unresolved) == 0 {
		return nil
	}
	// Pass 2: the patched rows. Their stale hashes go first, so that one patched row's new
	// key is never refused because another still holds it as its old one; then each takes
	// its recomputed hash, the most recently written first.
	var rows []v3Row
	for chunk := range slices.Chunk(unresolved, v3RepairPage) {
		var part []v3Row
		err := db.NewSelect().Model(&part).Column("id", "data", "updated_at").
			Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(chunk)).
			Scan(ctx)
		if err != nil {
			return err
		}
		rows = append(rows, part...)
	}
	slices.SortFunc(rows, func(a, b v3Row) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	type rekey struct {
		id, hash, keys string
	}
	var todo []rekey
	for _, r := range rows {
		data, err := v3Data(r.Data)
		if err != nil {
			return err
		}
		keys := v3Fitting(candidates, data)
		if keys == nil {
			continue // no key columns to recompute with: left as it was
		}
		hash, err := v3KeyHash(keys, data)
		if err != nil {
			return err
		}
		kc, _ := json.Marshal(keys)
		todo = append(todo, rekey{id: r.ID, hash: hash, keys: string(kc)})
	}
	for chunk := range slices.Chunk(todo, v3RepairPage) {
		ids := make([]string, len(chunk))
		for i, r := range chunk {
			ids[i] = r.id
		}
		_, err := db.NewUpdate().Model((*v3Row)(nil)).Set("key_hash = NULL").
			Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(ids)).
			Exec(ctx)
		if err != nil {
			return err
		}
	}
	for _, r := range todo {
		var holders int
		err := db.NewSelect().Model((*v3Row)(nil)).ColumnExpr("count(*)").
			Where("org_id = ? AND table_name = ? AND key_hash = ?", orgID, table, r.hash).
			Scan(ctx, &holders)
		if err != nil {
			return err
		}
		upd := db.NewUpdate().Model((*v3Row)(nil))
		if holders == 0 {
			upd = upd.Set("key_hash = ?", r.hash).Set("key_columns = ?", r.keys)
		} else {
			upd = upd.Set("key_hash = NULL").Set("key_columns = NULL")
		}
		_, err = upd.Where("org_id = ? AND table_name = ? AND id = ?", orgID, table, r.id).Exec(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func v3Data(raw json.RawMessage) (map[string]any, error) {
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	return data, nil
}

// v3Explain returns the first candidate list whose hash over data is hash.
func v3Explain(candidates [][]string, data map[string]any, hash string) []string {
	for _, keys := range candidates {
		if h, err := v3KeyHash(keys, data); err == nil && h == hash {
			return keys
		}
	}
	return nil
}

// v3Search tries data's columns as key lists, in every order, one to v3MaxKeys long, while
// the budget lasts.
func v3Search(data map[string]any, hash string, budget *int) []string {
	cols := make([]string, 0, len(data))
	for c := range data {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	used := make([]bool, len(cols))
	var keys []string
	var try func() []string
	try = func() []string {
		for i, c := range cols {
			if used[i] || *budget <= 0 {
				continue
			}
			keys = append(keys, c)
			*budget--
			if h, err := v3KeyHash(keys, data); err == nil && h == hash {
				return slices.Clone(keys)
			}
			if len(keys) < v3MaxKeys {
				used[i] = true
				found := try()
				used[i] = false
				if found != nil {
					return found
				}
			}
			keys = keys[:len(keys)-1]
		}
		return nil
	}
	return try()
}

// v3Fitting returns the table's one key-column list whose columns data has, or nil when
// there is none or more than one.
func v3Fitting(candidates [][]string, data map[string]any) []string {
	var fit []string
	for _, keys := range candidates {
		all := true
		for _, k := range keys {
			if _, ok := data[k]; !ok {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if fit != nil {
			return nil
		}
		fit = keys
	}
	return fit
}

// v3KeyHash is keyHash (tables.go) as it was when these hashes were written, frozen with
// the schema: the hex SHA-256 of the JSON of [[key, value], ...] in key order, values
// through a JSON round trip.
func v3KeyHash(keys []string, row map[string]any) (string, error) {
	pairs := make([][2]any, len(keys))
	for i, k := range keys {
		pairs[i] = [2]any{k, row[k]}
	}
	b, err := json.Marshal(pairs)
	if err != nil {
		return "", err
	}
	var n any
	if err := json.Unmarshal(b, &n); err != nil {
		return "", err
	}
	if b, err = json.Marshal(n); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Schema version 4, frozen: fair claiming. jobs_org_run_at lets the claim walk the
// organizations with jobs (one index probe each) and read each one's oldest due jobs;
// claims counts every lease taken on a job, never reset.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261123000010",
		Comment: "fair_claims",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return createSchemaV4(ctx, tx, m.DB().Dialect().Name() == dialect.PG)
			})
		},
	})
}

func createSchemaV4(ctx context.Context, db bun.IDB, postgres bool) error {
	has, err := hasColumn(ctx, db, postgres, "jobs", "claims")
	if err != nil {
		return err
	}
	if !has {
		if _, err := db.NewRaw(`ALTER TABLE jobs ADD COLUMN claims BIGINT NOT NULL DEFAULT 0`).Exec(ctx); err != nil {
			return err
		}
	}
	_, err = db.NewCreateIndex().Model((*v1Job)(nil)).Index("jobs_org_run_at").
		Column("org_id", "run_at", "id").IfNotExists().Exec(ctx)
	return err
}

// Schema 20261123000020, frozen: org config. One row per organization and key name, the
// value sealed (engine/secrets) and the id of the master key it is sealed under, so that
// rotation finds what it still has to move without opening anything.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261123000020",
		Comment: "org_config",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.NewCreateTable().Model((*v5OrgConfig)(nil)).IfNotExists().Exec(ctx)
				return err
			})
		},
	})
}

type v5OrgConfig struct {
	bun.BaseModel `bun:"table:org_config"`

	OrgID       string    `bun:"org_id,pk"`
	KeyName     string    `bun:"key_name,pk"`
	Sealed      []byte    `bun:"sealed,notnull"`
	MasterKeyID string    `bun:"master_key_id,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

// Schema 20261123000030, frozen: registered actions. One row per (org_id, name): the primary
// key makes a name unique in its organization (409 on create) and serves the lookup and the
// listing by name. The registration is one JSON document (spec, text) beside its kind, so a
// field added to a kind needs no migration; the store never queries inside it.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261123000030",
		Comment: "actions",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.NewCreateTable().Model((*frozenAction)(nil)).IfNotExists().Exec(ctx)
				return err
			})
		},
	})
}

// frozenAction is the actions table as migration 20261123000030 creates it.
type frozenAction struct {
	bun.BaseModel `bun:"table:actions"`

	OrgID     string    `bun:"org_id,pk"`
	Name      string    `bun:"name,pk"`
	Kind      string    `bun:"kind,notnull"`
	Spec      string    `bun:"spec,type:text,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// Schema 20261123000050, frozen: OAuth connections and authorization flows in progress.
// A connection is one row per (org_id, id), unique by (org_id, provider, account), its
// tokens one sealed value (engine/secrets, the org id and the connection id as additional
// data) beside the id of the master key and a version that every token write increments.
// A state row is keyed by (org_id, state_hash): the state names its organization, and the
// hash alone is stored, so a read of the table cannot finish anyone's flow.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261123000050",
		Comment: "oauth_connections",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				for _, model := range []any{(*frozenOAuthConnection)(nil), (*frozenOAuthState)(nil)} {
					if _, err := tx.NewCreateTable().Model(model).IfNotExists().Exec(ctx); err != nil {
						return err
					}
				}
				_, err := tx.NewCreateIndex().Model((*frozenOAuthConnection)(nil)).Index("oauth_connections_org_provider_account").
					Unique().Column("org_id", "provider", "account").IfNotExists().Exec(ctx)
				return err
			})
		},
	})
}

type frozenOAuthConnection struct {
	bun.BaseModel `bun:"table:oauth_connections"`

	OrgID       string     `bun:"org_id,pk"`
	ID          string     `bun:"id,pk"`
	Provider    string     `bun:"provider,notnull"`
	Account     string     `bun:"account,notnull"`
	Scopes      string     `bun:"scopes,type:text,notnull"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	HasRefresh  bool       `bun:"has_refresh,notnull"`
	Source      string     `bun:"source,notnull"`
	Sealed      []byte     `bun:"sealed,notnull"`
	MasterKeyID string     `bun:"master_key_id,notnull"`
	Version     int64      `bun:"version,notnull"`
	CreatedAt   time.Time  `bun:"created_at,notnull"`
	UpdatedAt   time.Time  `bun:"updated_at,notnull"`
}

type frozenOAuthState struct {
	bun.BaseModel `bun:"table:oauth_states"`

	OrgID       string    `bun:"org_id,pk"`
	StateHash   string    `bun:"state_hash,pk"`
	Provider    string    `bun:"provider,notnull"`
	Account     string    `bun:"account,notnull"`
	RedirectURL string    `bun:"redirect_url,type:text,notnull"`
	ExpiresAt   time.Time `bun:"expires_at,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

// Schema 20261123000060, frozen: webhook registrations. One row per (org_id, id); the
// listing's order (created_at, id) has an index of its own after the org id. The secret
// is one sealed value (engine/secrets, the org id and webhook:<id> as additional data)
// beside the id of its master key, both empty for a registration without one; filter and
// auto_payload are JSON text, empty when absent. Health (disabled, disabled_at,
// consecutive_failures) is written by its own statements, never with the registration.

func init() {
	migrations.Add(migrate.Migration{
		Name:    "20261123000060",
		Comment: "webhooks",
		Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.NewCreateTable().Model((*frozenWebhook)(nil)).IfNotExists().Exec(ctx); err != nil {
					return err
				}
				_, err := tx.NewCreateIndex().Model((*frozenWebhook)(nil)).Index("webhooks_org_created").
					Column("org_id", "created_at", "id").IfNotExists().Exec(ctx)
				return err
			})
		},
	})
}

type frozenWebhook struct {
	bun.BaseModel `bun:"table:webhooks"`

	OrgID               string     `bun:"org_id,pk"`
	ID                  string     `bun:"id,pk"`
	Event               string     `bun:"event,notnull"`
	EventAlias          string     `bun:"event_alias,notnull"`
	URL                 string     `bun:"url,type:text,notnull"`
	Filter              string     `bun:"filter,type:text,notnull"`
	AutoPayload         string     `bun:"auto_payload,type:text,notnull"`
	SecretSealed        []byte     `bun:"secret_sealed"`
	MasterKeyID         string     `bun:"master_key_id,notnull"`
	Disabled            bool       `bun:"disabled,notnull"`
	DisabledAt          *time.Time `bun:"disabled_at"`
	ConsecutiveFailures int        `bun:"consecutive_failures,notnull"`
	CreatedAt           time.Time  `bun:"created_at,notnull"`
	UpdatedAt           time.Time  `bun:"updated_at,notnull"`
}
