package tables_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		table    string
		fields   map[string]string
		pointers []string
	}{
		{"valid", "exceptions", map[string]string{"run_id": "text", "amount": "number"}, nil},
		{"bad name", "1bad", map[string]string{"a": "text"}, []string{"/name"}},
		{"no columns", "t", nil, []string{"/fields"}},
		{"bad column type", "t", map[string]string{"a": "varchar"}, []string{"/fields/a"}},
		{"bad column name", "t", map[string]string{"a b": "text"}, []string{"/fields/a b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range tables.Check(tc.table, tc.fields) {
				got = append(got, p.Pointer)
			}
			require.Equal(t, tc.pointers, got)
		})
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tbl := &svctype.Table{Name: "t", Fields: map[string]string{"a": "text", "b": "number"}}
	kept, dropped := tables.Split(tbl, map[string]any{"a": "x", "b": 2.0, "z": 1, "c": nil})
	require.Equal(t, map[string]any{"a": "x", "b": 2.0}, kept)
	require.Equal(t, []string{"c", "z"}, dropped)
	require.Equal(t, []string{"q"}, tables.Undeclared(tbl, []string{"a", "q"}))
}
