package worker_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/testclock"
)

// BenchmarkPauseExpiry is issue 9's durability target: 10,000 runs paused at a PbotForm
// (ttl_seconds one hour) on SQLite hold no goroutine; then all their expiries are made due
// at once (the clock of the engine and its store moved on by the hour) and the worker (4 slots) closes every
// pause (form_expired) and finishes every run. Target: within the minute. Run with
// -benchtime 1x (make bench-pauses).
func BenchmarkPauseExpiry(b *testing.B) {
	const pauses = 10_000
	b.Run("sqlite", func(b *testing.B) {
		clk := testclock.Running()
		st := openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"), store.WithNow(clk.Now))
		eng := newEngine(b, engine.Config{Store: st, Now: clk.Now})
		wf := createWorkflow(b, eng, "wait-for-answer", `{"actions": [
			{"type": "PbotForm", "properties": {"expected_keys": ["answer"], "ttl_seconds": 3600}}]}`)
		stop := startWorker(b, eng, worker.Options{Concurrency: 4})
		began := time.Now()
		for range pauses {
			execute(b, eng, wf, json.RawMessage(`{}`))
		}
		ctx := context.Background()
		// Every run paused: none running, and one job (its expiry) per pause.
		paused := func() int {
			page, err := eng.ListRuns(ctx, org, engine.RunFilter{Statuses: []svctype.RunStatus{svctype.RunRunning}, ListOptions: svctype.ListOptions{Limit: 1}})
			require.NoError(b, err)
			if len(page.Items) > 0 {
				return 0
			}
			return countJobs(b, eng)
		}
		waitFor(b, 5*time.Minute, 50*time.Millisecond, "every run paused", func() bool { return paused() == pauses })
		opened := time.Since(began)
		require.NoError(b, stop())

		runtime.GC()
		idle := runtime.NumGoroutine()
		b.ReportMetric(float64(idle), "goroutines-with-10k-pauses")

		clk.Advance(time.Hour)
		b.ResetTimer()
		expiryBegan := time.Now()
		stop = startWorker(b, eng, worker.Options{Concurrency: 4})
		waitFor(b, 5*time.Minute, 50*time.Millisecond, "every pause expired and run ended", func() bool { return countJobs(b, eng) == 0 })
		took := time.Since(expiryBegan)
		b.StopTimer()
		require.NoError(b, stop())
		done, err := eng.ListRuns(ctx, org, engine.RunFilter{Statuses: []svctype.RunStatus{svctype.RunCompleted}, ListOptions: svctype.ListOptions{Limit: 500}})
		require.NoError(b, err)
		require.NotEmpty(b, done.Items)
		b.ReportMetric(took.Seconds(), "expiry-s")
		b.Logf("%d runs paused in %s; %d goroutines in the process with them all open (no worker running); "+
			"all %d expiries due at once: pauses closed and runs ended in %s (target: within the minute)",
			pauses, opened.Round(time.Millisecond), idle, pauses, took.Round(time.Millisecond))
	})
}
