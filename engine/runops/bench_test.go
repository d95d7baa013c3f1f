package runops_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// BenchmarkRetryPlanAndStart measures what a retry costs before its first step runs: the
// plan, and the transaction that starts the new run with the failed run's committed work,
// for a foreach of 1,000 elements that failed at its last (999 elements and their rows'
// outputs copied). One operation is one plan and one retry.
func BenchmarkRetryPlanAndStart(b *testing.B) {
	for _, d := range enginetest.Dialects {
		b.Run(d, func(b *testing.B) { bench(b, d) })
	}
}

func bench(b *testing.B, dialect string) {
	if dialect == "postgres" && os.Getenv("SVC_TEST_POSTGRES_DSN") == "" {
		b.Skip("SVC_TEST_POSTGRES_DSN is not set")
	}
	eng, err := engine.New(engine.Config{Store: store.OpenTest(b, dialect), Logger: testlog.Quiet()})
	require.NoError(b, err)
	tb := struct {
		Eng *engine.Engine
		Ctx context.Context
	}{eng, context.Background()}
	const org = "org-a"
	_, err = tb.Eng.CreateTable(tb.Ctx, org, "notes", map[string]string{"text": "text"})
	require.NoError(b, err)
	w, err := tb.Eng.CreateWorkflow(tb.Ctx, org, engine.WorkflowInput{Name: "lines", Definition: json.RawMessage(`{"actions": [
		{"type": "loop", "properties": {"mode": "foreach", "items": "@input.lines", "result_key": "each", "steps": [
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "@item"}}},
			{"type": "custom-table", "properties": {"table": "@item", "operation": "read"}}]}}]}`)})
	require.NoError(b, err)
	lines := make([]string, 1000)
	for i := range lines {
		lines[i] = `"notes"`
	}
	lines[999] = `"missing"`
	input := json.RawMessage(`{"lines": [` + strings.Join(lines, ",") + `]}`)
	failed := make([]string, b.N)
	for i := range failed {
		run, err := tb.Eng.Execute(tb.Ctx, org, w.ID, input, engine.ExecuteOptions{})
		require.NoError(b, err)
		_, err = tb.Eng.Work(tb.Ctx)
		require.NoError(b, err)
		doc, err := tb.Eng.RunStatus(tb.Ctx, org, run.ID)
		require.NoError(b, err)
		require.Equal(b, svctype.RunFailed, doc.Status, doc.Reason)
		failed[i] = run.ID
	}
	var planning, starting time.Duration
	b.ResetTimer()
	for i := range b.N {
		began := time.Now()
		plan, err := tb.Eng.RetryPlan(tb.Ctx, org, failed[i])
		require.NoError(b, err)
		require.Equal(b, 999, *plan.FromElement)
		planned := time.Now()
		_, err = tb.Eng.RetryRun(tb.Ctx, org, failed[i], "bench", engine.Actor{})
		require.NoError(b, err)
		planning, starting = planning+planned.Sub(began), starting+time.Since(planned)
	}
	b.ReportMetric(float64(planning.Microseconds())/float64(b.N)/1000, "plan-ms")
	b.ReportMetric(float64(starting.Microseconds())/float64(b.N)/1000, "retry-ms")
}
