package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// BenchmarkIndexDesigns measures, on a file SQLite, the two ways of indexing custom tables
// that share the rows table (docs/decisions.md, "Indexes on custom tables"): the side table
// the store uses, and a partial expression index per custom-table index
// (json_extract(data, '$.k') WHERE org_id = … AND table_name = …). Each organization has a
// table of 10,000 rows and one index on k; the figures are a keyed read's p50 and a row
// insert's cost, with 10 and with 200 organizations (so 10 and 200 indexes). Run with
// -benchtime 1x: the figures are reported metrics.
func BenchmarkIndexDesigns(b *testing.B) {
	for _, orgs := range []int{10, 200} {
		for _, design := range []string{"side-table", "expression"} {
			b.Run(fmt.Sprintf("%s/orgs=%d", design, orgs), func(b *testing.B) {
				ctx := context.Background()
				s, err := Open(ctx, "sqlite:"+b.TempDir()+"/designs.db")
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if err := s.Migrate(ctx); err != nil {
					b.Fatal(err)
				}
				const perOrg = 10_000
				for i := range orgs {
					org := fmt.Sprintf("o%03d", i)
					if err := s.CreateTable(ctx, &svctype.Table{OrgID: org, Name: "t", Fields: map[string]string{"k": "text", "v": "number"}}); err != nil {
						b.Fatal(err)
					}
					if err := bulkRowsAt(ctx, s, org, perOrg); err != nil {
						b.Fatal(err)
					}
					if design == "side-table" {
						if err := s.AddTableIndex(ctx, org, "t", svctype.TableIndex{Columns: []string{"k"}}); err != nil {
							b.Fatal(err)
						}
						if _, err := s.BuildTableIndex(ctx, org, "t", "k", "", perOrg+1); err != nil {
							b.Fatal(err)
						}
						if err := s.ReadyTableIndex(ctx, org, "t", "k"); err != nil {
							b.Fatal(err)
						}
						continue
					}
					// The partial index only serves a query whose WHERE repeats its literals.
					_, err := s.write.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX "ix_%s_t_k" ON table_rows (json_extract(data, '$.k')) WHERE org_id = '%s' AND table_name = 't'`, org, org))
					if err != nil {
						b.Fatal(err)
					}
				}
				rng := rand.New(rand.NewPCG(3, 4))
				var reads []time.Duration
				for range 2000 {
					org := fmt.Sprintf("o%03d", rng.IntN(orgs))
					key := fmt.Sprintf("k%07d", rng.IntN(perOrg))
					t0 := time.Now()
					var n int
					if design == "side-table" {
						rows, err := s.ReadRows(ctx, org, "t", map[string]any{"k": key}, 1)
						if err != nil {
							b.Fatal(err)
						}
						n = len(rows)
					} else {
						rows, err := s.read.QueryContext(ctx, fmt.Sprintf(`SELECT id, data FROM table_rows WHERE org_id = '%s' AND table_name = 't' AND json_extract(data, '$.k') = ? AND json_type(data, '$.k') = 'text' LIMIT 1`, org), key)
						if err != nil {
							b.Fatal(err)
						}
						for rows.Next() {
							n++
						}
						rows.Close()
					}
					reads = append(reads, time.Since(t0))
					if n != 1 {
						b.Fatalf("%s %s: %d rows", org, key, n)
					}
				}
				// Inserts: one organization's writes, as a step makes them.
				const inserts = 2000
				t0 := time.Now()
				for i := range inserts {
					if _, err := s.InsertRow(ctx, "o000", "t", map[string]any{"k": fmt.Sprintf("n%07d", i), "v": i}); err != nil {
						b.Fatal(err)
					}
				}
				insert := time.Since(t0) / inserts
				slices.Sort(reads)
				b.ReportMetric(float64(reads[len(reads)/2].Microseconds()), "read-p50-µs")
				b.ReportMetric(float64(insert.Microseconds()), "insert-µs")
			})
		}
	}
}

// bulkRowsAt is bulkRows with a distinct created_at per row, as rows written over time have.
func bulkRowsAt(ctx context.Context, s *Store, org string, n int) error {
	_, err := s.write.ExecContext(ctx, `WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i + 1 < ?)
INSERT INTO table_rows (id, org_id, table_name, data, created_at, updated_at)
SELECT printf('%s-%08d', ?, i), ?, 't', json_object('k', printf('k%07d', i), 'v', i),
 strftime('%Y-%m-%d %H:%M:%f+00:00', '2026-01-01', '+' || i || ' seconds'), '2026-01-01 00:00:00+00:00' FROM g`, n, org, org)
	return err
}
