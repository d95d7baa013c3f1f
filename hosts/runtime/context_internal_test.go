package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContextValueWritesWhatEncodingJSONWould: the answer written from the stored bytes
// decodes to what encoding/json's answer decodes to, for every shape of answer.
func TestContextValueWritesWhatEncodingJSONWould(t *testing.T) {
	t.Parallel()
	three, zero, hundred := 3, 0, 100
	for _, cv := range []ContextValue{
		{Key: "matched", Value: json.RawMessage(`[{"left":{"id":"a<b"},"right":{"id":"c&d"}},1,"x"]`), Total: &three, Offset: &zero, Limit: &hundred},
		{Key: "note", Value: json.RawMessage(`"just a string"`)},
		{Key: "odd \"key\" \u2028 é <tag>", Value: json.RawMessage(`{"n":null}`)},
		{Key: "empty", Value: json.RawMessage(`[]`), Total: &zero, Offset: &hundred, Limit: &hundred},
		{Key: "none"},
	} {
		fast := cv.appendJSON(nil)
		require.True(t, json.Valid(fast), "%s", fast)
		slow, err := json.Marshal(cv)
		require.NoError(t, err)
		var a, b any
		require.NoError(t, json.Unmarshal(fast, &a))
		require.NoError(t, json.Unmarshal(slow, &b))
		require.Equal(t, b, a, "%s", fast)
	}
}
