package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

// foreachElements is how many table writes BenchmarkForeachWrites' run makes.
const foreachElements = 50_000

// BenchmarkForeachWrites: one run whose foreach writes 50,000 custom-table rows (an insert
// and an upsert by key each element, so the key index is kept too), through the real worker,
// on a file SQLite and on PostgreSQL: seconds from execute to the run's end, and rows
// checked after. `make bench-foreach` runs it.
func BenchmarkForeachWrites(b *testing.B) {
	for _, dialect := range dialects {
		b.Run(dialect, func(b *testing.B) {
			if dialect == "postgres" && os.Getenv(store.PostgresDSNEnv) == "" {
				b.Skip(store.PostgresDSNEnv + " is unset")
			}
			dsn := "sqlite:" + filepath.Join(b.TempDir(), "bench.db")
			if dialect == "postgres" {
				dsn = sharedDSN(b, dialect)
			}
			eng := newEngine(b, engine.Config{Store: openStore(b, dsn)})
			ctx := context.Background()
			_, err := eng.CreateTable(ctx, org, "lines", map[string]string{"i": "number", "sku": "text"})
			require.NoError(b, err)
			wfID := createWorkflow(b, eng, "foreach", `{"actions": [
			  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.items", "result_key": "done", "max_iterations": 100000,
			    "steps": [
			      {"type": "custom-table", "properties": {"table": "lines", "operation": "upsert", "keys": ["sku"], "values": ["{{item}}"], "fields": {"i": "@index"}}}
			    ]}}
			]}`)
			items := make([]string, foreachElements)
			for i := range items {
				items[i] = `"sku-` + strconv.Itoa(i) + `"`
			}
			input := json.RawMessage(`{"items": [` + strings.Join(items, ",") + `]}`)
			stop := startWorker(b, eng, worker.Options{Concurrency: 4, Poll: 10 * time.Millisecond})
			b.ResetTimer()
			var elapsed time.Duration
			for range b.N {
				start := time.Now()
				runID := execute(b, eng, wfID, input)
				waitFor(b, 10*time.Minute, 250*time.Millisecond, "the foreach to end", func() bool {
					run, err := eng.GetRun(ctx, org, runID)
					require.NoError(b, err)
					return run.Status != svctype.RunRunning
				})
				elapsed += time.Since(start)
				run, err := eng.GetRun(ctx, org, runID)
				require.NoError(b, err)
				require.Equal(b, svctype.RunCompleted, run.Status, run.Reason)
			}
			b.StopTimer()
			require.NoError(b, stop())
			require.Equal(b, foreachElements, countRows(b, eng, "lines"), "one row per sku, however many runs")
			b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/run")
			b.ReportMetric(float64(foreachElements*b.N)/elapsed.Seconds(), "writes/s")
		})
	}
}
