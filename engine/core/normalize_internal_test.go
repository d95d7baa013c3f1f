package core

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/internal/jsonnum"
)

// roundTrip is what normalize made of every output with Go types before plainJSON: the
// value encoded and decoded again, numbers as json.Number.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, jsonnum.Unmarshal(b, &out))
	return out
}

// TestPlainJSONIsARoundTrip: where plainJSON answers, it answers what the JSON round trip
// did, value for value and type for type; where it cannot be sure, it does not answer, and
// normalize still gives the round trip's value.
func TestPlainJSONIsARoundTrip(t *testing.T) {
	t.Parallel()
	answered := []any{
		map[string]any{"table": "accounts", "written": 1, "dropped": []string{}},
		map[string]any{"table": "t", "written": int64(math.MaxInt64), "dropped": []string{"a", "b"}, "n": int32(-7)},
		map[string]any{"nil map": map[string]any(nil), "nil slice": []any(nil), "nil strings": []string(nil)},
		[]any{nil, true, false, "<&>", "line\u2028sep", "café", 0, -1, []any{map[string]any{"k": []string{"x"}}}},
	}
	for _, v := range answered {
		got, ok := plainJSON(v)
		require.True(t, ok, "%#v", v)
		require.Equal(t, roundTrip(t, v), got)
		require.Equal(t, roundTrip(t, v), normalize(v))
	}
	declined := []any{
		map[string]any{"f": 1.5, "i": 1},         // a float's text is encoding/json's
		map[string]any{"bad": "caf\xe9", "i": 1}, // the round trip replaces bad bytes
		map[string]any{"caf\xe9": 1},             // in keys too
		map[string]any{"strings": []string{"\xff"}},
		map[string]any{"n": json.Number("1.50"), "i": 1}, // kept as written by the round trip
		map[string]any{"u": uint8(1)},                    // other kinds
		struct{ A int }{1},
		map[string]any{"m": map[string]string{"a": "b"}},
	}
	for _, v := range declined {
		_, ok := plainJSON(v)
		require.False(t, ok, "%#v", v)
		require.Equal(t, roundTrip(t, v), normalize(v))
	}
}
