package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

const threeSteps = `{
  "actions": [
    {"type": "custom-table", "outputKey": "saved",
     "properties": {"table": "customers", "operation": "upsert", "keys": ["email"], "values": ["@input.email"],
                    "fields": {"name": "{{input.name}}", "tier": "@input.tier", "junk": 1}}},
    {"type": "custom-table", "outputKey": "vip",
     "filter": {"condition": {"equal": ["@input.tier", "gold"]}},
     "properties": {"table": "customers", "operation": "read", "where": {"tier": "gold"}}},
    {"type": "custom-table", "outputKey": "greeting",
     "properties": {"table": "notes", "operation": "write", "fields": {"text": "Hello {{input.name}}, run {{__run_id}} step {{@__step}}", "n": "@vip.length"}}}
  ]
}`

func TestRunEndToEnd(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.CustomerTables(t, "acme")
		w := b.Workflow(t, "acme", "onboard", threeSteps)
		doc := b.Execute(t, "acme", w.ID, `{"email":"a@x.io","name":"Ada","tier":"gold"}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, w.ID, doc.WorkflowID)
		require.Equal(t, 1, doc.WorkflowVersion)
		require.Len(t, doc.Steps, 3)
		for i, s := range doc.Steps {
			require.Equal(t, i, s.Index)
			require.Equal(t, "custom-table", s.Type)
			require.Equal(t, svctype.StepCompleted, s.Status)
		}
		require.Equal(t, map[string]any{"table": "customers", "written": json.Number("1"), "dropped": []any{"junk"}}, doc.Context["saved"])
		vip := doc.Context["vip"].([]any)
		require.Len(t, vip, 1)
		require.Equal(t, "Ada", vip[0].(map[string]any)["name"])

		rows, err := b.Eng.ReadRows(b.Ctx, "acme", "notes", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, fmt.Sprintf("Hello Ada, run %s step 2", doc.ID), rows[0].Data["text"])
		require.Equal(t, json.Number("1"), rows[0].Data["n"])

		require.Equal(t, []string{
			"workflow_run_started",
			"step.started", "custom_table_dropped_fields", "step.completed",
			"step.started", "step.completed",
			"step.started", "step.completed",
			"workflow_run_completed",
		}, b.Events(t, "acme", doc.ID))
		dropped := b.EventPayload(t, "acme", doc.ID, "custom_table_dropped_fields")
		require.Equal(t, map[string]any{"run_id": doc.ID, "step_index": float64(0), "table": "customers", "dropped": []any{"junk"}}, dropped)
		started := b.EventPayload(t, "acme", doc.ID, "workflow_run_started")
		require.Equal(t, map[string]any{"run_id": doc.ID, "workflow_id": w.ID, "input_payload": map[string]any{"email": "a@x.io", "name": "Ada", "tier": "gold"}}, started)
		done := b.EventPayload(t, "acme", doc.ID, "workflow_run_completed")
		require.Equal(t, "completed", done["result"].(map[string]any)["status"])

		ev, err := b.Eng.Evidence(b.Ctx, "acme", doc.ID)
		require.NoError(t, err)
		require.Len(t, ev.Effects, 2)
		require.Equal(t, "table_row_upsert", ev.Effects[0].Kind)
		require.Equal(t, 0, ev.Effects[0].StepIndex)
		require.Equal(t, "table_row_write", ev.Effects[1].Kind)
		require.Equal(t, 2, ev.Effects[1].StepIndex)
		require.JSONEq(t, `{"table":"customers","operation":"upsert","keys":["email"],"values":["a@x.io"],"fields":{"name":"Ada","tier":"gold","junk":1}}`, string(ev.Steps[0].InputSummary))
		require.Contains(t, ev.Decisions, svctype.Decision{Kind: "filter", Result: true})

		// The filter is false for another tier: the step is skipped, the run goes on, the
		// upsert updates rather than duplicates.
		doc = b.Execute(t, "acme", w.ID, `{"email":"a@x.io","name":"Ada L.","tier":"silver"}`)
		require.Equal(t, svctype.RunCompleted, doc.Status)
		require.Equal(t, svctype.StepSkipped, doc.Steps[1].Status)
		require.NotContains(t, doc.Context, "vip")
		rows, err = b.Eng.ReadRows(b.Ctx, "acme", "customers", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "Ada L.", rows[0].Data["name"])
	})
}

func TestGateAndOnFalse(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.CustomerTables(t, "o1")
		w := b.Workflow(t, "o1", "gated", `{
		  "condition": {"greaterThan": [{"length": ["@input.items"]}, 0]},
		  "actions": [
		    {"type": "custom-table", "outputKey": "r",
		     "filter": {"condition": {"startsWith": ["@input.items.0", "x"]}},
		     "onFalse": {"type": "custom-table", "outputKey": "alt", "properties": {"table": "notes", "operation": "write", "fields": {"text": "alt {{input.items.0}}"}}},
		     "properties": {"table": "notes", "operation": "write", "fields": {"text": "main"}}}
		  ]}`)
		doc := b.Execute(t, "o1", w.ID, `{"items": []}`)
		require.Equal(t, svctype.RunConditionNotMet, doc.Status)
		require.Equal(t, []string{"workflow_run_started", "workflow_run_completed"}, b.Events(t, "o1", doc.ID))
		require.Equal(t, map[string]any{"status": "condition_not_met"}, b.EventPayload(t, "o1", doc.ID, "workflow_run_completed")["result"])

		empty := b.Workflow(t, "o1", "gate-only", `{"condition": {"equal": ["@input.go", true]}, "actions": []}`)
		require.Equal(t, svctype.RunConditionNotMet, b.Execute(t, "o1", empty.ID, `{"go": false}`).Status)
		require.Equal(t, svctype.RunCompleted, b.Execute(t, "o1", empty.ID, `{"go": true}`).Status)

		doc = b.Execute(t, "o1", w.ID, `{"items": ["apple"]}`)
		require.Equal(t, svctype.RunCompleted, doc.Status)
		require.Contains(t, doc.Context, "alt")
		require.NotContains(t, doc.Context, "r")
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "notes", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "alt apple", rows[0].Data["text"])
	})
}

func TestStepFailureKeepsEarlierEffects(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.CustomerTables(t, "o1")
		b.Eng.RegisterStep("explode", func(ctx context.Context, call *svctype.StepCall) (any, error) {
			// Written inside the failing step's transaction: must not survive.
			if _, err := call.Tables.InsertRow(ctx, call.OrgID, "notes", map[string]any{"text": "partial"}); err != nil {
				return nil, err
			}
			return nil, errors.New("boom: " + call.Properties["why"].(string))
		})
		w := b.Workflow(t, "o1", "fails", `{"actions": [
		  {"type": "custom-table", "outputKey": "first", "properties": {"table": "notes", "operation": "write", "fields": {"text": "kept"}}},
		  {"type": "explode", "properties": {"why": "{{input.why}}"}},
		  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "never"}}}
		]}`)
		doc := b.Execute(t, "o1", w.ID, `{"why": "bad data"}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "boom: bad data")
		require.Equal(t, []svctype.StepStatus{svctype.StepCompleted, svctype.StepFailed, svctype.StepPending},
			[]svctype.StepStatus{doc.Steps[0].Status, doc.Steps[1].Status, doc.Steps[2].Status})
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "notes", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "kept", rows[0].Data["text"])
		failed := b.EventPayload(t, "o1", doc.ID, "workflow_run_failed")
		require.Contains(t, failed["reason"], "boom: bad data")
		require.Contains(t, failed["context"], "first")
		stepFailed := b.EventPayload(t, "o1", doc.ID, "step.failed")
		require.Equal(t, float64(1), stepFailed["step_index"])
		require.Contains(t, stepFailed["error"].(map[string]any)["message"], "boom")
	})
}

