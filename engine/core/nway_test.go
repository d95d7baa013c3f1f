package core_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

const nwayInput = `{
  "bank":  [{"inv": "I1", "amount": 100.1}, {"inv": "I2", "amount": 50}, {"inv": "I3", "amount": 10}, {"inv": "I9", "amount": 5}],
  "erp":   [{"inv": "I1", "amount": 100.2}, {"inv": "I2", "amount": 20}, {"inv": "I2", "amount": 30.5}, {"inv": "I3", "amount": 10}],
  "cards": [{"inv": "I1", "amount": 100.15}, {"inv": "I2", "amount": 50.5}]
}`

func TestNWayMatchStep(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.ExceptionTable(t, "o1")
		step := `{"type": "nway_match", "properties": {
		    "sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}, {"key": "cards", "records": "@input.cards"}],
		    "matchOn": ["inv"],
		    "tolerances": {"amount": {"type": "currency", "value": 0.1, "pairs": {"erp:bank": 0.5}}},
		    "exceptionTable": "exceptions"}}`
		// The step twice in one run: the second pass updates the rows of the first.
		w := b.Workflow(t, "o1", "nway", `{"actions": [`+step+`, `+step+`]}`)
		doc := b.Execute(t, "o1", w.ID, nwayInput)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		counts := doc.Context["matchGroupCounts"].(map[string]any)
		// I1 full (within 0.1 and the bank:erp override), I2 variance (cards 50.5 vs bank 50
		// over 0.1), I3 missing_leg (no cards), I9 an orphan.
		require.Equal(t, map[string]any{"groups": json.Number("3"), "full": json.Number("1"), "variance": json.Number("1"), "missing_leg": json.Number("1"), "orphan": json.Number("1")}, counts)
		require.Len(t, doc.Context["matchGroups"], 3)
		require.Len(t, doc.Context["matchOrphans"], 1)
		exc := doc.Context["matchGroupExceptions"].([]any)
		require.Len(t, exc, 3)

		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "exceptions", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 3, "one row per non-full group and orphan, not duplicated by the second pass")
		byClass := map[string]map[string]any{}
		for _, r := range rows {
			byClass[r.Data["classification"].(string)] = r.Data
			require.Equal(t, doc.ID, r.Data["run_id"])
			require.Equal(t, "pending_review", r.Data["status"])
			var prov map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.Data["provenance"].(string)), &prov))
			require.Equal(t, "svcflow", prov["runtime"])
			require.Equal(t, doc.ID, prov["run_id"])
		}
		require.Equal(t, "cards", byClass["missing_leg"]["missing_legs"])
		require.Equal(t, "amount", byClass["variance"]["discrepancy_fields"])
		require.Regexp(t, `^orphan:bank:3:[0-9a-f]{16}$`, byClass["orphan"]["match_key"])

		ev, err := b.Eng.Evidence(b.Ctx, "o1", doc.ID)
		require.NoError(t, err)
		require.Equal(t, 3, ev.Counts["exceptions"])
		require.Equal(t, 1, ev.Counts["match_full"])
		require.Equal(t, 1, ev.Counts["match_orphan"])
		require.Len(t, ev.Exceptions, 3)
		require.Contains(t, string(ev.Exceptions[0]), `"status":"pending_review"`)
		require.Equal(t, "exception_rows_upserted", ev.Effects[0].Kind)

		started := b.EventPayload(t, "o1", doc.ID, "nway_matcher.started")
		require.Equal(t, map[string]any{"bank": float64(4), "erp": float64(4), "cards": float64(2)}, started["leg_counts"])
		done := b.EventPayload(t, "o1", doc.ID, "nway_matcher.completed")
		require.Equal(t, "svc.match-group.v1", done["schema_version"])
		require.JSONEq(t, jsonText(t, counts), jsonText(t, done["counts"]), "the event says the counts the context holds")
		require.Equal(t, "/runs/"+doc.ID+"/context/matchGroups", done["result_reference"])
	})
}

