package core_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A foreach element that fails keeps the elements before it: batched (one table write an
// element) or not (a second step makes every element its own unit), elements 1 and 2 of 4
// are written once each, element 3 fails the run, and the failed run's evidence shows the
// writes that were committed.
func TestFailingForeachElementKeepsTheOnesBefore(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		_, err := b.Eng.CreateTable(b.Ctx, "acme", "notes", map[string]string{"v": "text", "run": "text"})
		require.NoError(t, err)
		b.Eng.Environment().RegisterStepKind("outside", svctype.StepKind{IO: func(context.Context, *svctype.StepCall) (any, error) {
			return map[string]any{}, nil
		}})
		const write = `{"type": "custom-table", "properties": {"table": "@item.t", "operation": "write", "fields": {"v": "@item.v", "run": "{{__run_id}}"}}}`
		for name, steps := range map[string]string{"batched": write, "unbatched": `{"type": "outside", "properties": {}}, ` + write} {
			w := b.Workflow(t, "acme", name, `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "@input.items",
			  "result_key": "out", "steps": [`+steps+`]}}]}`)
			run := b.Execute(t, "acme", w.ID, `{"items": [{"t": "notes", "v": "1"}, {"t": "notes", "v": "2"}, {"t": "nope", "v": "3"}, {"t": "notes", "v": "4"}]}`)
			require.Equal(t, svctype.RunFailed, run.Status, name)
			require.Contains(t, run.Reason, "element 2", name)
			rows, err := b.Eng.ReadRows(b.Ctx, "acme", "notes", map[string]any{"run": run.ID}, 0)
			require.NoError(t, err)
			var got []any
			for _, r := range rows {
				got = append(got, r.Data["v"])
			}
			require.ElementsMatch(t, []any{"1", "2"}, got, "%s: the elements before the failure, once each", name)

			ev, err := b.Eng.Evidence(b.Ctx, "acme", run.ID)
			require.NoError(t, err)
			writes := 0
			for _, e := range ev.Effects {
				if e.Effect.Kind != "call" {
					writes++
				}
			}
			require.Equal(t, 2, writes, "%s: the failed run's evidence shows the committed writes: %+v", name, ev.Effects)
		}
	})
}
