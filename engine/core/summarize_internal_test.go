package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSummarizeLongMembers: a step's properties holding a long array (a matcher's legs) are
// summarised member by member, the array by its length; small values stay whole.
func TestSummarizeLongMembers(t *testing.T) {
	long := make([]any, 300)
	for i := range long {
		long[i] = map[string]any{"id": i}
	}
	got := summarize(map[string]any{"left": long, "matchOn": []any{"counterparty"}, "tolerance": 0.05})
	require.JSONEq(t, `{"left": {"truncated": true, "length": 300}, "matchOn": ["counterparty"], "tolerance": 0.05}`, string(got))
	require.JSONEq(t, `{"a": [1, 2], "b": "x"}`, string(summarize(map[string]any{"a": []any{1.0, 2.0}, "b": "x"})))
}

// TestNormalizeInput: an input is checked, not decoded: an object (spaces before it
// allowed) passes compacted, anything else is a ValidationError at /input.
func TestNormalizeInput(t *testing.T) {
	for raw, want := range map[string]string{"": `{}`, "null": `{}`, ` { "a" : 1 }`: `{"a":1}`} {
		got, err := normalizeInput([]byte(raw))
		require.NoError(t, err, raw)
		require.Equal(t, want, string(got), raw)
	}
	for _, raw := range []string{`[1]`, `5`, `"x"`, `{"a":`, `{} {}`} {
		_, err := normalizeInput([]byte(raw))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, raw)
		require.Equal(t, "/input", ve.Problems[0].Pointer, raw)
	}
}