func TestUnknownStepTypeWarnsThenFails(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	w := b.Workflow(t, "o1", "unknown", `{"actions": [{"type": "send_fax", "properties": {}}]}`)
	require.Len(t, w.Warnings, 1)
	require.Contains(t, w.Warnings[0], `"send_fax"`)
	doc := b.Execute(t, "o1", w.ID, `{}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, `step type "send_fax" is neither a built-in primitive nor a registered action`)
}

func TestValidation(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	deep := `{"equal": [1, 1]}`
	for i := 0; i < 64; i++ {
		deep = `{"not": [` + deep + `]}`
	}
	big := strings.Repeat("x", 64<<10+1)
	cases := []struct {
		name, def string
		pointers  []string
	}{
		{"missing properties", `{"actions": [{"type": "a", "properties": {}}, {"type": "b", "properties": {}}, {"type": "c"}]}`, []string{"/definition/actions/2/properties"}},
		{"missing actions", `{}`, []string{"/definition/actions"}},
		{"bad type", `{"actions": [{"type": 3, "properties": []}]}`, []string{"/definition/actions/0/properties", "/definition/actions/0/type"}},
		{"unknown operator", `{"condition": {"greaterThen": [1, 2]}, "actions": []}`, []string{"/definition/condition"}},
		{"too deep", `{"condition": ` + deep + `, "actions": []}`, []string{"/definition/condition"}},
		{"template too large", `{"actions": [{"type": "custom-table", "properties": {"table": "t", "operation": "write", "fields": {"a": "` + big + `"}}}]}`, []string{"/definition/actions/0/properties/fields/a"}},
		{"custom-table props", `{"actions": [{"type": "custom-table", "properties": {"operation": "upsert", "keys": ["a"], "values": [1, 2]}}]}`, []string{"/definition/actions/0/properties/table", "/definition/actions/0/properties/values"}},
		{"bad schedule", `{"schedule": {"every": "5x"}, "actions": []}`, []string{"/definition/schedule/every"}},
		{"bad timezone", `{"schedule": {"every": "1d", "timezone": "Mars/Base"}, "actions": []}`, []string{"/definition/schedule/timezone"}},
		{"loop without steps", `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "@input.x"}}]}`, []string{"/definition/actions/0/properties/steps"}},
		{"loop nested step", `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "@input.x", "steps": [{"type": "custom-table"}]}}]}`, []string{"/definition/actions/0/properties/steps/0/properties"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Eng.CreateWorkflow(b.Ctx, "o1", engine.WorkflowInput{Name: tc.name, Definition: json.RawMessage(tc.def)})
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Pointer)
			}
			for _, want := range tc.pointers {
				require.Contains(t, got, want, "problems: %v", ve.Problems)
			}
		})
	}
	// 64 levels are allowed.
	ok := `{"equal": [1, 1]}`
	for i := 0; i < 63; i++ {
		ok = `{"not": [` + ok + `]}`
	}
	_, err := b.Eng.CreateWorkflow(b.Ctx, "o1", engine.WorkflowInput{Name: "deep-ok", Definition: json.RawMessage(`{"condition": ` + ok + `, "actions": []}`)})
	require.NoError(t, err)
	// Nothing invalid was written.
	page, err := b.Eng.ListWorkflows(b.Ctx, "o1", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
}

func TestVersionsIdempotencyCancel(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.CustomerTables(t, "o1")
		w := b.Workflow(t, "o1", "v", `{"actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "v1"}}}]}`)
		_, err := b.Eng.CreateWorkflow(b.Ctx, "o1", engine.WorkflowInput{Name: "v", Definition: json.RawMessage(`{"actions": []}`)})
		require.ErrorIs(t, err, engine.ErrConflict)

		run1, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{IdempotencyKey: "k1"})
		require.NoError(t, err)
		again, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.Equal(t, run1.ID, again.ID)
		// The key belongs to its org.
		other, err := b.Eng.Execute(b.Ctx, "o2", w.ID, nil, engine.ExecuteOptions{IdempotencyKey: "k1"})
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.Nil(t, other)

		w2, err := b.Eng.UpdateWorkflow(b.Ctx, "o1", w.ID, engine.WorkflowInput{Name: "v", Definition: json.RawMessage(`{"actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "v2"}}}]}`)})
		require.NoError(t, err)
		require.Equal(t, 2, w2.Version)
		run2, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{})
		require.NoError(t, err)
		run3, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{})
		require.NoError(t, err)
		_, err = b.Eng.CancelRun(b.Ctx, "o1", run3.ID, "not needed", engine.Actor{Type: "user", ID: "u1"})
		require.NoError(t, err)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)

		d1, err := b.Eng.RunStatus(b.Ctx, "o1", run1.ID)
		require.NoError(t, err)
		require.Equal(t, 1, d1.WorkflowVersion)
		d2, err := b.Eng.RunStatus(b.Ctx, "o1", run2.ID)
		require.NoError(t, err)
		require.Equal(t, 2, d2.WorkflowVersion)
		d3, err := b.Eng.RunStatus(b.Ctx, "o1", run3.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCancelled, d3.Status)
		require.Equal(t, map[string]any{"run_id": run3.ID, "workflow_id": w.ID, "reason": "not needed", "actor": map[string]any{"type": "user", "id": "u1"}},
			b.EventPayload(t, "o1", run3.ID, "workflow_run_cancelled"))
		_, err = b.Eng.CancelRun(b.Ctx, "o1", run3.ID, "again", engine.Actor{})
		require.ErrorIs(t, err, engine.ErrConflict)

		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "notes", nil, 0)
		require.NoError(t, err)
		texts := []string{}
		for _, r := range rows {
			texts = append(texts, r.Data["text"].(string))
		}
		require.ElementsMatch(t, []string{"v1", "v2"}, texts)

		page, err := b.Eng.ListRuns(b.Ctx, "o1", engine.RunFilter{Statuses: []svctype.RunStatus{svctype.RunCancelled}})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, run3.ID, page.Items[0].ID)
		_, err = b.Eng.ListRuns(b.Ctx, "o1", engine.RunFilter{Statuses: []svctype.RunStatus{"sleeping"}})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve)
	})
}

