package runtime_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/testlog"
)

// BenchmarkRunsFirstPage: the console's first page, GET /runs?limit=50 newest first with
// workflow names, through the runtime's handler, among SVC_BENCH_RUNS runs (100,000 by
// default; 1% paused, 2% running, 7% failed, the rest completed, over 5 workflows) on a
// file SQLite and on PostgreSQL: p50 and p99 with no filter and with status filters (a
// common one, a rare one, and two together). `make bench-runs-list` runs it.
func BenchmarkRunsFirstPage(b *testing.B) {
	n := 100_000
	if v := os.Getenv("SVC_BENCH_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		if dialect == "postgres" && os.Getenv(store.PostgresDSNEnv) == "" {
			b.Log(store.PostgresDSNEnv + " is unset: SQLite only")
			continue
		}
		ctx := context.Background()
		var st *store.Store
		if dialect == "sqlite" {
			var err error
			if st, err = store.Open(ctx, "sqlite:"+b.TempDir()+"/bench.db"); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			if err := st.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
		} else {
			st = store.OpenTest(b, dialect)
		}
		if _, err := store.SeedRuns(ctx, st, orgA, n, 5, false); err != nil {
			b.Fatal(err)
		}
		eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(b)})
		if err != nil {
			b.Fatal(err)
		}
		h := runtime.New(eng, runtime.Options{Logger: slog.New(slog.DiscardHandler), Version: "test", IdentityKey: testIdentityKey}).Handler()
		for _, c := range []struct{ name, query string }{
			{"newest", ""},
			{"failed", "&status=failed"},
			{"paused", "&status=paused"},
			{"failed+paused", "&status=failed&status=paused"},
		} {
			b.Run(dialect+"/"+c.name, func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for range b.N {
					req := httptest.NewRequest(http.MethodGet, "/runs?limit=50"+c.query, nil)
					req.Header.Set("X-Org-Id", orgA)
					rec := httptest.NewRecorder()
					t0 := time.Now()
					h.ServeHTTP(rec, req)
					lat = append(lat, time.Since(t0))
					if rec.Code != http.StatusOK {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
					var page struct {
						Items []struct {
							WorkflowName string `json:"workflow_name"`
						} `json:"items"`
					}
					if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
						b.Fatal(err)
					}
					if len(page.Items) != 50 || page.Items[0].WorkflowName == "" {
						b.Fatalf("a page of %d, first %+v", len(page.Items), page.Items)
					}
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(n), "runs")
			})
		}
	}
}
