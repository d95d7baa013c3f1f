package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/metrics"
	"github.com/svcflow/svcflow/internal/testclock"
)

var (
	counter = &svctype.MetricDesc{Name: "t_things_total", Kind: svctype.Counter, Labels: []string{"kind"}, Help: "Things."}
	gauge   = &svctype.MetricDesc{Name: "t_level", Kind: svctype.Gauge, Help: "Level."}
	hist    = &svctype.MetricDesc{Name: "t_seconds", Kind: svctype.Histogram, Help: "Seconds.", Buckets: []float64{1, 2}}
	other   = &svctype.MetricDesc{Name: "t_undeclared_total", Kind: svctype.Counter, Help: "Never registered."}
)

func scrape(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// TestRecordKinds: a counter adds, a gauge is set, a histogram observes; a value that does
// not fit its declaration (an undeclared metric, the wrong number of labels, a negative
// counter increment) is dropped, never a panic.
func TestRecordKinds(t *testing.T) {
	t.Parallel()
	reg := metrics.New(nil, nil, counter, gauge, hist)
	reg.Record(counter, 2, "a")
	reg.Record(counter, 3, "a")
	reg.Record(counter, 1, "b")
	reg.Record(gauge, 7)
	reg.Record(gauge, 4)
	reg.Record(hist, 1.5)
	reg.Record(hist, 0.5)
	reg.Record(other, 1)
	reg.Record(counter, 1)           // no label value
	reg.Record(counter, 1, "a", "b") // one too many
	reg.Record(counter, -5, "a")     // a counter never goes down
	out := scrape(t, reg)
	require.Contains(t, out, "t_things_total{kind=\"a\"} 5\n")
	require.Contains(t, out, "t_things_total{kind=\"b\"} 1\n")
	require.Contains(t, out, "t_level 4\n")
	require.Contains(t, out, "t_seconds_bucket{le=\"1\"} 1\n")
	require.Contains(t, out, "t_seconds_bucket{le=\"2\"} 2\n")
	require.Contains(t, out, "t_seconds_count 2\n")
	require.NotContains(t, out, "t_undeclared_total")
	require.Contains(t, out, "go_goroutines")
}

// TestJobsFromTheStore reads the jobs gauge from a real store (two due jobs, one of them
// then claimed, and one not yet due), and keeps serving the other metrics when the store
// cannot answer.
func TestJobsFromTheStore(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	ctx := context.Background()
	now := time.Now().UTC()
	require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, at := range []time.Time{now.Add(-time.Minute), now.Add(-time.Minute), now.Add(time.Hour)} {
			if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: "o", Kind: "k", RunAt: at}); err != nil {
				return err
			}
		}
		return nil
	}))
	claimed, err := st.ClaimJobs(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	reg := metrics.New(nil, st)
	out := scrape(t, reg)
	require.Contains(t, out, "svcflow_jobs{state=\"queued\"} 1\n")
	require.Contains(t, out, "svcflow_jobs{state=\"scheduled\"} 1\n")
	require.Contains(t, out, "svcflow_jobs{state=\"leased\"} 1\n")
	require.Contains(t, out, "svcflow_jobs{state=\"lease_expired\"} 0\n")

	require.NoError(t, st.Close())
	out = scrape(t, reg)
	require.NotContains(t, out, "svcflow_jobs{")
	require.Contains(t, out, "go_goroutines", "the rest is still served")
}

// TestSQLiteWriterBusy: on SQLite the time the writer was held is a counter, by the store's
// clock; on PostgreSQL there is none.
func TestSQLiteWriterBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := testclock.New(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC))
	st := store.OpenTest(t, "sqlite", store.WithNow(clk.Now))
	reg := metrics.New(nil, st)
	before, _ := st.WriterBusy()
	require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		clk.Advance(2 * time.Second)
		return nil
	}))
	want := fmt.Sprintf("svcflow_sqlite_writer_busy_seconds_total %g\n", (before + 2*time.Second).Seconds())
	require.Contains(t, scrape(t, reg), want)

	pg := metrics.New(nil, store.OpenTest(t, "postgres"))
	require.NotContains(t, scrape(t, pg), "svcflow_sqlite_writer_busy_seconds_total")
}