// TestForeachBatches: a foreach whose steps all run inside the transaction commits its
// elements in batches (events and rows of every element, once); one whose steps make
// outside calls commits each element on its own (TestForeachCheckpointsPerElement).
func TestForeachBatches(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) { testForeachBatches(t, dialect) })
	}
}

func testForeachBatches(t *testing.T, dialect string) {
	t.Parallel()
	var units atomic.Int64 // commits of the run: one per stepOnce
	b := enginetest.Setup(t, dialect, engine.Config{StepObserver: func(string, time.Duration) { units.Add(1) }})
	{
		_, err := b.Eng.CreateTable(b.Ctx, "o1", "seen", map[string]string{"i": "number"})
		require.NoError(t, err)
		var commits atomic.Int64
		b.Eng.RegisterStep("count", func(_ context.Context, call *svctype.StepCall) (any, error) {
			commits.Add(1)
			return call.Properties["i"], nil
		})
		w := b.Workflow(t, "o1", "batched", `{"actions": [
		  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.items", "result_key": "done",
		    "steps": [
		      {"type": "custom-table", "properties": {"table": "seen", "operation": "write", "fields": {"i": "@index"}}},
		      {"type": "count", "properties": {"i": "@index"}}
		    ]}}
		]}`)
		const n = 1200
		items := make([]string, n)
		for i := range items {
			items[i] = strconv.Itoa(i)
		}
		run, err := b.Eng.Execute(b.Ctx, "o1", w.ID, json.RawMessage(`{"items": [`+strings.Join(items, ",")+`]}`), engine.ExecuteOptions{})
		require.NoError(t, err)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		done := doc.Context["done"].([]any)
		require.Len(t, done, n)
		for i, v := range done {
			require.Equal(t, json.Number(fmt.Sprint(i)), v)
		}
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "seen", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, n)
		require.EqualValues(t, n, commits.Load(), "no element ran twice")
		// The loop's start, its batches (at most ForeachBatch elements each, fewer when one
		// reaches ForeachBatchTime first), its end. ForeachBatchTime is wall time (how long
		// a batch may hold the transaction), so how many elements a batch holds depends on
		// the machine: under -race at load 25 a batch held 9 (131 commits on PostgreSQL),
		// quiet 15-30. The bound below says only that elements share commits: unbatched,
		// there would be n+2; every batch holding two or more needs an element to take
		// under ForeachBatchTime/2, 25 ms.
		t.Logf("%s: %d elements in %d commits", dialect, n, units.Load())
		require.GreaterOrEqual(t, units.Load(), int64(2+n/engine.ForeachBatch))
		require.LessOrEqual(t, units.Load(), int64(2+n/2), "elements commit in batches, not one by one")
	}
}

