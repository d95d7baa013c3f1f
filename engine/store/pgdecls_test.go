package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestWriteSeesAnIndexAnotherStoreMade: a Store that wrote to a table, and so knows its
// index declarations, writes the entries of an index that another Store (another process)
// declared, built and made ready since: an indexed read finds the rows it wrote after,
// inserted and upserted alike. (On PostgreSQL a write no longer reads the declarations
// when its Store knows them: it carries them as a condition, which fails here.)
func TestWriteSeesAnIndexAnotherStoreMade(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := store.NewTestDSN(t, dialect)
			open := func() *store.Store {
				s, err := store.Open(ctx, dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				require.NoError(t, s.Migrate(ctx))
				return s
			}
			a, b := open(), open()
			const org, table = "acme", "t"
			require.NoError(t, a.CreateTable(ctx, &svctype.Table{OrgID: org, Name: table, Fields: map[string]string{"id": "text", "k": "text"}}))
			write := func(row map[string]any, upsert bool) {
				t.Helper()
				require.NoError(t, a.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
					if upsert {
						_, _, err := tx.UpsertRow(ctx, org, table, []string{"id"}, row)
						return err
					}
					_, err := tx.InsertRow(ctx, org, table, row)
					return err
				}))
			}
			write(map[string]any{"id": "1", "k": "before"}, false)
			write(map[string]any{"id": "2", "k": "before"}, true) // a knows the id index too

			key := svctype.IndexKey([]string{"k"})
			require.NoError(t, b.AddTableIndex(ctx, org, table, svctype.TableIndex{Columns: []string{"k"}}))
			for cursor := ""; ; {
				next, err := b.BuildTableIndex(ctx, org, table, key, cursor, 100)
				require.NoError(t, err)
				if next == "" {
					break
				}
				cursor = next
			}
			require.NoError(t, b.ReadyTableIndex(ctx, org, table, key))

			write(map[string]any{"id": "3", "k": "inserted"}, false)
			write(map[string]any{"id": "4", "k": "upserted"}, true)
			for _, k := range []string{"before", "inserted", "upserted"} {
				want := map[string]int{"before": 2, "inserted": 1, "upserted": 1}[k]
				for _, s := range []*store.Store{a, b} {
					rows, err := s.ReadRows(ctx, org, table, map[string]any{"k": k}, 0)
					require.NoError(t, err)
					require.Len(t, rows, want, "rows with k=%s, read through the index", k)
				}
			}
		})
	}
}
