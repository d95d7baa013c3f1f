package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

// BenchmarkSlowCallsBesideFastRuns is issue 7's speed target: 200 runs whose http action
// waits 1 s at the receiver, started together with 1,000 three-step runs (ledgerFlow), on
// SQLite with a worker of concurrency 4 and the default I/O pool (256 calls, 64 per
// organization). Targets: the slow runs finish in a few seconds (their calls overlap) and
// the fast runs keep at least 80 % of the runs/s they reach alone, measured just before
// (three pairs; the median ratio is reported).
// Run it with -benchtime 1x (make bench-io); b.N is not used.
func BenchmarkSlowCallsBesideFastRuns(b *testing.B) {
	const fast, slow, wait, pairs = 1000, 200, time.Second, 3
	b.Run("sqlite", func(b *testing.B) {
		// Alone and mixed, pair after pair: the machine's noise moves both of a pair alike,
		// and the median of the pairs' ratios is reported.
		var ratios []float64
		var last mixResult
		for pair := range pairs {
			alone := runMix(b, fast, 0, wait)
			mixed := runMix(b, fast, slow, wait)
			ratio := mixed.fastRPS / alone.fastRPS
			ratios = append(ratios, ratio)
			last = mixed
			b.Logf("pair %d: fast alone %.0f runs/s; with %d slow runs (%s each at the receiver) %.0f runs/s = %.0f%%, "+
				"fast p50 %s p99 %s; slow runs all ended after %s (p50 %s), at most %d calls at the receiver at once",
				pair+1, alone.fastRPS, slow, wait, mixed.fastRPS, ratio*100, mixed.fastP50.Round(time.Millisecond),
				mixed.fastP99.Round(time.Millisecond), mixed.slowLast.Round(time.Millisecond),
				mixed.slowP50.Round(time.Millisecond), mixed.maxAtReceiver)
		}
		slices.Sort(ratios)
		median := ratios[len(ratios)/2]
		b.ReportMetric(median*100, "fast-kept-%")
		b.ReportMetric(last.slowLast.Seconds(), "slow-last-s")
		b.Logf("median of %d pairs: the fast runs keep %.0f%% of their runs/s alone (target >= 80%%); the slow runs end within a few seconds",
			pairs, median*100)
	})
}

type mixResult struct {
	fastRPS                    float64
	fastLast, fastP50, fastP99 time.Duration
	slowLast, slowP50          time.Duration
	maxAtReceiver              int64
}

// runMix starts fast ledger runs and slow http-action runs (interleaved) on a fresh store,
// then a worker, and times each run's end from the worker's start.
func runMix(b *testing.B, fast, slow int, wait time.Duration) mixResult {
	b.Helper()
	var atReceiver, maxAt atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := atReceiver.Add(1)
		for m := maxAt.Load(); n > m && !maxAt.CompareAndSwap(m, n); m = maxAt.Load() {
		}
		time.Sleep(wait) // a slow receiver: what the benchmark runs fast runs beside
		atReceiver.Add(-1)
		_, _ = fmt.Fprint(w, `{"ok": true}`)
	}))
	defer srv.Close()
	eng := newEngine(b, engine.Config{
		Store:               openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db")),
		AllowPrivateTargets: true, // the receiver is on 127.0.0.1
	})
	ctx := context.Background()
	fastWF := ledgerSetup(b, eng)
	_, err := eng.CreateAction(ctx, org, svctype.Action{Name: "slow_partner", Kind: svctype.ActionHTTP, URL: srv.URL})
	require.NoError(b, err)
	slowWF := createWorkflow(b, eng, "slow", `{"actions": [{"type": "slow_partner", "properties": {"n": "@input.n"}, "outputKey": "answer"}]}`)

	type started struct {
		id   string
		slow bool
	}
	var runs []started
	for i := range fast + slow {
		isSlow := slow > 0 && i%((fast+slow)/slow) == 0 // one slow run in every (fast+slow)/slow
		wf, input := fastWF, ledgerInput(i)
		if isSlow {
			wf, input = slowWF, json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))
		}
		runs = append(runs, started{id: execute(b, eng, wf, input), slow: isSlow})
	}

	ends := make([]time.Duration, len(runs))
	var wg sync.WaitGroup
	begin := time.Now()
	for i, r := range runs {
		wg.Go(func() {
			status := svctype.RunRunning
			for !status.Terminal() {
				var err error
				if status, err = eng.WaitRun(ctx, org, r.id, status, engine.MaxWait); err != nil {
					b.Error(err)
					return
				}
			}
			ends[i] = time.Since(begin)
			if status != svctype.RunCompleted {
				b.Errorf("run %s ended %s", r.id, status)
			}
		})
	}
	stop := startWorker(b, eng, worker.Options{Concurrency: 4})
	wg.Wait()
	require.NoError(b, stop())

	var fastEnds, slowEnds []time.Duration
	for i, r := range runs {
		if r.slow {
			slowEnds = append(slowEnds, ends[i])
		} else {
			fastEnds = append(fastEnds, ends[i])
		}
	}
	require.Len(b, slowEnds, slow)
	require.Len(b, fastEnds, fast)
	slices.Sort(fastEnds)
	res := mixResult{maxAtReceiver: maxAt.Load()}
	res.fastLast = fastEnds[len(fastEnds)-1]
	res.fastRPS = float64(fast) / res.fastLast.Seconds()
	res.fastP50, res.fastP99 = fastEnds[len(fastEnds)/2], fastEnds[len(fastEnds)*99/100]
	if slow > 0 {
		slices.Sort(slowEnds)
		res.slowLast, res.slowP50 = slowEnds[len(slowEnds)-1], slowEnds[len(slowEnds)/2]
	}
	return res
}
