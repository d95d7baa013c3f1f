package dbquery

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBindParams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		d       dialect
		query   string
		params  []any
		want    string
		args    []any
		wantErr bool
	}{
		{"mysql simple", mysqlDialect, "SELECT * FROM t WHERE a = $1 AND b = $2", []any{1, 2}, "SELECT * FROM t WHERE a = ? AND b = ?", []any{1, 2}, false},
		{"mysql repeated", mysqlDialect, "SELECT $1, $1", []any{"x"}, "SELECT ?, ?", []any{"x", "x"}, false},
		{"mysql reordered", mysqlDialect, "SELECT $2, $1, $2", []any{"a", "b"}, "SELECT ?, ?, ?", []any{"b", "a", "b"}, false},
		{"mysql $10", mysqlDialect, "SELECT $10, $1", []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, "", nil, true}, // $2..$9 unused
		{"mysql strings", mysqlDialect, `SELECT '$1', "$1", 'it''s $1', 'a\'$1', $1`, []any{7}, `SELECT '$1', "$1", 'it''s $1', 'a\'$1', ?`, []any{7}, false},
		{"mysql backtick", mysqlDialect, "SELECT `a$1` FROM t WHERE x = $1", []any{7}, "SELECT `a$1` FROM t WHERE x = ?", []any{7}, false},
		{"mysql comments", mysqlDialect, "SELECT $1 # $2\n-- $2\n/* $2 */", []any{7}, "SELECT ? # $2\n-- $2\n/* $2 */", []any{7}, false},
		{"mysql minus minus", mysqlDialect, "SELECT 5--$1", []any{7}, "SELECT 5--?", []any{7}, false},
		{"mysql identifier with $", mysqlDialect, "SELECT a$1 FROM t WHERE b = $1", []any{7}, "SELECT a$1 FROM t WHERE b = ?", []any{7}, false},
		{"mysql ?", mysqlDialect, "SELECT ?", []any{7}, "", nil, true},
		{"mysql missing", mysqlDialect, "SELECT $2", []any{7}, "", nil, true},
		{"mysql unused", mysqlDialect, "SELECT 1", []any{7}, "", nil, true},
		{"mysql $0", mysqlDialect, "SELECT $0", nil, "", nil, true},
		{"mysql unclosed", mysqlDialect, "SELECT '$1", []any{}, "SELECT '$1", []any{}, false},
		{"pg untouched", postgres, "SELECT $2::int, $1", []any{1, 2}, "SELECT $2::int, $1", []any{1, 2}, false},
		{"pg dollar quote", postgres, "SELECT $$ $2 $$, $tag$ $3 $tag$, $1", []any{1}, "SELECT $$ $2 $$, $tag$ $3 $tag$, $1", []any{1}, false},
		{"pg E string", postgres, `SELECT E'\' $2', $1`, []any{1}, `SELECT E'\' $2', $1`, []any{1}, false},
		{"pg nested comment", postgres, "SELECT /* /* $2 */ $2 */ $1", []any{1}, "SELECT /* /* $2 */ $2 */ $1", []any{1}, false},
		{"pg jsonb ?", postgres, "SELECT $1::jsonb ? 'a'", []any{"{}"}, "SELECT $1::jsonb ? 'a'", []any{"{}"}, false},
		{"pg quoted identifier", postgres, `SELECT 1 AS "$2", $1`, []any{1}, `SELECT 1 AS "$2", $1`, []any{1}, false},
		{"pg missing", postgres, "SELECT $1, $3", []any{1, 2, 3}, "", nil, true},
		{"sqlite brackets", sqlite, "SELECT [$2], $1", []any{1}, "SELECT [$2], $1", []any{1}, false},
		{"sqlite ?", sqlite, "SELECT ?1", []any{1}, "", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, args, err := bindParams(c.d, c.query, c.params)
			if c.wantErr {
				require.ErrorIs(t, err, ErrParams)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			require.Equal(t, c.args, args)
		})
	}
}

func TestJSONValue(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 11, 30, 0, 0, time.FixedZone("CET", 3600))
	for _, c := range []struct {
		in   any
		kind valueKind
		want any
	}{
		{[]byte("42"), kindInt, int64(42)},
		{[]byte("18446744073709551615"), kindInt, json.Number("18446744073709551615")},
		{uint64(math.MaxUint64), kindInt, json.Number("18446744073709551615")},
		{[]byte("1.25"), kindFloat, 1.25},
		{math.NaN(), kindFloat, "NaN"},
		{"12.50", kindDecimal, json.Number("12.50")},
		{"NaN", kindDecimal, "NaN"},
		{[]byte(`{"a":1}`), kindJSON, map[string]any{"a": 1.0}},
		{[]byte(`not json`), kindJSON, "not json"},
		{[]byte{0xff}, kindBinary, "/w=="},
		{[]byte("text"), kindBinary, "text"},
		{at, kindOther, "2026-11-23T10:30:00Z"},
		{at, kindDate, "2026-11-23"},
		{int32(7), kindInt, int64(7)},
	} {
		require.Equal(t, c.want, jsonValue(c.in, c.kind), "%#v", c.in)
	}
	for name, want := range map[string]valueKind{
		"INT4": kindInt, "BIGINT": kindInt, "UNSIGNED BIGINT": kindInt, "TINYINT": kindInt, "INTEGER": kindInt,
		"POINT": kindOther, "INTERVAL": kindOther, "NUMERIC": kindDecimal, "DECIMAL": kindDecimal,
		"FLOAT8": kindFloat, "DOUBLE": kindFloat, "REAL": kindFloat, "JSONB": kindJSON, "DATE": kindDate,
		"BYTEA": kindBinary, "VARBINARY": kindBinary, "MEDIUMBLOB": kindBinary, "TEXT": kindOther, "": kindOther,
	} {
		require.Equal(t, want, kindOf(name), name)
	}
}

func TestParamValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want any }{
		{42.0, int64(42)},
		{1.5, 1.5},
		{1e300, 1e300},
		{json.Number("9007199254740993"), int64(9007199254740993)},
		{json.Number("0.1"), 0.1},
		{[]any{1.0, "a"}, `[1,"a"]`},
		{map[string]any{"k": true}, `{"k":true}`},
		{nil, nil},
		{"s", "s"},
	} {
		got, err := paramValue(c.in)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "%#v", c.in)
	}
	_, err := paramValue(map[string]any{"f": func() {}})
	require.Error(t, err)
}

func TestPoolBoundedAndIdle(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolOptions{AllowPrivateTargets: true, MaxDatabases: 2, IdleTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = p.Close() })
	dir := t.TempDir()
	open := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.dbs)
	}
	for _, name := range []string{"a.db", "b.db", "c.db", "a.db"} {
		_, err := p.Query(context.Background(), "sqlite:"+filepath.Join(dir, name), "SELECT 1 AS one", nil, Options{})
		require.NoError(t, err)
		require.LessOrEqual(t, open(), 2)
	}
	require.Eventually(t, func() bool { return open() == 0 }, 5*time.Second, 10*time.Millisecond, "idle databases are closed")

	// A closed pool refuses.
	require.NoError(t, p.Close())
	_, err := p.Query(context.Background(), "sqlite:"+filepath.Join(dir, "a.db"), "SELECT 1", nil, Options{})
	require.ErrorIs(t, err, ErrClosed)
}
