package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/steps"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestReadOnlyStepRunsBeforeItsTransaction: a ReadOnly kind (the matcher is one) runs with
// no transaction open, so on SQLite another write goes through while it works; what it
// emitted is committed with its outputs, between its step.started and step.completed, in
// time order.
func TestReadOnlyStepRunsBeforeItsTransaction(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	matcher, ok := b.Eng.Environment().Lookup(steps.Matcher)
	require.True(t, ok)
	require.NotNil(t, matcher.ReadOnly, "the matcher runs ahead of its transaction")
	require.True(t, matcher.ReadOnly(nil))

	var wroteMeanwhile error
	b.Eng.Environment().RegisterStepKind("probe_read", svctype.StepKind{
		ReadOnly: func(map[string]any) bool { return true },
		Run: func(ctx context.Context, call *svctype.StepCall) (any, error) {
			// SQLite has one writer: were this step inside its transaction, this write
			// would wait for it.
			done := make(chan error, 1)
			go func() {
				_, err := b.Eng.CreateWorkflow(ctx, "o1", engine.WorkflowInput{Name: "written-meanwhile", Definition: json.RawMessage(`{"actions": []}`)})
				done <- err
			}()
			select {
			case wroteMeanwhile = <-done:
			case <-time.After(5 * time.Second):
				wroteMeanwhile = errors.New("a write waited 5 s for the step: the step holds the writer")
			}
			call.Emit(steps.EventMatcherCompleted, map[string]any{"schema_version": steps.MatcherSchemaVersion, "matched_count": 1,
				"unmatched_left_count": 0, "unmatched_right_count": 0, "policy": map[string]any{}})
			return svctype.ContextOutputs{"pairs": []any{map[string]any{"a": 1.0}}, "rest": []any{}}, nil
		},
	})
	w := b.Workflow(t, "o1", "ahead", `{"actions": [{"type": "probe_read", "properties": {}}]}`)
	doc := b.Execute(t, "o1", w.ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.NoError(t, wroteMeanwhile, "the step ran while the SQLite writer was free")
	require.Equal(t, []any{map[string]any{"a": json.Number("1")}}, doc.Context["pairs"])
	require.Equal(t, []any{}, doc.Context["rest"])

	page, err := b.Eng.RunEvents(b.Ctx, "o1", doc.ID, svctype.ListOptions{Limit: 100})
	require.NoError(t, err)
	var names []string
	var last time.Time
	for _, e := range page.Items {
		names = append(names, e.Event)
		require.False(t, e.Timestamp.Before(last), "%s at %s is before the event ahead of it (%s)", e.Event, e.Timestamp, last)
		last = e.Timestamp
	}
	require.Subset(t, names, []string{"step.started", steps.EventMatcherCompleted, "step.completed"})
	pos := map[string]int{}
	for i, n := range names {
		if _, seen := pos[n]; !seen {
			pos[n] = i
		}
	}
	require.Less(t, pos["step.started"], pos[steps.EventMatcherCompleted])
	require.Less(t, pos[steps.EventMatcherCompleted], pos["step.completed"])
}
