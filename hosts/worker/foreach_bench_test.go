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

// BenchmarkForeachWrites: one run whose foreach writes 50,000 custom-table rows, through
// the real worker, on a file SQLite and on PostgreSQL: seconds from execute to the run's
// end, and rows checked after. op write inserts a row per element; op upsert upserts by key
// (each key once), so the key's index is kept as well. `make bench-foreach` runs it.
func BenchmarkForeachWrites(b *testing.B) {
	for _, dialect := range dialects {
		for _, op := range []string{"write", "upsert"} {
			b.Run(dialect+"/"+op, func(b *testing.B) { benchmarkForeachWrites(b, dialect, op) })
		}
	}
}

func benchmarkForeachWrites(b *testing.B, dialect, op string) {
	{
		{
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
			      {"type": "custom-table", "properties": {"table": "lines", "operation": "`+op+`", "keys": ["sku"], "values": ["{{item}}"], "fields": {"i": "@index"}}}
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
			if op == "upsert" {
				require.Equal(b, foreachElements, countRows(b, eng, "lines"), "one row per sku, however many runs")
			} else {
				require.Equal(b, foreachElements*b.N, countRows(b, eng, "lines"), "one row per element")
			}
			b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/run")
			b.ReportMetric(float64(foreachElements*b.N)/elapsed.Seconds(), "writes/s")
		}
	}
}
