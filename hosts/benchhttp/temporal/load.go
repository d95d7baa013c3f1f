package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// figures are one side's figures of one round.
type figures struct {
	side      string
	runs      int
	completed int
	elapsed   time.Duration
	lat       []time.Duration // sorted
	// serverCPU is the server's CPU a run (svcflow serve; the dev server), ownCPU the
	// client program's (benchhttp; this process: worker and clients); 0 when unknown.
	serverCPU, ownCPU float64 // ms a run
	failures          int
	// p50, p90, p99, max in ms, when read from a line (lat is nil then).
	p [4]float64
}

func (f figures) rate() float64 { return float64(f.completed) / max(f.elapsed.Seconds(), 1e-9) }

// pct is the nearest-rank percentile of lat, or the one read from a line.
func (f figures) pct(i int, p float64) float64 {
	if f.lat == nil {
		return f.p[i]
	}
	if len(f.lat) == 0 {
		return 0
	}
	k := int(math.Ceil(float64(len(f.lat))*p/100)) - 1
	return ms(f.lat[min(max(k, 0), len(f.lat)-1)])
}

func (f figures) p50() float64 { return f.pct(0, 50) }
func (f figures) p90() float64 { return f.pct(1, 90) }
func (f figures) p99() float64 { return f.pct(2, 99) }
func (f figures) max() float64 { return f.pct(3, 100) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// line is the figures as benchhttp's figures: line has them.
func (f figures) line() string {
	return fmt.Sprintf("figures: mode=%s runs=%d completed=%d seconds=%.3f runs_per_s=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f server_cpu_ms_per_run=%.3f client_cpu_ms_per_run=%.3f",
		f.side, f.runs, f.completed, f.elapsed.Seconds(), f.rate(), f.p50(), f.p90(), f.p99(), f.max(), f.serverCPU, f.ownCPU)
}

// temporalSide starts a dev server in a temporary directory, a worker in this process, and
// runs o.runs workflows from o.clients clients; it stops both whatever happens.
func temporalSide(ctx context.Context, o options) (f figures, err error) {
	dir, err := os.MkdirTemp("", "temporalbench-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	srv, c, err := startDevServer(ctx, o.temporal, dir)
	if err != nil {
		return f, err
	}
	defer func() { err = errors.Join(err, srv.stop()) }()
	defer c.Close()

	l := newLedger(o.keys)
	local := o.activities == "local"
	wo := worker.Options{}
	if o.pollers > 0 {
		wo.MaxConcurrentWorkflowTaskPollers, wo.MaxConcurrentActivityTaskPollers = o.pollers, o.pollers
	}
	w := worker.New(c, taskQueue, wo)
	w.RegisterWorkflowWithOptions(ledgerWorkflow(l, local), workflow.RegisterOptions{Name: "ledger"})
	if !local {
		w.RegisterActivity(l)
	}
	if err := w.Start(); err != nil {
		return f, fmt.Errorf("worker: %w", err)
	}
	defer w.Stop()

	// One run before the clock starts: the namespace's first workflow, the worker's
	// first poll answered.
	if _, err := execute(ctx, c, "warm-up", LedgerInput{ID: "acct-0", Amount: 0}); err != nil {
		return f, fmt.Errorf("first run: %w", err)
	}

	lat := make([]time.Duration, o.runs)
	var next, completed, failed atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	serverBefore, _ := processCPU(srv.cmd.Process.Pid)
	ownBefore := selfCPU()
	start := time.Now()
	for range min(o.clients, o.runs) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.runs || ctx.Err() != nil {
					return
				}
				in := LedgerInput{ID: fmt.Sprintf("acct-%d", i*7919%o.keys), Amount: i % 20}
				began := time.Now()
				if _, err := execute(ctx, c, fmt.Sprintf("ledger-%d", i), in); err != nil {
					failed.Add(1)
					once.Do(func() { firstErr = err })
					continue
				}
				lat[completed.Add(1)-1] = time.Since(began)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	serverAfter, ok := processCPU(srv.cmd.Process.Pid)
	ownAfter := selfCPU()
	if ctx.Err() != nil {
		return f, ctx.Err()
	}
	n := int(completed.Load())
	f = figures{side: "temporal-" + o.activities, runs: o.runs, completed: n, elapsed: elapsed, lat: lat[:n], failures: int(failed.Load())}
	slices.Sort(f.lat)
	if n > 0 {
		if ok {
			f.serverCPU = ms(serverAfter-serverBefore) / float64(n)
		}
		f.ownCPU = ms(ownAfter-ownBefore) / float64(n)
	}
	if got := l.rowCount(); got != n+1 { // the warm-up's row too
		return f, fmt.Errorf("%d runs completed but %d rows were written", n, got-1)
	}
	if f.failures > 0 {
		return f, fmt.Errorf("%d of %d runs failed; the first: %w", f.failures, o.runs, firstErr)
	}
	return f, nil
}

// execute starts workflow id and waits for its result.
func execute(ctx context.Context, c client.Client, id string, in LedgerInput) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, "ledger", in)
	if err != nil {
		return 0, err
	}
	var rows int
	err = run.Get(ctx, &rows)
	return rows, err
}