func TestForeachCheckpointsPerElement(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		_, err := b.Eng.CreateTable(b.Ctx, "o1", "seen", map[string]string{"i": "number", "sku": "text"})
		require.NoError(t, err)
		// Stop the worker (as a drain would) after element 4 commits.
		var calls atomic.Int64
		ctx, cancel := context.WithCancel(b.Ctx)
		defer cancel()
		// An outside call (an IO half): elements that make one commit one at a time.
		b.Eng.Environment().RegisterStepKind("tick", svctype.StepKind{IO: func(_ context.Context, call *svctype.StepCall) (any, error) {
			if calls.Add(1) == 5 {
				cancel()
			}
			return map[string]any{"sku": call.Properties["sku"], "i": call.Properties["i"]}, nil
		}})
		w := b.Workflow(t, "o1", "loop", `{"actions": [
		  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.lines", "result_key": "done",
		    "steps": [
		      {"type": "custom-table", "properties": {"table": "seen", "operation": "write", "fields": {"i": "@index", "sku": "@item.sku"}}},
		      {"type": "tick", "outputKey": "t", "properties": {"sku": "{{item.sku}}", "i": "@index"}}
		    ]}},
		  {"type": "custom-table", "properties": {"table": "seen", "operation": "write", "fields": {"i": "@done.length", "sku": "total"}}}
		]}`)
		lines := []string{}
		for i := 0; i < 12; i++ {
			lines = append(lines, fmt.Sprintf(`{"sku": "s%d"}`, i))
		}
		run, err := b.Eng.Execute(b.Ctx, "o1", w.ID, json.RawMessage(`{"lines": [`+strings.Join(lines, ",")+`]}`), engine.ExecuteOptions{})
		require.NoError(t, err)
		_, err = b.Eng.Work(ctx)
		require.NoError(t, err)
		mid, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunRunning, mid.Status)
		require.Equal(t, svctype.StepProcessing, mid.Steps[0].Status)
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "seen", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 5)

		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		done := doc.Context["done"].([]any)
		require.Len(t, done, 12)
		require.Equal(t, map[string]any{"sku": "s7", "i": json.Number("7")}, done[7])
		rows, err = b.Eng.ReadRows(b.Ctx, "o1", "seen", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 13, "each element's row exactly once, plus the total")
		seen := map[json.Number]int{}
		for _, r := range rows {
			seen[r.Data["i"].(json.Number)]++
		}
		for i := 0; i < 12; i++ {
			require.Equal(t, 1, seen[json.Number(fmt.Sprint(i))], "element %d", i)
		}
		require.Equal(t, 1, seen["12"], "the total row says 12")
		loopStarted := b.EventPayload(t, "o1", run.ID, "loop.started")
		require.Equal(t, map[string]any{"run_id": run.ID, "step_id": "0", "step_index": float64(0), "mode": "foreach", "total_items": float64(12)}, loopStarted)
	})
}

