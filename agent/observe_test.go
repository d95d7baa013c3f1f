package agent_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
)

func TestObserveKeepsSmallResultsWhole(t *testing.T) {
	t.Parallel()
	v := map[string]any{"matched": []any{1.0, 2.0}, "note": "ok"}
	got := agent.Observe(v)
	require.JSONEq(t, `{"matched": [1, 2], "note": "ok"}`, got)
}

func TestObserveSummarisesLargeResults(t *testing.T) {
	t.Parallel()
	groups := make([]any, 5000)
	for i := range groups {
		groups[i] = map[string]any{"match_key": fmt.Sprintf("INV-%05d", i), "classification": "full", "amount": float64(i)}
	}
	counts := map[string]any{"groups": 5000.0, "full": 4990.0, "variance": 10.0}
	out := agent.Observe(map[string]any{"matchGroups": groups, "matchGroupCounts": counts, "memo": strings.Repeat("x", 20_000)})
	require.LessOrEqual(t, utf8.RuneCountInString(out), agent.MaxObservation)
	var s struct {
		Truncated bool              `json:"truncated"`
		Keys      []string          `json:"keys"`
		Sizes     map[string]string `json:"sizes"`
		Preview   map[string]any    `json:"preview"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s), "a summary is JSON, never cut in the middle")
	require.True(t, s.Truncated)
	require.Equal(t, []string{"matchGroupCounts", "matchGroups", "memo"}, s.Keys)
	require.Equal(t, "array of 5000", s.Sizes["matchGroups"])
	require.Equal(t, counts, s.Preview["matchGroupCounts"], "small values, the counts, are kept whole")
	mg, _ := s.Preview["matchGroups"].(map[string]any)
	require.Equal(t, 5000.0, mg["length"])
	require.NotEmpty(t, mg["preview"])

	arr := agent.Observe(groups)
	require.LessOrEqual(t, utf8.RuneCountInString(arr), agent.MaxObservation)
	var a map[string]any
	require.NoError(t, json.Unmarshal([]byte(arr), &a))
	require.Equal(t, 5000.0, a["length"])
	require.Equal(t, "array", a["type"])

	str := agent.Observe(strings.Repeat("é", 30_000))
	require.LessOrEqual(t, utf8.RuneCountInString(str), agent.MaxObservation)
	require.NoError(t, json.Unmarshal([]byte(str), &a))
	require.Equal(t, 30000.0, a["length"])
}

// Whatever the result, what the model reads is JSON of at most MaxObservation characters.
func TestObserveBoundsAnything(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	nodes := 0 // bounds one value's size, so the test measures Observe, not the generator
	var gen func(depth int) any
	gen = func(depth int) any {
		nodes++
		switch k := rng.IntN(6); {
		case depth > 4 || k == 0 || nodes > 5_000:
			return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(300))
		case k == 1:
			return rng.Float64() * 1e6
		case k == 2, k == 3:
			n := rng.IntN(400 >> (2 * depth))
			arr := make([]any, n)
			for i := range arr {
				arr[i] = gen(depth + 1)
			}
			return arr
		default:
			n := rng.IntN(60 >> depth)
			m := map[string]any{}
			for i := range n {
				m[fmt.Sprintf("k%d", i)] = gen(depth + 1)
			}
			return m
		}
	}
	for i := range 100 {
		nodes = 0
		v := gen(0)
		out := agent.Observe(v)
		require.LessOrEqual(t, utf8.RuneCountInString(out), agent.MaxObservation, "case %d", i)
		require.True(t, json.Valid([]byte(out)), "case %d", i)
	}
}
