package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// benchStore opens a file SQLite store or a PostgreSQL schema for a benchmark.
func benchStore(b *testing.B, dialect string) *Store {
	b.Helper()
	if dialect == dialectPostgres {
		return OpenTest(b, dialect)
	}
	ctx := context.Background()
	s, err := Open(ctx, "sqlite:"+b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchRuns(b *testing.B, def int) int {
	if v := os.Getenv("SVC_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return def
}

// BenchmarkRunsByKey: GET /runs?key='s query, ListRuns{Key}, among SVC_BENCH_RUNS runs
// (1,000,000 by default) of one organization, each with its own search key value, on a
// file SQLite and on PostgreSQL: p50 and p99 of a search for a random value, and the
// query plan, which must read the search key index (the benchmark fails otherwise). The
// runs are seeded in bulk (SeedRuns); `make bench-runs-list` runs it.
func BenchmarkRunsByKey(b *testing.B) {
	n := benchRuns(b, 1_000_000)
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
			b.Log(PostgresDSNEnv + " is unset: SQLite only")
			continue
		}
		// Seeded here, once: the sub-benchmark's function runs more than once.
		s := benchStore(b, dialect)
		ctx := context.Background()
		start := time.Now()
		if _, err := SeedRuns(ctx, s, "o", n, 5, true); err != nil {
			b.Fatal(err)
		}
		seeded := time.Since(start)
		plan := explainKeySearch(b, s)
		b.Logf("%s plan: %s", dialect, plan)
		if !strings.Contains(plan, "run_search_keys_pkey") && !strings.Contains(plan, "sqlite_autoindex_run_search_keys_1") {
			b.Fatalf("the key search does not read the search key index: %s", plan)
		}
		b.Run(dialect, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				i := rng.IntN(n)
				t0 := time.Now()
				page, err := s.ListRuns(ctx, "o", storage.RunFilter{Key: fmt.Sprintf("INV-%07d", i), ListOptions: svctype.ListOptions{Limit: 50}})
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Items) != 1 || page.Items[0].ID != fmt.Sprintf("run-%08d-0000-4000-8000-000000000000", i) {
					b.Fatalf("key INV-%07d: %+v", i, page.Items)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(seeded.Seconds(), "seed-s")
			b.ReportMetric(float64(n), "runs")
		})
	}
}

// explainKeySearch returns the plan of ListRuns{Key}'s query, one line.
func explainKeySearch(b *testing.B, s *Store) string {
	b.Helper()
	q, err := s.listRunsQuery("o", storage.RunFilter{Key: "INV-0000042"}, 50)
	if err != nil {
		b.Fatal(err)
	}
	prefix := "EXPLAIN "
	if s.dialect == dialectSQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := s.read.QueryContext(context.Background(), prefix+q.String())
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1]))
	}
	return strings.Join(lines, " | ")
}