func TestForeachFailures(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	w := b.Workflow(t, "o1", "loopbad", `{"actions": [
	  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.lines", "max_iterations": 3,
	    "steps": [{"type": "custom-table", "properties": {"table": "nope", "operation": "read"}}]}}]}`)
	doc := b.Execute(t, "o1", w.ID, `{"lines": "not an array"}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, "did not resolve to an array")
	require.Contains(t, b.Events(t, "o1", doc.ID), "loop.failed")

	doc = b.Execute(t, "o1", w.ID, `{"lines": [1,2,3,4]}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, "max_iterations is 3")

	doc = b.Execute(t, "o1", w.ID, `{"lines": [1]}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, `table "nope" does not exist`)
}

func TestTenancy(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.CustomerTables(t, "a")
		w := b.Workflow(t, "a", "mine", threeSteps)
		doc := b.Execute(t, "a", w.ID, `{"email":"e","name":"n","tier":"gold"}`)
		_, err := b.Eng.GetWorkflow(b.Ctx, "b", w.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.UpdateWorkflow(b.Ctx, "b", w.ID, engine.WorkflowInput{Name: "x", Definition: json.RawMessage(`{"actions":[]}`)})
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.ErrorIs(t, b.Eng.DeleteWorkflow(b.Ctx, "b", w.ID), engine.ErrNotFound)
		_, err = b.Eng.Execute(b.Ctx, "b", w.ID, nil, engine.ExecuteOptions{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.RunStatus(b.Ctx, "b", doc.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.Evidence(b.Ctx, "b", doc.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.RunEvents(b.Ctx, "b", doc.ID, svctype.ListOptions{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.CancelRun(b.Ctx, "b", doc.ID, "", engine.Actor{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.ReadRows(b.Ctx, "b", "customers", nil, 0)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.UpdateRows(b.Ctx, "b", "customers", nil, map[string]any{"tier": "x"}, false)
		require.ErrorIs(t, err, engine.ErrNotFound)
		// b's step writing to a table of the same name sees only its own.
		wb := b.Workflow(t, "b", "mine", threeSteps)
		docB := b.Execute(t, "b", wb.ID, `{"email":"e","name":"n","tier":"gold"}`)
		require.Equal(t, svctype.RunFailed, docB.Status)
		require.Contains(t, docB.Reason, `table "customers" does not exist`)
		runs, err := b.Eng.ListRuns(b.Ctx, "b", engine.RunFilter{})
		require.NoError(t, err)
		require.Len(t, runs.Items, 1)
		require.Equal(t, docB.ID, runs.Items[0].ID)
	})
}

func TestRunGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		b.CustomerTables(t, "o1")
		w := b.Workflow(t, "o1", "doomed", `{"actions": [{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "x"}}}]}`)
		run, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{})
		require.NoError(t, err)
		// Workers that take the job and die before committing: each claim is an attempt.
		for i := 0; i < engine.MaxAttempts; i++ {
			jobs, err := b.St.ClaimJobs(b.Ctx, 1, time.Millisecond)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			b.Clock.Advance(2 * time.Millisecond) // the lease lapses
		}
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, fmt.Sprintf("gave up after %d attempts", engine.MaxAttempts))
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "notes", nil, 0)
		require.NoError(t, err)
		require.Empty(t, rows, "the step never ran")
		require.Zero(t, store.CountAllJobs(t, b.St))
	})
}

// A run's end events carry small outputs whole and large ones as a reference to the route
// that serves them, so that ending a run does not copy a large result into the outbox.
func TestEndEventsReferenceLargeOutputs(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		big := make([]any, engine.EventValueNodes+1)
		for i := range big {
			big[i] = float64(i)
		}
		b.Eng.RegisterStep("produce", func(_ context.Context, call *svctype.StepCall) (any, error) {
			if call.Properties["big"] == true {
				return big, nil
			}
			return map[string]any{"ok": true}, nil
		})
		w := b.Workflow(t, "acme", "outputs", `{"actions": [
			{"type": "produce", "outputKey": "large", "properties": {"big": true}},
			{"type": "produce", "outputKey": "small", "properties": {"big": false}}]}`)
		doc := b.Execute(t, "acme", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, doc.Status)
		outputs := b.EventPayload(t, "acme", doc.ID, engine.EventRunCompleted)["result"].(map[string]any)["outputs"].(map[string]any)
		require.Equal(t, map[string]any{"ok": true}, outputs["small"], "a small output is carried whole")
		ref := outputs["large"].(map[string]any)
		require.Equal(t, "/runs/"+doc.ID+"/context/large", ref["result_reference"])
		require.Equal(t, true, ref["truncated"])
		require.EqualValues(t, len(big), ref["length"])
		// The reference is where the whole value is.
		page, err := b.Eng.RunContext(b.Ctx, "acme", doc.ID, "large", len(big)-1, 10)
		require.NoError(t, err)
		require.EqualValues(t, len(big), page.Total)
	})
}

// A run that keeps making progress is never given up on, however often it is handed back
// to the queue: here every foreach element ends a slice, so the run is claimed 60 times.
func TestProgressingRunNeverGivesUp(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		eng, err := engine.New(engine.Config{Store: b.St, Slice: time.Nanosecond})
		require.NoError(t, err)
		b.Eng = eng
		b.CustomerTables(t, "o1")
		w := b.Workflow(t, "o1", "long", `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "@input.items",
			"steps": [{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{item}}"}}}]}}]}`)
		items := make([]int, 2*engine.MaxAttempts+10)
		in, err := json.Marshal(map[string]any{"items": items})
		require.NoError(t, err)
		doc := b.Execute(t, "o1", w.ID, string(in))
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "notes", nil, 10_000)
		require.NoError(t, err)
		require.Len(t, rows, len(items), "each element once")
	})
}

