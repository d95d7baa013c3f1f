package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestReadRowsPrepared: ReadRows on SQLite prepares its text once per shape of where. In a
// transaction the first read compiles it and InTx prepares it on the writer after the
// commit; the next transaction's read, with other values, runs the prepared statement and
// finds its own rows. Outside a transaction the read pool's statement serves. A where of
// another shape is another text.
func TestReadRowsPrepared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTestFile(t)
	require.NoError(t, s.prepareStatements(ctx))

	require.NoError(t, s.CreateTable(ctx, &svctype.Table{OrgID: "o", Name: "accounts", Fields: map[string]string{"id": "text", "n": "number"}}))
	for _, r := range []map[string]any{{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "b", "n": 3}} {
		_, err := s.InsertRow(ctx, "o", "accounts", r)
		require.NoError(t, err)
	}
	shapes := &s.prepared.shapes
	counts := func() (write, read, pending int) {
		shapes.mu.Lock()
		defer shapes.mu.Unlock()
		return len(shapes.write), len(shapes.read), len(shapes.pending)
	}
	readInTx := func(where map[string]any) []svctype.Row {
		var rows []svctype.Row
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			rows, err = tx.ReadRows(ctx, "o", "accounts", where, 0)
			return err
		}))
		return rows
	}
	ns := func(rows []svctype.Row) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = string(r.Data["n"].(json.Number))
		}
		return out
	}

	require.Equal(t, []string{"1"}, ns(readInTx(map[string]any{"id": "a"})))
	w, _, p := counts()
	require.Equal(t, 1, w, "prepared on the writer after the transaction")
	require.Zero(t, p)
	require.Equal(t, []string{"2", "3"}, ns(readInTx(map[string]any{"id": "b"})), "the prepared statement, other values")
	w, _, _ = counts()
	require.Equal(t, 1, w, "one text for both")

	require.Equal(t, []string{"3"}, ns(readInTx(map[string]any{"id": "b", "n": 3})))
	w, _, _ = counts()
	require.Equal(t, 2, w, "another shape, another text")

	got, err := s.ReadRows(ctx, "o", "accounts", map[string]any{"id": "b"}, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"2"}, ns(got))
	got, err = s.ReadRows(ctx, "o", "accounts", map[string]any{"id": "a"}, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"1"}, ns(got))
	_, r, _ := counts()
	require.Equal(t, 1, r, "the read pool's statement")
	require.Empty(t, readInTx(map[string]any{"id": "c"}))
}
