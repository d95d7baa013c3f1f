package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// BenchmarkIndexDesigns measures, on a file SQLite, the two ways of indexing custom tables
// that share the rows table (docs/decisions.md, "Indexes on custom tables"): the side table
// the store uses, and a partial expression index per custom-table index
// (json_extract(data, '$.k') WHERE org_id = … AND table_name = …). 200,000 rows in all,
// shared by 10 or by 200 organizations, each with a table and one index on k; the figures
// are a keyed read's p50 and a row insert's cost, so with 10 and with 200 indexes on the
// shared rows. Run with -benchtime 1x: the figures are reported metrics.
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
				perOrg := 200_000 / orgs
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
						// The same work as the expression's query: the hash, one statement.
						h, _, err := valueHash([]string{"k"}, map[string]any{"k": key}, true)
						if err != nil {
							b.Fatal(err)
						}
						rows, err := s.read.QueryContext(ctx, `SELECT tr.id, tr.data FROM table_index_entries tie CROSS JOIN table_rows tr
 WHERE tie.org_id = ? AND tie.table_name = 't' AND tie.index_key = 'k' AND tie.value_hash = ? AND tr.id = tie.row_id
 AND json_extract(tr.data, '$.k') = ? LIMIT 1`, org, h, key)
						if err != nil {
							b.Fatal(err)
						}
						for rows.Next() {
							n++
						}
						rows.Close()
					} else {
						// INDEXED BY: without statistics SQLite's planner prefers the
						// (org_id, table_name, created_at) index and reads the table.
						rows, err := s.read.QueryContext(ctx, fmt.Sprintf(`SELECT id, data FROM table_rows INDEXED BY "ix_%s_t_k" WHERE org_id = '%s' AND table_name = 't' AND json_extract(data, '$.k') = ? AND json_type(data, '$.k') = 'text' LIMIT 1`, org, org), key)
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
				// Inserts: one organization's writes in one transaction, as a foreach batch
				// makes them, so that the figure is the writes' and not the commit's.
				const inserts = 5000
				t0 := time.Now()
				err = s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
					for i := range inserts {
						if _, err := tx.InsertRow(ctx, "o000", "t", map[string]any{"k": fmt.Sprintf("n%07d", i), "v": i}); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				insert := time.Since(t0) / inserts
				slices.Sort(reads)
				b.ReportMetric(float64(reads[len(reads)/2].Microseconds()), "read-p50-µs")
				b.ReportMetric(float64(insert.Nanoseconds())/1000, "insert-µs")
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
