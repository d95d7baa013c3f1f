package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// BenchmarkKeyedRead: a read by key (where {k: ...}, limit 1) on a custom table of
// SVC_BENCH_ROWS rows (1,000,000 by default) that another organization's table of the same
// size shares the rows table with, on a file SQLite and on PostgreSQL; p50 and p99 of each
// read, and how long building the index over the rows took. `make bench-tables` runs it.
// The rows are written in bulk by SQL (as the store writes them), the index through the
// store's own batched build.
func BenchmarkKeyedRead(b *testing.B) {
	rows := 1_000_000
	if v := os.Getenv("SVC_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		rows = n
	}
	for _, dialect := range []string{dialectSQLite, dialectPostgres} {
		b.Run(dialect, func(b *testing.B) {
			if dialect == dialectPostgres && os.Getenv(PostgresDSNEnv) == "" {
				b.Skip(PostgresDSNEnv + " is unset")
			}
			ctx := context.Background()
			var s *Store
			if dialect == dialectSQLite {
				var err error
				if s, err = Open(ctx, "sqlite:"+b.TempDir()+"/bench.db"); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				if err := s.Migrate(ctx); err != nil {
					b.Fatal(err)
				}
			} else {
				s = OpenTest(b, dialect)
			}
			for _, org := range []string{"o", "other"} {
				if err := s.CreateTable(ctx, &svctype.Table{OrgID: org, Name: "t", Fields: map[string]string{"k": "text", "v": "number"}}); err != nil {
					b.Fatal(err)
				}
				if err := bulkRows(ctx, s, org, rows); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			if err := s.AddTableIndex(ctx, "o", "t", svctype.TableIndex{Columns: []string{"k"}}); err != nil {
				b.Fatal(err)
			}
			for cursor := ""; ; {
				next, err := s.BuildTableIndex(ctx, "o", "t", "k", cursor, 2000)
				if err != nil {
					b.Fatal(err)
				}
				if next == "" {
					break
				}
				cursor = next
			}
			if err := s.ReadyTableIndex(ctx, "o", "t", "k"); err != nil {
				b.Fatal(err)
			}
			build := time.Since(start)
			if dialect == dialectPostgres {
				if _, err := s.write.ExecContext(ctx, "ANALYZE table_rows; ANALYZE table_index_entries"); err != nil {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				key := fmt.Sprintf("k%07d", rng.IntN(rows))
				t0 := time.Now()
				got, err := s.ReadRows(ctx, "o", "t", map[string]any{"k": key}, 1)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != 1 || got[0].Data["k"] != key {
					b.Fatalf("read %s: %v", key, got)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(build.Seconds(), "index-build-s")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// bulkRows writes n rows {k: "k0000000"..., v: i} into org's table t in one statement per
// 100,000 rows.
func bulkRows(ctx context.Context, s *Store, org string, n int) error {
	const chunk = 100_000
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		var q string
		if s.dialect == dialectSQLite {
			q = `WITH RECURSIVE g(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM g WHERE i + 1 < ?)
INSERT INTO table_rows (id, org_id, table_name, data, created_at, updated_at)
SELECT printf('%s-%08d', ?, i), ?, 't', json_object('k', printf('k%07d', i), 'v', i), '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00' FROM g`
		} else {
			q = `INSERT INTO table_rows (id, org_id, table_name, data, created_at, updated_at)
SELECT ?::text || '-' || lpad(i::text, 8, '0'), ?, 't', jsonb_build_object('k', 'k' || lpad(i::text, 7, '0'), 'v', i), '2026-01-01', '2026-01-01'
FROM generate_series(?::int, ?::int - 1) AS i`
		}
		args := []any{lo, hi, org, org}
		if s.dialect == dialectPostgres {
			args = []any{org, org, lo, hi}
		}
		if _, err := s.write.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}
