package uploads_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A foreach over doc:<id> reads the version it started with: a version uploaded while it
// runs (here by the outside call of element 2, between the loop's slices) is not mixed in,
// the loop runs exactly its announced total, and the evidence names the version it read.
func TestForeachReadsOneDocumentVersion(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		doc := b.Upload(t, "acme", "v.csv", "text/csv", "id\nA1\nA2\nA3\nA4\nA5\nA6\n")
		var once sync.Once
		b.Eng.Environment().RegisterStepKind("outside", svctype.StepKind{IO: func(_ context.Context, call *svctype.StepCall) (any, error) {
			if n, _ := svctype.Float(call.Properties["n"]); n == 2 {
				once.Do(func() { b.AddVersion(t, "acme", doc.ID, "text/csv", []byte("id\nB1\nB2\nB3\nB4\nB5\nB6\nB7\nB8\n")) })
			}
			return map[string]any{}, nil
		}})
		b.Eng.RegisterStep("echo", func(_ context.Context, call *svctype.StepCall) (any, error) { return call.Properties["id"], nil })
		w := b.Workflow(t, "acme", "pinned", `{"actions": [{"type": "loop", "properties": {"mode": "foreach",
		  "items": "doc:`+doc.ID+`", "result_key": "ids", "steps": [
		    {"type": "outside", "properties": {"n": "@index"}},
		    {"type": "echo", "properties": {"id": "@item.id"}}]}}]}`)
		run := b.Execute(t, "acme", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, run.Status, run.Reason)
		require.Equal(t, []any{"A1", "A2", "A3", "A4", "A5", "A6"}, run.Context["ids"], "version 1 throughout")
		started := b.EventPayload(t, "acme", run.ID, "loop.started")
		require.EqualValues(t, 6, started["total_items"])

		ev, err := b.Eng.Evidence(b.Ctx, "acme", run.ID)
		require.NoError(t, err)
		var summary map[string]any
		require.NoError(t, json.Unmarshal(ev.Steps[0].InputSummary, &summary))
		require.Equal(t, "doc:"+doc.ID+"@1", summary["items_read"])

		// A run after the upload reads version 2.
		run = b.Execute(t, "acme", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, run.Status, run.Reason)
		require.Len(t, run.Context["ids"], 8)
	})
}