// Leases are set and compared on the store's clock: an engine whose injected clock is an
// hour behind still holds its run's lease between steps, so no other claimer gets the job.
func TestLeaseFollowsTheStoreClock(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		var stolen []int64
		eng, err := engine.New(engine.Config{
			Store: b.St, Lease: 5 * time.Second,
			Now: func() time.Time { return time.Now().Add(-time.Hour) },
			StepObserver: func(string, time.Duration) {
				// Between two steps of a run that is still running: its job must be leased.
				jobs, err := b.St.ClaimJobs(context.Background(), 10, time.Minute)
				require.NoError(t, err)
				for _, j := range jobs {
					if j.Kind == svctype.JobRunStep { // not the upsert's index build (PostgreSQL)
						stolen = append(stolen, j.ID)
					}
				}
			},
		})
		require.NoError(t, err)
		b.Eng = eng
		b.CustomerTables(t, "o1")
		w := b.Workflow(t, "o1", "clock", threeSteps)
		doc := b.Execute(t, "o1", w.ID, `{"email": "a@x", "name": "A", "tier": "gold"}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Empty(t, stolen, "another claimer took the job of a run in progress")
	})
}

var (
	newKeyring  = enginetest.NewKeyring
	generateKey = enginetest.GenerateKey
)

// TestReadsOutsideTheWriter: a top-level read-only step runs before its transaction, so it
// does not hold the SQLite writer while it reads: here the read waits for an Execute,
// which needs the writer, to finish. Were the read inside its transaction, the two would
// wait for each other until the test's timeout. Its output is committed as usual.
func TestReadsOutsideTheWriter(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		var other *svctype.Workflow
		var reads atomic.Int64
		b.Eng.Environment().RegisterStepKind("peek", svctype.StepKind{
			ReadOnly: func(map[string]any) bool { return true },
			Run: func(ctx context.Context, call *svctype.StepCall) (any, error) {
				if reads.Add(1) == 1 {
					// Another run started meanwhile: its Execute commits on the writer.
					done := make(chan error, 1)
					go func() {
						_, err := b.Eng.Execute(context.WithoutCancel(ctx), "o1", other.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
						done <- err
					}()
					select {
					case err := <-done:
						if err != nil {
							return nil, err
						}
					case <-time.After(10 * time.Second):
						return nil, errors.New("an Execute waited 10 s for the writer this read holds")
					}
				}
				rows, err := call.Tables.ReadRows(ctx, call.OrgID, "seen", nil, 0)
				return len(rows), err
			},
		})
		_, err := b.Eng.CreateTable(b.Ctx, "o1", "seen", map[string]string{"i": "number"})
		require.NoError(t, err)
		other = b.Workflow(t, "o1", "other", `{"actions": [{"type": "custom-table", "properties": {"table": "seen", "operation": "write", "fields": {"i": 1}}}]}`)
		w := b.Workflow(t, "o1", "peek", `{"actions": [{"type": "peek", "outputKey": "n", "properties": {}}]}`)
		doc := b.Execute(t, "o1", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.EqualValues(t, 1, reads.Load(), "read once, ahead of the transaction")
		require.Equal(t, json.Number("0"), doc.Context["n"])
	})
}
