package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/migrate"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store/migrations"
	"github.com/svcflow/svcflow/engine/svctype"
)

// openAt opens a fresh store migrated up to and including the migration named last.
func openAt(t *testing.T, dialect, last string) *Store {
	t.Helper()
	ctx := context.Background()
	dsn := "sqlite::memory:"
	if dialect == dialectPostgres {
		dsn = NewTestDSN(t, dialect)
	}
	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	upTo := migrate.NewMigrations()
	for _, m := range migrations.All() {
		if m.Name <= last {
			upTo.Add(m)
		}
	}
	m := migrate.NewMigrator(s.write, upTo, migrate.WithMarkAppliedOnSuccess(true), migrate.WithUpsert(true))
	require.NoError(t, m.Init(ctx))
	_, err = m.Migrate(ctx)
	require.NoError(t, err)
	return s
}

// TestMigrateRepairsKeyHashes builds rows as the store wrote them before key_columns
// existed, including rows patched on a key column the old way (data changed, key_hash
// left at the old key), migrates, and checks that upserts find every row at its key.
func TestMigrateRepairsKeyHashes(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
				t.Skip(PostgresDSNEnv + " is unset")
			}
			ctx := context.Background()
			s := openAt(t, dialect, "20261122000001")
			_, err := s.write.NewRaw(`SELECT key_columns FROM table_rows`).Exec(ctx)
			require.Error(t, err, "the schema before the repair has no key_columns")

			for _, tbl := range []struct{ org, name string }{{"o", "t1"}, {"o", "t2"}, {"o", "t3"}, {"p", "t1"}} {
				_, err := s.write.NewRaw(`INSERT INTO custom_tables (org_id, name, fields, created_at) VALUES (?, ?, '{}', ?)`,
					tbl.org, tbl.name, dbTime(time.Now())).Exec(ctx)
				require.NoError(t, err)
			}
			seq := 0
			// oldRow writes a row the way UpsertRow did (keys nil: InsertRow), then, when
			// patched is set, changes its data the way UpdateRows did: key_hash untouched.
			oldRow := func(org, table string, keys []string, data, patched map[string]any) string {
				t.Helper()
				seq++
				id := newID()
				var hash any
				if keys != nil {
					hash = oldKeyHash(t, keys, data)
				}
				raw, err := json.Marshal(data)
				require.NoError(t, err)
				at := dbTime(time.Now()).Add(time.Duration(seq) * time.Millisecond)
				_, err = s.write.NewRaw(`INSERT INTO table_rows (id, org_id, table_name, key_hash, data, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, id, org, table, hash, string(raw), at, at).Exec(ctx)
				require.NoError(t, err)
				if patched != nil {
					raw, err := json.Marshal(patched)
					require.NoError(t, err)
					_, err = s.write.NewRaw(`UPDATE table_rows SET data = ?, updated_at = ? WHERE id = ?`, string(raw), at, id).Exec(ctx)
					require.NoError(t, err)
				}
				return id
			}
			k := []string{"k"}
			ne := []string{"n", "email"}
			kept := oldRow("o", "t1", k, map[string]any{"k": "x", "v": 1}, nil)
			patchedB := oldRow("o", "t1", k, map[string]any{"k": "a", "v": 1}, map[string]any{"k": "b", "v": 1})
			dupB := oldRow("o", "t1", k, map[string]any{"k": "b", "v": 2}, nil) // upserted after the patch
			moved := oldRow("o", "t1", k, map[string]any{"k": "c"}, map[string]any{"k": "d"})
			swapE := oldRow("o", "t1", k, map[string]any{"k": "e"}, map[string]any{"k": "f"})
			swapF := oldRow("o", "t1", k, map[string]any{"k": "f"}, map[string]any{"k": "e"})
			unkeyed := oldRow("o", "t1", nil, map[string]any{"k": "b"}, nil)
			composite := oldRow("o", "t2", ne, map[string]any{"n": 1, "email": "a@x"}, nil)
			compositePatched := oldRow("o", "t2", ne, map[string]any{"n": 2, "email": "b@x"}, map[string]any{"n": 2, "email": "c@x"})
			lone := oldRow("o", "t3", k, map[string]any{"k": "g"}, map[string]any{"k": "h"})
			otherOrg := oldRow("p", "t1", k, map[string]any{"k": "b"}, nil)

			before := map[string]*string{}
			read := func() map[string]*rowModel {
				t.Helper()
				var rows []rowModel
				require.NoError(t, s.write.NewSelect().Model(&rows).Scan(ctx))
				out := map[string]*rowModel{}
				for i := range rows {
					out[rows[i].ID] = &rows[i]
				}
				return out
			}
			var old []rowModel
			require.NoError(t, s.write.NewSelect().Model(&old).Column("id", "key_hash").Scan(ctx))
			for _, r := range old {
				before[r.ID] = r.KeyHash
			}

			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Migrate(ctx), "a second run changes nothing")
			rows := read()
			require.Len(t, rows, 11, "no row is lost")
			require.Equal(t, before[kept], rows[kept].KeyHash, "a consistent row keeps its hash")
			require.Equal(t, `["k"]`, deref(rows[kept].KeyColumns))
			require.Equal(t, `["n","email"]`, deref(rows[composite].KeyColumns), "key order found")
			require.Nil(t, rows[patchedB].KeyHash, "the patched row whose new key a later upsert took loses its key")
			require.Nil(t, rows[patchedB].KeyColumns)
			require.Nil(t, rows[unkeyed].KeyHash, "InsertRow rows stay unkeyed")
			require.Nil(t, rows[unkeyed].KeyColumns)
			require.Equal(t, before[lone], rows[lone].KeyHash, "no key columns to recompute with: left as it was")
			require.Nil(t, rows[lone].KeyColumns)
			require.Equal(t, before[otherOrg], rows[otherOrg].KeyHash, "another org's table is its own")

			upsert := func(org, table string, keys []string, data map[string]any) (string, bool) {
				t.Helper()
				r, inserted, err := s.UpsertRow(ctx, org, table, keys, data)
				require.NoError(t, err)
				return r.ID, inserted
			}
			for _, tt := range []struct {
				name  string
				table string
				keys  []string
				data  map[string]any
				want  string // "" = a new row
			}{
				{"consistent row", "t1", k, map[string]any{"k": "x"}, kept},
				{"the row an upsert wrote after the patch", "t1", k, map[string]any{"k": "b"}, dupB},
				{"patched row at its new key", "t1", k, map[string]any{"k": "d"}, moved},
				{"old key is free", "t1", k, map[string]any{"k": "c"}, ""},
				{"old key of the demoted row is free", "t1", k, map[string]any{"k": "a"}, ""},
				{"swapped keys", "t1", k, map[string]any{"k": "f"}, swapE},
				{"swapped keys, the other", "t1", k, map[string]any{"k": "e"}, swapF},
				{"composite, patched", "t2", ne, map[string]any{"n": 2, "email": "c@x"}, compositePatched},
				{"composite", "t2", ne, map[string]any{"n": 1, "email": "a@x"}, composite},
			} {
				id, inserted := upsert("o", tt.table, tt.keys, tt.data)
				if tt.want == "" {
					require.True(t, inserted, tt.name)
					continue
				}
				require.False(t, inserted, tt.name)
				require.Equal(t, tt.want, id, tt.name)
			}

			// Repaired rows carry their key columns: a patch of one now moves the row.
			n, err := s.UpdateRows(ctx, "o", "t1", map[string]any{"k": "x"}, map[string]any{"k": "y"})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			id, inserted := upsert("o", "t1", k, map[string]any{"k": "y"})
			require.False(t, inserted)
			require.Equal(t, kept, id)
			rowsAfter, err := s.ReadRows(ctx, "o", "t1", map[string]any{"k": "b"}, 0)
			require.NoError(t, err)
			require.Len(t, rowsAfter, 3, "the demoted row, the upserted b, and the unkeyed one")
		})
	}
}

// oldKeyHash is a row's key hash as the store wrote it before migration 20261123000001:
// the hex SHA-256 of the JSON of [[key, value], ...] (the test's values come back from a
// JSON round trip as they went in).
func oldKeyHash(t *testing.T, keys []string, row map[string]any) string {
	t.Helper()
	pairs := make([][2]any, len(keys))
	for i, k := range keys {
		pairs[i] = [2]any{k, row[k]}
	}
	b, err := json.Marshal(pairs)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestReadyWantsEveryMigration: a database migrated by an older build (every migration but
// the last) answers, yet is not ready for this one until Migrate has run.
func TestReadyWantsEveryMigration(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
				t.Skip(PostgresDSNEnv + " is unset")
			}
			ctx := context.Background()
			all := migrations.All()
			s := openAt(t, dialect, all[len(all)-2].Name)
			err := s.Ready(ctx)
			require.ErrorIs(t, err, storage.ErrSchemaBehind)
			require.Contains(t, err.Error(), "1 of ")
			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Ready(ctx))
		})
	}
}

// TestRunPagesKeepsRows: the migration that clusters run_context and run_steps (SQLite) and
// makes jobs_org_workflow partial keeps every row a database held before it: context and
// step records read back the same, a schedule job is still found and deleted by its
// workflow, a run's job is not. Run twice, it changes nothing.
func TestRunPagesKeepsRows(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
				t.Skip(PostgresDSNEnv + " is unset")
			}
			ctx := context.Background()
			s := openAt(t, dialect, "20261207000100")
			at := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
			for _, run := range []string{"run-a", "run-b"} {
				require.NoError(t, s.PutContext(ctx, "org-1", run, "input", json.RawMessage(`{"n":1}`)))
				require.NoError(t, s.PutContext(ctx, "org-1", run, "s0", json.RawMessage(`{"written":1}`)))
				for i := range 2 {
					require.NoError(t, s.PutStep(ctx, "org-1", &svctype.StepRecord{
						RunID: run, Index: i, Type: "custom-table", Status: svctype.StepCompleted,
						Output: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`), StartedAt: &at, FinishedAt: &at,
					}))
				}
			}
			schedule := &svctype.Job{OrgID: "org-1", Kind: svctype.JobSchedule, WorkflowID: "wf-1", RunAt: at}
			step := &svctype.Job{OrgID: "org-1", Kind: svctype.JobRunStep, RunID: "run-a", RunAt: at}
			require.NoError(t, s.EnqueueJob(ctx, schedule))
			require.NoError(t, s.EnqueueJob(ctx, step))

			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Migrate(ctx), "a second run changes nothing")

			if dialect == dialectSQLite {
				for _, table := range []string{"run_context", "run_steps"} {
					var ddl string
					require.NoError(t, s.write.NewRaw(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(ctx, &ddl))
					require.Contains(t, ddl, "WITHOUT ROWID", table)
				}
			}
			got, err := s.GetContext(ctx, "org-1", "run-b")
			require.NoError(t, err)
			require.JSONEq(t, `{"n":1}`, string(got["input"]))
			require.JSONEq(t, `{"written":1}`, string(got["s0"]))
			steps, err := s.ListSteps(ctx, "org-1", "run-b")
			require.NoError(t, err)
			require.Len(t, steps, 2)
			require.Equal(t, 1, steps[1].Index)
			require.JSONEq(t, `{"i":1}`, string(steps[1].Output))
			// Written after the migration: the clustered tables take upserts on their keys.
			require.NoError(t, s.PutContext(ctx, "org-1", "run-b", "s0", json.RawMessage(`{"written":2}`)))
			got, err = s.GetContext(ctx, "org-1", "run-b", "s0")
			require.NoError(t, err)
			require.JSONEq(t, `{"written":2}`, string(got["s0"]))

			require.NoError(t, s.DeleteJobs(ctx, "org-1", "", "", "wf-1"))
			require.Equal(t, 1, CountAllJobs(t, s), "the schedule job is deleted by its workflow, the run's job is not")
			require.NoError(t, s.DeleteJobs(ctx, "org-1", "", "run-a", ""))
			require.Zero(t, CountAllJobs(t, s))
		})
	}
}

