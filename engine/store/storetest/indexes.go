package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// buildIndex builds the index on cols through the store's batches and makes it ready.
func (b *bundle) buildIndex(t *testing.T, org, table string, cols []string, batch int) {
	t.Helper()
	require.NoError(t, b.s.AddTableIndex(b.ctx, org, table, svctype.TableIndex{Columns: cols}))
	key := svctype.IndexKey(cols)
	batches := 0
	for cursor := ""; ; batches++ {
		next, err := b.s.BuildTableIndex(b.ctx, org, table, key, cursor, batch)
		require.NoError(t, err)
		if next == "" {
			break
		}
		cursor = next
		require.Less(t, batches, 10000, "the build ends")
	}
	require.NoError(t, b.s.ReadyTableIndex(b.ctx, org, table, key))
}

// wkey names a where by its JSON ("1" and 1 apart).
func wkey(w map[string]any) string {
	b, _ := json.Marshal(w)
	return string(b)
}

// rowIDs returns the ids of rows, in order.
func rowIDs(rows []svctype.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func testTableIndexes(t *testing.T, b *bundle) {
	for _, org := range []string{orgA, orgB} {
		require.NoError(t, b.s.CreateTable(b.ctx, &svctype.Table{
			OrgID: org, Name: "t", Fields: map[string]string{"k": "text", "a": "text", "b": "number", "v": "text"},
		}))
	}
	defs, err := b.s.TableIndexes(b.ctx, orgA, "t")
	require.NoError(t, err)
	require.Empty(t, defs)

	// Rows before any index, of every JSON type an index must tell apart.
	values := []any{"1", 1.0, true, nil, "x", map[string]any{"z": 1.0}}
	var inserted []svctype.Row
	for i := range 30 {
		row := map[string]any{"a": values[i%len(values)], "b": float64(i % 3), "v": fmt.Sprint(i)}
		if i%7 == 0 {
			delete(row, "a") // missing: matches no where on a, not even null
		}
		r, err := b.s.InsertRow(b.ctx, orgA, "t", row)
		require.NoError(t, err)
		inserted = append(inserted, r)
		// Org B's rows carry the same values: an index never crosses organizations.
		_, err = b.s.InsertRow(b.ctx, orgB, "t", row)
		require.NoError(t, err)
	}
	// What every where returns without an index, to compare with after.
	wheres := []map[string]any{
		{"a": "1"}, {"a": 1.0}, {"a": true}, {"a": nil}, {"a": map[string]any{"z": 1.0}},
		{"a": "x", "b": 2.0}, {"a": "1", "b": 0.0}, {"a": "nope"}, {"b": 1.0, "a": 1.0, "v": "1"},
	}
	before := map[string][]string{}
	for _, w := range wheres {
		rows, err := b.s.ReadRows(b.ctx, orgA, "t", w, 0)
		require.NoError(t, err)
		before[wkey(w)] = rowIDs(rows)
	}
	require.Len(t, before[wkey(map[string]any{"a": nil})], 4, "explicit nulls only")

	// Declared: building. A row written now gets its entry from the write, not the build.
	require.NoError(t, b.s.AddTableIndex(b.ctx, orgA, "t", svctype.TableIndex{Columns: []string{"a", "b"}}))
	defs, err = b.s.TableIndexes(b.ctx, orgA, "t")
	require.NoError(t, err)
	require.Len(t, defs, 1)
	require.Equal(t, svctype.IndexBuilding, defs[0].State)
	require.False(t, defs[0].CreatedAt.IsZero())
	late, err := b.s.InsertRow(b.ctx, orgA, "t", map[string]any{"a": "x", "b": 2.0, "v": "late"})
	require.NoError(t, err)
	before[wkey(map[string]any{"a": "x", "b": 2.0})] = append(before[wkey(map[string]any{"a": "x", "b": 2.0})], late.ID)

	// A duplicate (same set, other order) is a conflict and changes nothing.
	err = b.s.AddTableIndex(b.ctx, orgA, "t", svctype.TableIndex{Columns: []string{"b", "a"}})
	require.ErrorIs(t, err, storage.ErrConflict)

	// Built in batches of 4, then ready.
	key := svctype.IndexKey([]string{"a", "b"})
	batches := 0
	for cursor := ""; ; batches++ {
		next, err := b.s.BuildTableIndex(b.ctx, orgA, "t", key, cursor, 4)
		require.NoError(t, err)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, 7, batches, "31 rows, 4 a batch")
	require.NoError(t, b.s.ReadyTableIndex(b.ctx, orgA, "t", key))
	b.buildIndex(t, orgA, "t", []string{"a"}, 1000)
	defs, err = b.s.TableIndexes(b.ctx, orgA, "t")
	require.NoError(t, err)
	require.Len(t, defs, 2)
	for _, d := range defs {
		require.Equal(t, svctype.IndexReady, d.State)
	}
	tbl, err := b.s.GetTable(b.ctx, orgA, "t")
	require.NoError(t, err)
	require.Equal(t, defs, tbl.Indexes, "GetTable carries the indexes")

	// Every where returns what it returned by scanning.
	for _, w := range wheres {
		rows, err := b.s.ReadRows(b.ctx, orgA, "t", w, 0)
		require.NoError(t, err)
		require.Equal(t, before[wkey(w)], rowIDs(rows), "where %v", w)
		page, err := b.s.ListRows(b.ctx, orgA, "t", w, svctype.ListOptions{Limit: 2})
		require.NoError(t, err)
		want := before[wkey(w)]
		require.Equal(t, want[:min(2, len(want))], rowIDs(page.Items), "where %v", w)
	}

	// A patch moves rows between index values: the index follows.
	n, err := b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"a": "1"}, map[string]any{"a": "moved"})
	require.NoError(t, err)
	require.Equal(t, len(before[wkey(map[string]any{"a": "1"})]), n)
	rows, err := b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"a": "1"}, 0)
	require.NoError(t, err)
	require.Empty(t, rows)
	rows, err = b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"a": "moved"}, 0)
	require.NoError(t, err)
	require.Equal(t, before[wkey(map[string]any{"a": "1"})], rowIDs(rows))
	// A patch found through the index changes only those rows.
	n, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"a": "moved", "b": 0.0}, map[string]any{"v": "seen"})
	require.NoError(t, err)
	require.Equal(t, len(before[wkey(map[string]any{"a": "1", "b": 0.0})]), n)

	// Org B's same values are not in A's index, and A's patch left B alone.
	rows, err = b.s.ReadRows(b.ctx, orgB, "t", map[string]any{"a": "1"}, 0)
	require.NoError(t, err)
	require.Len(t, rows, len(before[wkey(map[string]any{"a": "1"})]))
	rows, err = b.s.ReadRows(b.ctx, orgB, "t", map[string]any{"a": "moved"}, 0)
	require.NoError(t, err)
	require.Empty(t, rows)

	// An upsert declares an index on its key columns, and keeps the other indexes.
	_, ins, err := b.s.UpsertRow(b.ctx, orgA, "t", []string{"k"}, map[string]any{"k": "u1", "a": "up", "b": 1.0})
	require.NoError(t, err)
	require.True(t, ins)
	defs, err = b.s.TableIndexes(b.ctx, orgA, "t")
	require.NoError(t, err)
	i := slices.IndexFunc(defs, func(d svctype.TableIndex) bool { return d.Key() == "k" })
	require.GreaterOrEqual(t, i, 0, "upsert keys are indexed: %v", defs)
	if defs[i].State == svctype.IndexBuilding {
		// Where writes may be in flight (PostgreSQL), a job builds it: as the job would.
		_, err := b.s.BuildTableIndex(b.ctx, orgA, "t", "k", "", 1000)
		require.NoError(t, err)
		require.NoError(t, b.s.ReadyTableIndex(b.ctx, orgA, "t", "k"))
	}
	up, ins, err := b.s.UpsertRow(b.ctx, orgA, "t", []string{"k"}, map[string]any{"k": "u1", "a": "down", "b": 1.0})
	require.NoError(t, err)
	require.False(t, ins)
	for where, want := range map[string]int{"up": 0, "down": 1} {
		rows, err = b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"a": where}, 0)
		require.NoError(t, err)
		require.Len(t, rows, want, "after the upsert changed a to down, a=%s", where)
	}
	rows, err = b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"k": "u1"}, 0)
	require.NoError(t, err)
	require.Equal(t, []string{up.ID}, rowIDs(rows))
	// Patching a key column moves the row in the key index too.
	_, err = b.s.UpdateRows(b.ctx, orgA, "t", map[string]any{"k": "u1"}, map[string]any{"k": "u2"})
	require.NoError(t, err)
	rows, err = b.s.ReadRows(b.ctx, orgA, "t", map[string]any{"k": "u2"}, 1)
	require.NoError(t, err)
	require.Equal(t, []string{up.ID}, rowIDs(rows))

	// Inside a transaction, as a step writes: the same.
	err = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		r, err := tx.InsertRow(ctx, orgA, "t", map[string]any{"a": "tx", "b": 9.0})
		if err != nil {
			return err
		}
		got, err := tx.ReadRows(ctx, orgA, "t", map[string]any{"a": "tx", "b": 9.0}, 1)
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0].ID != r.ID {
			return fmt.Errorf("read in the transaction: %v", got)
		}
		return nil
	})
	require.NoError(t, err)

	// Counts: bounded and not.
	n, err = b.s.CountRows(b.ctx, orgA, "t", 0)
	require.NoError(t, err)
	require.Equal(t, 33, n)
	n, err = b.s.CountRows(b.ctx, orgA, "t", 10)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	_ = inserted
}
