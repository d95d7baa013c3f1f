package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// TestMatcherOnALargeInputReadsItsBytes: a matcher whose legs are plain paths into a large
// input reads the records' bytes (the input is never decoded for it) and stores pairs
// written from them; a later step reads into those pairs as into decoded ones. Everything
// it stores and emits equals what the decoded path (legs reached through an index, which
// takes the decoded input) stores and emits for the same records.
func TestMatcherOnALargeInputReadsItsBytes(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		peekStep := func(_ context.Context, call *svctype.StepCall) (any, error) {
			out := map[string]any{"n": call.Properties["n"], "first": call.Properties["first"], "left": call.Properties["left"]}
			if whole, ok := call.Properties["whole"].(map[string]any); ok {
				// A step reading an output map whole sees decoded values in it.
				out["whole_matched_type"] = fmt.Sprintf("%T", whole["matched"])
			}
			return out, nil
		}
		b.Eng.RegisterStep("peek", peekStep)
		var bank, erp []string
		for i := range 2500 {
			amount := fmt.Sprintf("%d.%02d", 100+i, i%100)
			if i%3 == 0 {
				amount = `"` + amount + `"` // a decimal as CSV gives it
			}
			ref := fmt.Sprintf("INV-%04d", i)
			if i%50 == 0 {
				ref = fmt.Sprintf("caf\\u00e9-%d", i) // an escape in the key
			}
			bank = append(bank, fmt.Sprintf(`{"ref": "%s", "amount": %s, "date": "2026-03-%02d", "memo": "<b>&\u2028</b>"}`, ref, amount, 1+i%28))
			if i%7 != 0 { // some bank lines have no ERP line
				erp = append(erp, fmt.Sprintf(`{"ref": "%s", "amount": %d.%02d, "date": "2026-03-%02d", "n": null}`, strings.ReplaceAll(ref, `\\u00e9`, "é"), 100+i, (i+1)%100, 1+(i+1)%28))
			}
		}
		legs := `[` + strings.Join(bank, ",") + `]`
		erps := `[` + strings.Join(erp, ",") + `]`
		input := `{"bank": ` + legs + `, "erp": ` + erps + `, "legs": [` + legs + `, ` + erps + `]}`
		require.Greater(t, len(input), 256<<10, "a large input")

		steps := func(left, right string) string {
			return `{"actions": [
			  {"type": "matcher", "properties": {"left": "` + left + `", "right": "` + right + `",
			    "matchOn": ["ref"], "tolerance": 0.05, "dateWindowDays": 3}},
			  {"type": "peek", "outputKey": "peek", "properties": {"n": "@matched.length", "first": "@matched.0.left.ref", "left": "@unmatchedLeft.1"}}
			]}`
		}
		onBytes := b.Workflow(t, "o1", "on-bytes", steps("@input.bank", "@input.erp"))
		decoded := b.Workflow(t, "o1", "decoded", steps("@input.legs.0", "@input.legs.1"))
		a := b.Execute(t, "o1", onBytes.ID, input)
		d := b.Execute(t, "o1", decoded.ID, input)
		require.Equal(t, svctype.RunCompleted, a.Status, a.Reason)
		require.Equal(t, svctype.RunCompleted, d.Status, d.Reason)
		// Another engine on the same store works a run it did not start: it loads the
		// large input from the database, as bytes, and does the same.
		started, err := b.Eng.Execute(b.Ctx, "o1", onBytes.ID, json.RawMessage(input), engine.ExecuteOptions{})
		require.NoError(t, err)
		other, err := engine.New(engine.Config{Store: b.St, Logger: testlog.Quiet()})
		require.NoError(t, err)
		other.RegisterStep("peek", peekStep)
		_, err = other.Work(b.Ctx)
		require.NoError(t, err)
		loaded, err := b.Eng.RunStatus(b.Ctx, "o1", started.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, loaded.Status, loaded.Reason)

		// The two paths were the two paths: the step's input summary shows bytes or elements.
		evA, err := b.Eng.Evidence(b.Ctx, "o1", a.ID)
		require.NoError(t, err)
		evD, err := b.Eng.Evidence(b.Ctx, "o1", d.ID)
		require.NoError(t, err)
		require.Contains(t, string(evA.Steps[0].InputSummary), `"bytes"`, "the legs were given as bytes")
		require.Contains(t, string(evD.Steps[0].InputSummary), `"length"`, "the legs were decoded")

		b.SameArrays(t, "o1", a.ID, d.ID, "matched", "unmatchedLeft", "unmatchedRight")
		for _, key := range []string{"matched", "peek"} {
			cl, err := b.St.GetContext(b.Ctx, "o1", loaded.ID, key)
			require.NoError(t, err)
			cd, err := b.St.GetContext(b.Ctx, "o1", d.ID, key)
			require.NoError(t, err)
			require.JSONEq(t, string(cd[key]), string(cl[key]), "%s of the run another engine loaded", key)
		}
		peekA, err := b.St.GetContext(b.Ctx, "o1", a.ID, "peek")
		require.NoError(t, err)
		peekD, err := b.St.GetContext(b.Ctx, "o1", d.ID, "peek")
		require.NoError(t, err)
		require.JSONEq(t, string(peekD["peek"]), string(peekA["peek"]), "a later step reads the same into the pairs")
		var peek map[string]any
		require.NoError(t, json.Unmarshal(peekA["peek"], &peek))
		require.Greater(t, peek["n"], 2000.0)
		require.Equal(t, "INV-0001", peek["first"])

		// The whole output under an outputKey, read into by a later step; and a matcher in
		// a foreach element (it reads decoded legs) whose pairs the element's next step reads.
		keyed := b.Workflow(t, "o1", "keyed", `{"actions": [
		  {"type": "matcher", "outputKey": "result", "properties": {"left": "@input.bank", "right": "@input.erp", "matchOn": ["ref"], "tolerance": 0.05, "dateWindowDays": 3}},
		  {"type": "peek", "outputKey": "peek", "properties": {"n": "@result.matched.length", "first": "@result.matched.0.left.ref", "whole": "@result"}}
		]}`)
		k := b.Execute(t, "o1", keyed.ID, input)
		require.Equal(t, svctype.RunCompleted, k.Status, k.Reason)
		kp, err := b.St.GetContext(b.Ctx, "o1", k.ID, "peek")
		require.NoError(t, err)
		require.Contains(t, string(kp["peek"]), `"whole_matched_type":"[]interface {}"`)
		require.NotContains(t, fmt.Sprint(b.EventPayload(t, "o1", k.ID, "workflow_run_completed")), "INV-0002",
			"an output map holding the pairs is referred to, not copied into the event")
		looped := b.Workflow(t, "o1", "looped", `{"actions": [
		  {"type": "loop", "outputKey": "peek", "properties": {"mode": "foreach", "items": ["once"], "steps": [
		    {"type": "matcher", "properties": {"left": "@input.bank", "right": "@input.erp", "matchOn": ["ref"], "tolerance": 0.05, "dateWindowDays": 3}},
		    {"type": "peek", "outputKey": "peek", "properties": {"n": "@matched.length", "first": "@matched.0.left.ref"}}
		  ]}}
		]}`)
		lp := b.Execute(t, "o1", looped.ID, input)
		require.Equal(t, svctype.RunCompleted, lp.Status, lp.Reason)
		for _, run := range []string{k.ID, lp.ID} {
			raw, err := b.St.GetContext(b.Ctx, "o1", run, "peek")
			require.NoError(t, err)
			var v any
			require.NoError(t, json.Unmarshal(raw["peek"], &v))
			got := findWith(v, "n") // a foreach's result holds its elements' outputs
			require.NotNil(t, got, "run %s: peek %s", run, raw["peek"])
			require.Equal(t, peek["n"], got["n"], "run %s", run)
			require.Equal(t, "INV-0001", got["first"], "run %s", run)
		}

		// A leg that is not an array of objects fails as on the decoded path.
		bad := `{"bank": [` + strings.Join(bank, ",") + `, "oops"], "erp": ` + erps + `}`
		f := b.Execute(t, "o1", onBytes.ID, bad)
		require.Equal(t, svctype.RunFailed, f.Status)
		require.Contains(t, f.Reason, fmt.Sprintf("left[%d] is not an object (got string)", len(bank)))

		doneA := b.EventPayload(t, "o1", a.ID, "matcher.completed")
		doneD := b.EventPayload(t, "o1", d.ID, "matcher.completed")
		delete(doneA, "run_id")
		delete(doneD, "run_id")
		require.Equal(t, doneD, doneA)
		completed := b.EventPayload(t, "o1", a.ID, "workflow_run_completed")
		require.NotContains(t, fmt.Sprint(completed), "INV-0002", "the pairs are referred to, not copied into the event")
		// The event is the same on both paths (but for the run's own id).
		completedD := b.EventPayload(t, "o1", d.ID, "workflow_run_completed")
		ja, err := json.Marshal(completed)
		require.NoError(t, err)
		jd, err := json.Marshal(completedD)
		require.NoError(t, err)
		norm := func(j []byte, run, wf string) string {
			return strings.ReplaceAll(strings.ReplaceAll(string(j), run, "RUN"), wf, "WF")
		}
		require.JSONEq(t, norm(jd, d.ID, decoded.ID), norm(ja, a.ID, onBytes.ID))
	})
}

// findWith is the first object in v (depth first) that has the key.
func findWith(v any, key string) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[key]; ok {
			return x
		}
		for _, el := range x {
			if m := findWith(el, key); m != nil {
				return m
			}
		}
	case []any:
		for _, el := range x {
			if m := findWith(el, key); m != nil {
				return m
			}
		}
	}
	return nil
}
