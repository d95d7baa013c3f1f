package store_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/store/storetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

var dialects = []string{"sqlite", "postgres"}

func TestConformance(t *testing.T) {
	t.Run("sqlite-bun-only", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T, now func() time.Time) storage.Full {
			return store.OpenTestBunOnly(t, store.WithNow(now))
		}, store.CountAllJobs)
	})
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			if dialect == "postgres" && os.Getenv(store.PostgresDSNEnv) == "" {
				t.Skip(store.PostgresDSNEnv + " is unset: skipping the PostgreSQL suite")
			}
			storetest.Run(t, func(t *testing.T, now func() time.Time) storage.Full {
				return store.OpenTest(t, dialect, store.WithNow(now))
			}, store.CountAllJobs)
		})
	}
}

func TestDialect(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, dialect, store.OpenTest(t, dialect).Dialect())
		})
	}
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := store.OpenTest(t, dialect) // migrated once
			w := &svctype.Workflow{OrgID: "o", Name: "kept", Definition: json.RawMessage(`{}`)}
			require.NoError(t, s.CreateWorkflow(ctx, w))
			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Migrate(ctx))
			_, err := s.GetWorkflow(ctx, "o", w.ID)
			require.NoError(t, err, "migrating again keeps the data")
		})
	}
}

// TestMigrateConcurrently starts four processes' worth of stores on one fresh database and
// migrates them at once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := store.NewTestDSN(t, dialect)
			stores := make([]*store.Store, 4)
			for i := range stores {
				s, err := store.Open(ctx, dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				stores[i] = s
			}
			var wg sync.WaitGroup
			errs := make([]error, len(stores))
			for i, s := range stores {
				wg.Go(func() { errs[i] = s.Migrate(ctx) })
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			w := &svctype.Workflow{OrgID: "o", Name: "n", Definition: json.RawMessage(`{}`)}
			require.NoError(t, stores[0].CreateWorkflow(ctx, w))
			_, err := stores[3].GetWorkflow(ctx, "o", w.ID)
			require.NoError(t, err)
		})
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name, dsn string
	}{
		{"unknown scheme", "mysql://user:hunter2@localhost/db"},
		{"empty sqlite path", "sqlite:"},
		{"malformed postgres", "postgres://user:hunter2@localhost:notaport/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := store.Open(ctx, tt.dsn)
			require.Error(t, err)
			require.NotContains(t, err.Error(), "hunter2", "errors never carry the password")
		})
	}
}

// TestMemoryDatabasesArePrivate: each sqlite::memory: store is its own database.
func TestMemoryDatabasesArePrivate(t *testing.T) {
	t.Parallel()
	a := store.OpenTest(t, "sqlite")
	b := store.OpenTest(t, "sqlite")
	ctx := context.Background()
	require.NoError(t, a.CreateTable(ctx, &svctype.Table{OrgID: "o", Name: "t"}))
	_, err := b.GetTable(ctx, "o", "t")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// TestSQLiteFile runs the suite's core path on a database file (WAL, separate read pool)
// and checks that a reopened store sees what was committed.
func TestSQLiteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := store.NewTestDSN(t, "sqlite")
	s, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	w := &svctype.Workflow{OrgID: "o", Name: "n", Definition: json.RawMessage(`{"a":1}`)}
	require.NoError(t, s.CreateWorkflow(ctx, w))
	require.NoError(t, s.Close())

	s, err = store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	got, err := s.GetWorkflow(ctx, "o", w.ID)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(got.Definition))
	require.True(t, strings.HasPrefix(dsn, "sqlite:"))
}

func TestSQLiteFileConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, now func() time.Time) storage.Full {
		ctx := context.Background()
		s, err := store.Open(ctx, store.NewTestDSN(t, "sqlite"), store.WithNow(now))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.NoError(t, s.Migrate(ctx))
		return s
	}, store.CountAllJobs)
}

// BenchmarkStepCommit is the engine's unit of work: one transaction per workflow step that
// renews the run's job, writes the step's output and record, and appends an event.
func BenchmarkStepCommit(b *testing.B) {
	for _, name := range []string{"sqlite-file", "sqlite-memory", "sqlite-bun-only", "postgres"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var s *store.Store
			switch name {
			case "sqlite-file":
				var err error
				s, err = store.Open(ctx, store.NewTestDSN(b, "sqlite"))
				require.NoError(b, err)
				b.Cleanup(func() { _ = s.Close() })
				require.NoError(b, s.Migrate(ctx))
			case "sqlite-memory":
				s = store.OpenTest(b, "sqlite")
			case "sqlite-bun-only":
				s = store.OpenTestBunOnly(b)
			default:
				s = store.OpenTest(b, name)
			}
			run := &svctype.Run{OrgID: "o", WorkflowID: "wf", Status: svctype.RunRunning, Definition: json.RawMessage(`{"steps":[]}`)}
			require.NoError(b, s.CreateRun(ctx, run, time.Time{}))
			require.NoError(b, s.EnqueueJob(ctx, &svctype.Job{OrgID: "o", Kind: svctype.JobRunStep, RunID: run.ID, RunAt: time.Now().Add(-time.Second)}))
			jobs, err := s.ClaimJobs(ctx, 1, time.Hour)
			require.NoError(b, err)
			job := jobs[0]
			output := json.RawMessage(`{"matched":[{"id":1,"amount":10.5}],"unmatched":[]}`)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				err := s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
					job.Payload = json.RawMessage(`{"step":1}`)
					if err := tx.RenewJob(ctx, &job, time.Hour); err != nil {
						return err
					}
					key := "step" + string(rune('a'+i%26))
					if err := tx.PutContext(ctx, "o", run.ID, key, output); err != nil {
						return err
					}
					now := time.Now()
					if err := tx.PutStep(ctx, "o", &svctype.StepRecord{
						RunID: run.ID, Index: i % 100, Type: "matcher", Status: svctype.StepCompleted,
						Output: output, StartedAt: &now, FinishedAt: &now,
					}); err != nil {
						return err
					}
					return tx.AppendEvents(ctx, []svctype.Event{{
						OrgID: "o", RunID: run.ID, Event: "step_completed", Payload: json.RawMessage(`{"step_index":1}`),
					}})
				})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