func TestNWayMatchFailuresWriteNothing(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	b.ExceptionTable(t, "o1")
	w := b.Workflow(t, "o1", "nway", `{"actions": [{"type": "nway_match", "properties": {
	    "sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}],
	    "matchOn": ["inv"], "exceptionTable": "exceptions"}}]}`)
	doc := b.Execute(t, "o1", w.ID, `{"bank": [{"inv": "x"}], "erp": {"not": "an array"}}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, "sets[1].records did not resolve to an array")
	failed := b.EventPayload(t, "o1", doc.ID, "nway_matcher.failed")
	require.Contains(t, failed["error"], "sets[1].records")
	rows, err := b.Eng.ReadRows(b.Ctx, "o1", "exceptions", nil, 0)
	require.NoError(t, err)
	require.Empty(t, rows)

	bad := []struct{ name, props, pointer string }{
		{"one leg", `{"sets": [{"key": "a", "records": []}], "matchOn": ["k"]}`, "/definition/actions/0/properties/sets"},
		{"five legs", `{"sets": [{"key": "a", "records": []}, {"key": "b", "records": []}, {"key": "c", "records": []}, {"key": "d", "records": []}, {"key": "e", "records": []}], "matchOn": ["k"]}`, "/definition/actions/0/properties/sets"},
		{"tolerance type", `{"sets": [{"key": "a", "records": []}, {"key": "b", "records": []}], "matchOn": ["k"], "tolerances": {"amount": {"type": "percent", "value": 1}}}`, "/definition/actions/0/properties/tolerances/amount/type"},
		{"fuzzy range", `{"sets": [{"key": "a", "records": []}, {"key": "b", "records": []}], "matchOn": ["k"], "fuzzyThreshold": 101}`, "/definition/actions/0/properties/fuzzyThreshold"},
		{"records not a path", `{"sets": [{"key": "a", "records": "bank"}, {"key": "b", "records": []}], "matchOn": ["k"]}`, "/definition/actions/0/properties/sets/0/records"},
		{"bad rule", `{"sets": [{"key": "a", "records": []}, {"key": "b", "records": []}], "matchOn": ["k"], "rules": [{"greaterThen": [1, 2]}]}`, "/definition/actions/0/properties/rules"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Eng.CreateWorkflow(b.Ctx, "o1", engine.WorkflowInput{Name: tc.name, Definition: json.RawMessage(`{"actions": [{"type": "nway_match", "properties": ` + tc.props + `}]}`)})
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			var ptrs []string
			for _, p := range ve.Problems {
				ptrs = append(ptrs, p.Pointer)
			}
			require.Contains(t, ptrs, tc.pointer, "problems: %v", ve.Problems)
		})
	}
}

func TestNWayRulesAndAction(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	require.NoError(t, b.Eng.Environment().RegisterAction("recon2", "nway_match", map[string]any{
		"sets":       []any{map[string]any{"key": "bank", "records": "@input.bank"}, map[string]any{"key": "erp", "records": "@input.erp"}},
		"matchOn":    []any{"inv"},
		"tolerances": map[string]any{"amount": map[string]any{"type": "abs", "value": 0.0}},
		"rules":      []any{map[string]any{"name": "single_bank_line", "condition": map[string]any{"equal": []any{"@group.legs.bank.count", 1.0}}}},
	}))
	w := b.Workflow(t, "o1", "act", `{"actions": [{"type": "recon2", "properties": {
	    "bank": "@input.bank", "erp": "@input.erp",
	    "tolerances": {"amount": {"type": "abs", "value": 1000}}}}]}`)
	require.Empty(t, w.Warnings)
	doc := b.Execute(t, "o1", w.ID, `{"bank": [{"inv": "A", "amount": 1}, {"inv": "B", "amount": 1}, {"inv": "B", "amount": 1}], "erp": [{"inv": "A", "amount": 1}, {"inv": "B", "amount": 2}]}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	// The call's own tolerances were discarded: B matches on amount (2 = 1 + 1) but fails
	// the stored rule (two bank lines).
	counts := doc.Context["matchGroupCounts"].(map[string]any)
	require.Equal(t, json.Number("1"), counts["full"])
	require.Equal(t, json.Number("1"), counts["variance"])
	exc := doc.Context["matchGroupExceptions"].([]any)[0].(map[string]any)
	require.Contains(t, exc["discrepancy_fields"], "rule:single_bank_line")

	doc = b.Execute(t, "o1", w.ID, `{"bank": []}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, "sets[1].records did not resolve to an array")
	require.Error(t, b.Eng.Environment().RegisterAction("x", "llm", nil))
	require.Error(t, b.Eng.Environment().RegisterAction("y", "nway_match", map[string]any{"sets": []any{}}))
}

func TestNWayLegsFromDocuments(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		bank := b.Upload(t, "o1", "bank.csv", "", "inv,amount\nA,10\nB,20\n")
		b.AddVersion(t, "o1", bank.ID, "", []byte("inv,amount\nA,10\nB,25\n"))
		erp := b.Upload(t, "o1", "erp.json", "", `[{"inv": "A", "amount": 10}, {"inv": "B", "amount": 20}]`)
		w := b.Workflow(t, "o1", "docs", `{"actions": [{"type": "nway_match", "properties": {
		    "sets": [{"key": "bank", "records": "doc:`+bank.ID+`@{{input.v}}"}, {"key": "erp", "records": "doc:`+erp.ID+`"}],
		    "matchOn": ["inv"], "tolerances": {"amount": {"type": "abs", "value": 0}}}}]}`)
		// A reference is taken as written: a template inside doc: is not rendered, so run
		// input cannot choose which document is read.
		doc := b.Execute(t, "o1", w.ID, `{"v": "1"}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "doc:"+bank.ID+"@{{input.v}}")
		require.Contains(t, b.Events(t, "o1", doc.ID), "nway_matcher.failed")

		w2 := b.Workflow(t, "o1", "docs2", `{"actions": [{"type": "nway_match", "properties": {
		    "sets": [{"key": "bank", "records": "doc:`+bank.ID+`@1"}, {"key": "erp", "records": "doc:`+erp.ID+`"}],
		    "matchOn": ["inv"], "tolerances": {"amount": {"type": "abs", "value": 0}}}},
		  {"type": "nway_match", "properties": {
		    "sets": [{"key": "bank", "records": "doc:`+bank.ID+`"}, {"key": "erp", "records": "doc:`+erp.ID+`"}],
		    "matchOn": ["inv"], "tolerances": {"amount": {"type": "abs", "value": 0}}}, "outputKey": "latest"}]}`)
		doc = b.Execute(t, "o1", w2.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		// The second step overwrote the fixed keys: version 2 has B at 25.
		require.Equal(t, json.Number("1"), doc.Context["matchGroupCounts"].(map[string]any)["variance"])
		require.Equal(t, json.Number("1"), doc.Context["latest"].(map[string]any)["matchGroupCounts"].(map[string]any)["variance"])
		// Version 1 agreed in full: the first step's completion event says so.
		page, err := b.Eng.RunEvents(b.Ctx, "o1", doc.ID, svctype.ListOptions{Limit: 100})
		require.NoError(t, err)
		var fulls []float64
		for _, e := range page.Items {
			if e.Event == "nway_matcher.completed" {
				var p map[string]any
				require.NoError(t, json.Unmarshal(e.Payload, &p))
				fulls = append(fulls, p["counts"].(map[string]any)["full"].(float64))
			}
		}
		require.Equal(t, []float64{2, 1}, fulls)

		missing := b.Workflow(t, "o1", "docs3", `{"actions": [{"type": "nway_match", "properties": {
		    "sets": [{"key": "bank", "records": "doc:`+bank.ID+`@9"}, {"key": "erp", "records": "doc:doc_nope"}], "matchOn": ["inv"]}}]}`)
		doc = b.Execute(t, "o1", missing.ID, `{}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "has no version 9")
		require.Contains(t, b.Events(t, "o1", doc.ID), "nway_matcher.failed")
	})
}

// jsonText is v's JSON: the context's numbers are json.Number, an event's payload as a
// test decodes it float64; their JSON is one.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
