package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFillStepFields(t *testing.T) {
	t.Parallel()
	known := map[string]any{"run_id": "r1", "step_index": 2, "error": "boom"}
	for _, tc := range []struct {
		event   string
		payload map[string]any
		want    map[string]any
	}{
		{"llm_key_missing", map[string]any{"event": "e", "message": "m"}, map[string]any{"run_id": "r1", "event": "e", "message": "m"}},
		{"matcher.failed", map[string]any{}, map[string]any{"run_id": "r1", "step_index": 2, "error": "boom"}},
		{"custom_table_dropped_fields", map[string]any{"table": "t", "dropped": []string{"x"}}, map[string]any{"run_id": "r1", "step_index": 2, "table": "t", "dropped": []string{"x"}}},
		{"nway_matcher.failed", map[string]any{"error": "own"}, map[string]any{"run_id": "r1", "step_index": 2, "error": "own"}},
		// A registered kind's own event is not in the catalogue: it gets every field.
		{"acme.synced", map[string]any{}, map[string]any{"run_id": "r1", "step_index": 2, "error": "boom"}},
	} {
		t.Run(tc.event, func(t *testing.T) {
			t.Parallel()
			fillStepFields(tc.event, tc.payload, known)
			require.Equal(t, tc.want, tc.payload)
		})
	}
}
