package worker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

// largePairs is how many matched pairs the first step of BenchmarkLargeContext stores.
const largePairs = 50_000

// BenchmarkLargeContext measures what a large context costs the steps after the one that
// wrote it: a 10-step run whose first step stores 50,000 matcher-shaped pairs (about 16
// MB of JSON) under `matched`, then nine custom-table writes that read one field of the
// input. The later steps must cost what they cost in a run with a small context, not in
// proportion to it. Per-step figures come from the engine's StepObserver.
func BenchmarkLargeContext(b *testing.B) {
	var mu sync.Mutex
	var first, later, last durations
	n := 0
	eng := newEngine(b, engine.Config{
		Store: openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db")),
		StepObserver: func(_ string, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			switch n % 10 {
			case 0:
				first.observe("", d)
			case 9:
				last.observe("", d)
			default:
				later.observe("", d)
			}
			n++
		},
	})
	pairs := make([]any, largePairs)
	for i := range pairs {
		rec := func(side string) map[string]any {
			return map[string]any{"id": fmt.Sprintf("%s-%06d", side, i), "amount": float64(i%9973) + 0.25,
				"date": "2026-11-23", "description": fmt.Sprintf("invoice %d from ACME Corporation", i)}
		}
		pairs[i] = map[string]any{"left": rec("L"), "right": rec("R"), "score": 100}
	}
	eng.RegisterStep("bigmatch", func(context.Context, *svctype.StepCall) (any, error) { return pairs, nil })
	_, err := eng.CreateTable(context.Background(), org, "ledger", map[string]string{"run": "text", "text": "text"})
	require.NoError(b, err)
	def := `{"actions": [{"type": "bigmatch", "outputKey": "matched", "properties": {}}`
	for i := 1; i < 10; i++ {
		def += fmt.Sprintf(`, {"type": "custom-table", "outputKey": "note%d", "properties": {"table": "ledger", "operation": "write",
			"fields": {"run": "{{__run_id}}", "text": "step %d of {{input.id}}"}}}`, i, i)
	}
	wfID := createWorkflow(b, eng, "large", def+"]}")
	stop := startWorker(b, eng, worker.Options{Concurrency: 1})
	b.ResetTimer()
	for i := range b.N {
		execute(b, eng, wfID, []byte(fmt.Sprintf(`{"id": "r%d"}`, i)))
		waitDrained(b, eng)
	}
	b.StopTimer()
	require.NoError(b, stop())
	require.Equal(b, 9*b.N, countRows(b, eng, "ledger"))
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(first.percentile(50)), "first-step-ms")
	b.ReportMetric(ms(later.percentile(50)), "later-step-p50-ms")
	b.ReportMetric(ms(later.percentile(100)), "later-step-max-ms")
	b.ReportMetric(ms(last.percentile(50)), "last-step-ms")
	b.Logf("%d runs: first step (stores %d pairs) %v; steps 2-9 p50 %v, max %v; last step (ends the run) %v",
		b.N, largePairs, first.percentile(50), later.percentile(50), later.percentile(100), last.percentile(50))
}
