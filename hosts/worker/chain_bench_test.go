package worker_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine"
)

// writesFlow is ledgerFlow without its read: three custom-table writes, each quick, so
// that they commit in one transaction (engine.Config.ChainTime).
const writesFlow = `{"actions": [
  {"type": "custom-table", "outputKey": "account",
   "properties": {"table": "accounts", "operation": "upsert", "keys": ["id"], "values": ["@input.id"],
                  "fields": {"amount": "@input.amount"}}},
  {"type": "custom-table", "outputKey": "note",
   "properties": {"table": "ledger", "operation": "write",
                  "fields": {"run": "{{__run_id}}", "text": "{{input.id}} moved {{input.amount}}"}}},
  {"type": "custom-table",
   "properties": {"table": "ledger", "operation": "write",
                  "fields": {"run": "audit", "text": "{{account.written}} account written"}}}
]}`

// BenchmarkChainedSteps measures runs/s of writesFlow through a worker of concurrency 4
// in this process, with quick steps committing together (chained) and each in its own
// transaction (ChainTime < 0), on SQLite and PostgreSQL (make bench-chain).
func BenchmarkChainedSteps(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		for _, chained := range []bool{true, false} {
			name := map[bool]string{true: "chained", false: "unchained"}[chained]
			b.Run(dialect+"/"+name, func(b *testing.B) {
				dsn := "sqlite:" + filepath.Join(b.TempDir(), "bench.db")
				if dialect == "postgres" {
					dsn = sharedDSN(b, "postgres")
				}
				cfg := engine.Config{Store: openStore(b, dsn)}
				if !chained {
					cfg.ChainTime = -1
				}
				eng := newEngine(b, cfg)
				ledgerSetup(b, eng)
				wfID := createWorkflow(b, eng, "writes", writesFlow)
				elapsed := timeRuns(b, eng, wfID)
				if n := countRows(b, eng, "ledger"); n != 2*b.N {
					b.Fatalf("%d ledger rows, want %d", n, 2*b.N)
				}
				rps := float64(b.N) / elapsed.Seconds()
				b.ReportMetric(rps, "runs/s")
				b.Logf("%s %s: %d runs in %s = %.0f runs/s", dialect, name, b.N, elapsed.Round(time.Millisecond), rps)
			})
		}
	}
}
