package core_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

func TestMatcherStep(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		w := b.Workflow(t, "o1", "recon", `{"actions": [
		  {"type": "matcher", "properties": {
		    "left": "@input.bank", "right": "@input.erp", "matchOn": ["ref"], "tolerance": 0.5, "dateWindowDays": 3,
		    "outputMatched": "pairs", "outputUnmatchedLeft": "onlyBank"}},
		  {"type": "custom-table", "filter": {"condition": {"greaterThan": [{"length": "@onlyBank"}, 0]}},
		   "properties": {"table": "missing", "operation": "read"}}
		]}`)
		input := `{
		  "bank": [{"ref": "A", "amount": 100, "date": "2026-01-05"}, {"ref": "B", "amount": 50, "date": "2026-01-05"}, {"ref": "C", "amount": 7, "date": "2026-01-01"}],
		  "erp":  [{"ref": "A", "amount": 100.4, "date": "2026-01-07"}, {"ref": "B", "amount": 51, "date": "2026-01-05"}, {"ref": "D", "amount": 1, "date": "2026-01-01"}]
		}`
		run, err := b.Eng.Execute(b.Ctx, "o1", w.ID, json.RawMessage(input), engine.ExecuteOptions{})
		require.NoError(t, err)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		// The second step fails (no such table): the matcher's outputs stay committed.
		require.Equal(t, svctype.RunFailed, doc.Status)
		pairs := doc.Context["pairs"].([]any)
		require.Len(t, pairs, 1)
		require.Equal(t, "A", pairs[0].(map[string]any)["left"].(map[string]any)["ref"])
		require.Equal(t, "A", pairs[0].(map[string]any)["right"].(map[string]any)["ref"])
		require.Len(t, doc.Context["onlyBank"], 2)
		require.Len(t, doc.Context["unmatchedRight"], 2, "the default key of the third output")
		done := b.EventPayload(t, "o1", run.ID, "matcher.completed")
		require.Equal(t, float64(1), done["matched_count"])
		require.Equal(t, float64(2), done["unmatched_left_count"])
		require.Equal(t, float64(2), done["unmatched_right_count"])
		require.Equal(t, "svc.match-pair.v1", done["schema_version"])
		require.NotEmpty(t, done["policy"])
		require.NotContains(t, b.Events(t, "o1", run.ID), "matcher.started", "small inputs emit no matcher.started")
	})
}

func TestMatcherStepFailuresAndLargeInputs(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	w := b.Workflow(t, "o1", "recon", `{"actions": [{"type": "matcher", "properties": {"left": "@input.l", "right": "@input.r", "matchOn": ["ref"]}}]}`)
	doc := b.Execute(t, "o1", w.ID, `{"l": "oops", "r": []}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, "left did not resolve to an array")
	failed := b.EventPayload(t, "o1", doc.ID, "matcher.failed")
	require.Equal(t, float64(0), failed["step_index"])
	require.Contains(t, failed["error"], "left did not resolve to an array")

	var l, r []string
	for i := 0; i < 6000; i++ {
		l = append(l, fmt.Sprintf(`{"ref": "r%d", "amount": %d}`, i, i))
		r = append(r, fmt.Sprintf(`{"ref": "r%d", "amount": %d}`, i, i))
	}
	doc = b.Execute(t, "o1", w.ID, `{"l": [`+strings.Join(l, ",")+`], "r": [`+strings.Join(r, ",")+`]}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	// 6,000 pairs are a large value: the status document refers to it, and it is stored in
	// parts that join back to all the pairs.
	ref, ok := doc.Context["matched"].(map[string]any)
	require.True(t, ok, "%T", doc.Context["matched"])
	require.EqualValues(t, 6000, ref["length"])
	require.Equal(t, "/runs/"+doc.ID+"/context/matched", ref["result_reference"])
	stored, err := b.St.GetContext(b.Ctx, "o1", doc.ID, "matched")
	require.NoError(t, err)
	var pairs []map[string]any
	require.NoError(t, json.Unmarshal(stored["matched"], &pairs))
	require.Len(t, pairs, 6000)
	for i, p := range pairs {
		require.Equal(t, fmt.Sprintf("r%d", i), p["left"].(map[string]any)["ref"])
	}
	started := b.EventPayload(t, "o1", doc.ID, "matcher.started")
	require.Equal(t, map[string]any{"run_id": doc.ID, "step_index": float64(0), "left_size": float64(6000), "right_size": float64(6000)}, started)

	_, err = b.Eng.CreateWorkflow(b.Ctx, "o1", engine.WorkflowInput{Name: "bad", Definition: json.RawMessage(
		`{"actions": [{"type": "matcher", "properties": {"left": "plain", "right": "@input.r", "fuzzyThreshold": 150, "tolerance": "x"}}]}`)})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	var ptrs []string
	for _, p := range ve.Problems {
		ptrs = append(ptrs, p.Pointer)
	}
	require.Contains(t, ptrs, "/definition/actions/0/properties/left")
	require.Contains(t, ptrs, "/definition/actions/0/properties/tolerance")
}
