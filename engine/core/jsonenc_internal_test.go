package core

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/expr"
)

// sameAsMarshal fails unless encodeValue writes exactly json.Marshal's bytes for v.
func sameAsMarshal(t *testing.T, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := encodeValue(v)
	if werr != nil {
		require.Error(t, gerr, "json.Marshal refuses %#v", v)
		return
	}
	require.NoError(t, gerr)
	require.Equal(t, string(want), string(got))
}

func TestEncodeValueIsJSONMarshal(t *testing.T) {
	t.Parallel()
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2 + 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20, 1e21, 1.2345e22, -1e21,
		123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, 100.1, 1e300, -2.5e-300}
	for _, f := range floats {
		sameAsMarshal(t, f)
	}
	strs := []string{"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "\x00\x01\x1f\b\f\n\r\t",
		"café", "caf\xe9 invalid", "\xff\xfe", "line\u2028sep\u2029", "emoji 😀", "\u007f del", strings.Repeat("x", 1000)}
	for _, s := range strs {
		sameAsMarshal(t, s)
		sameAsMarshal(t, map[string]any{s: s})
	}
	sameAsMarshal(t, nil)
	sameAsMarshal(t, []any{})
	sameAsMarshal(t, map[string]any{})
	sameAsMarshal(t, []any{nil, true, false, 1.5, "s", []any{map[string]any{"b": 1.0, "a": []any{}}}})
	keys := map[string]any{}
	for i := range 40 { // more keys than the encoder's stack array
		keys[string(rune('a'+i%26))+strings.Repeat("k", i)] = float64(i)
	}
	sameAsMarshal(t, keys)
	// Not a decoded JSON type: json.Marshal's bytes, and its errors.
	sameAsMarshal(t, map[string]any{"n": json.Number("12.50"), "i": 3, "raw": json.RawMessage(`{"z":1, "a":2}`)})
	sameAsMarshal(t, math.Inf(1))
	sameAsMarshal(t, []any{math.NaN()})

	// Random decoded values: what the executor stores.
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		sameAsMarshal(t, randomValue(r, 4))
	}
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(7); {
	case depth == 0 || n == 0:
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return randomString(r)
		}
		return math.Float64frombits(r.Uint64()&^(0x7ff<<52) | uint64(r.IntN(0x7fe))<<52) // finite
	case n < 4:
		m := map[string]any{}
		for range r.IntN(6) {
			m[randomString(r)] = randomValue(r, depth-1)
		}
		return m
	default:
		a := make([]any, r.IntN(6))
		for i := range a {
			a[i] = randomValue(r, depth-1)
		}
		return a
	}
}

func randomString(r *rand.Rand) string {
	alphabet := []rune("ab<>&\"\\\x00\x1f\n\u2028\u2029é😀\x7f")
	var sb strings.Builder
	for range r.IntN(8) {
		sb.WriteRune(alphabet[r.IntN(len(alphabet))])
	}
	if r.IntN(10) == 0 {
		sb.WriteString("\xff") // invalid UTF-8
	}
	return sb.String()
}

// FuzzEncodeValue: for any JSON document, the decoded value encodes as json.Marshal does.
func FuzzEncodeValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x<y"],"b":null}`, `"\u2028\ud800"`, `[1e21,1e-7,-0]`, `{"é":{"":true}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		sameAsMarshal(t, v)
	})
}

// BenchmarkEncodeOutputs: ours against encoding/json on what steps output. The figures
// against goccy/go-json and segmentio/encoding are in docs/decisions.md ("Output encoder").
func BenchmarkEncodeOutputs(b *testing.B) {
	// make bench-runs' run (hosts/worker ledgerFlow): an upsert's, a read's and a write's
	// outputs as the executor holds them after normalize, each encoded on its own.
	ledger := []any{
		map[string]any{"table": "accounts", "written": json.Number("1"), "dropped": []any{}},
		[]any{map[string]any{"id": "acct-13", "amount": json.Number("13")}},
		map[string]any{"table": "ledger", "written": json.Number("1"), "dropped": []any{}},
	}
	// A matcher's matched output: pairs of 4-field records.
	r := rand.New(rand.NewPCG(3, 4))
	pairs := make([]any, 46_000)
	rec := func() map[string]any {
		return map[string]any{"id": "L-" + randomString(r), "counterparty": "ACME Ltd " + randomString(r),
			"amount": float64(r.IntN(1_000_000)) / 100, "date": "2026-11-24"}
	}
	for i := range pairs {
		pairs[i] = map[string]any{"left": rec(), "right": rec()}
	}
	// An output that holds a large input's array as read, lazily (JSON kept as bytes).
	rows, err := encodeValue(pairs[:20_000])
	require.NoError(b, err)
	lazy := map[string]any{"rows": expr.NewLazy(rows), "count": float64(20_000)}
	for _, c := range []struct {
		name    string
		marshal func(any) ([]byte, error)
	}{{"json.Marshal", json.Marshal}, {"encodeValue", encodeValue}} {
		b.Run("ledger/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, v := range ledger {
					if _, err := c.marshal(v); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		for name, v := range map[string]any{"pairs-page": pairs[:1000], "pairs": pairs, "lazy": lazy} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.marshal(v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestEncodeOutputInParts: a large array is encoded straight into parts of per elements
// whose elements, joined, are the array json.Marshal writes; anything small is whole.
func TestEncodeOutputInParts(t *testing.T) {
	t.Parallel()
	joined := func(e encoded) string {
		if e.parts == nil {
			return string(e.whole)
		}
		var els []string
		for _, p := range e.parts {
			var part []json.RawMessage
			require.NoError(t, json.Unmarshal(p, &part))
			for _, el := range part {
				els = append(els, string(el))
			}
		}
		return "[" + strings.Join(els, ",") + "]"
	}
	big := make([]any, 20_000)
	for i := range big {
		big[i] = map[string]any{"i": float64(i), "s": strings.Repeat("x", i%50)}
	}
	// Elements after the sample much smaller than it: the estimate is too high, not wrong.
	skewed := make([]any, 3000)
	for i := range skewed {
		skewed[i] = strings.Repeat("y", map[bool]int{true: 5000, false: 1}[i < 64])
	}
	for name, v := range map[string]any{"big": big, "skewed": skewed, "small": big[:10], "one": big[:1], "object": map[string]any{"a": big[:3]}} {
		e, err := encodeOutput(v)
		require.NoError(t, err, name)
		want, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), joined(e), name)
		if e.parts != nil {
			require.Greater(t, len(want), LargeValueBytes, "%s: only a large value is in parts", name)
			require.Equal(t, len(v.([]any)), e.length)
			for i, p := range e.parts {
				var part []json.RawMessage
				require.NoError(t, json.Unmarshal(p, &part))
				if i < len(e.parts)-1 {
					require.Len(t, part, e.per, "%s: every part but the last holds per elements", name)
				}
				require.Less(t, len(p), 4*PartBytes, "%s: part %d is about PartBytes", name, i)
			}
		}
	}
	e, err := encodeOutput(big)
	require.NoError(t, err)
	require.NotNil(t, e.parts, "a 20,000-element array of about 1 MB is stored in parts")
}