// TestEventsRowidKeepsEvents: the migration that drops AUTOINCREMENT from events (SQLite)
// keeps every event and its number; an event appended after it is numbered past every
// earlier one, its run's events still page in order, and no row of sqlite_sequence names
// events any more. Run twice, it changes nothing.
func TestEventsRowidKeepsEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openAt(t, dialectSQLite, "20261207000200")
	events := []svctype.Event{
		{OrgID: "org-1", RunID: "run-a", Event: "workflow_run_started", Payload: json.RawMessage(`{"i":0}`)},
		{OrgID: "org-1", RunID: "run-b", Event: "workflow_run_started", Payload: json.RawMessage(`{}`)},
		{OrgID: "org-1", RunID: "run-a", Event: "step.started", Payload: json.RawMessage(`{"i":1}`)},
	}
	require.NoError(t, s.AppendEvents(ctx, events))

	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.Migrate(ctx), "a second run changes nothing")

	var ddl string
	require.NoError(t, s.write.NewRaw(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'`).Scan(ctx, &ddl))
	require.NotContains(t, strings.ToUpper(ddl), "AUTOINCREMENT")
	var seqRows int
	require.NoError(t, s.write.NewRaw(`SELECT count(*) FROM sqlite_sequence WHERE name = 'events'`).Scan(ctx, &seqRows))
	require.Zero(t, seqRows)
	var indexes int
	require.NoError(t, s.write.NewRaw(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'events_org_run_seq' AND tbl_name = 'events'`).Scan(ctx, &indexes))
	require.Equal(t, 1, indexes, "the run's index is back")

	more := []svctype.Event{{OrgID: "org-1", RunID: "run-a", Event: "step.completed", Payload: json.RawMessage(`{"i":2}`)}}
	require.NoError(t, s.AppendEvents(ctx, more))
	require.Greater(t, more[0].Seq, events[2].Seq)
	page, err := s.ListRunEvents(ctx, "org-1", "run-a", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 3)
	for i, e := range page.Items {
		require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(e.Payload))
	}
	require.Equal(t, events[0].Seq, page.Items[0].Seq, "numbers kept")
	require.Equal(t, events[0].DeliveryID, page.Items[0].DeliveryID)
}
