package worker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
	"github.com/svcflow/svcflow/hosts/worker"
)

// producers is how many goroutines call Execute in the throughput benchmarks.
const producers = 4

// executeN starts n runs of wfID from producers goroutines.
func executeN(b *testing.B, eng *engine.Engine, wfID string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() {
			for i := p; i < n; i += producers {
				if _, err := eng.Execute(context.Background(), org, wfID, ledgerInput(i), engine.ExecuteOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// timeRuns times b.N runs of wfID, started by executeN, through a worker of concurrency 4
// in this process, from the worker's start until the last run ends; the worker is stopped.
// It reports the process's CPU time (user and system, from getrusage) per run over the
// same span: Execute's share, the worker's and the store's, a figure the load of a shared
// machine leaves alone where runs/s does not.
func timeRuns(b *testing.B, eng *engine.Engine, wfID string) time.Duration {
	b.Helper()
	b.ResetTimer()
	cpu := processCPU(b)
	stop := startWorker(b, eng, worker.Options{Concurrency: 4})
	executeN(b, eng, wfID, b.N)
	waitDrained(b, eng)
	elapsed := b.Elapsed()
	cpu = processCPU(b) - cpu
	b.StopTimer()
	require.NoError(b, stop())
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/run")
	return elapsed
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitDrained polls until the jobs table is empty: every run started has ended.
func waitDrained(b *testing.B, eng *engine.Engine) {
	b.Helper()
	waitDrainedOn(b, eng.Store())
}

// waitDrainedOn is waitDrained through st, a store of its own for a benchmark that counts
// what the engine's store sends.
func waitDrainedOn(b *testing.B, st storage.Full) {
	b.Helper()
	waitFor(b, 10*time.Minute, 10*time.Millisecond, "every run to end", func() bool { return store.CountAllJobs(b, st) == 0 })
}

// checkLedger verifies that n runs completed, each with its one ledger row. Failed runs
// are looked for first: their reasons say why a row is missing.
func checkLedger(b *testing.B, eng *engine.Engine, n int) {
	b.Helper()
	failed, err := eng.ListRuns(context.Background(), org, engine.RunFilter{Statuses: []svctype.RunStatus{svctype.RunFailed}})
	require.NoError(b, err)
	for _, r := range failed.Items {
		b.Errorf("run %s failed: %s", r.ID, r.Reason)
	}
	require.Equal(b, n, countRows(b, eng, "ledger"))
}

// BenchmarkRuns measures runs/s and the per-step cost through the real worker: b.N runs of
// ledgerFlow (upsert, filtered read, templated insert) started from 4 goroutines while a
// worker of concurrency 4 executes them, timed from the worker's start until the last run
// ends. Targets on SQLite: >= 500 runs/s, p50 step < 2ms. BenchmarkRuns/traced is the same
// with tracing on: every span (run, slice, step) made, batched and exported to memory, the
// way a host exports them over OTLP (make bench-runs-traced; docs/performance.md).
func BenchmarkRuns(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchmarkRuns(b, nil) })
	b.Run("traced", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithIDGenerator(tracing.IDGenerator{}))
		benchmarkRuns(b, tp)
		require.NoError(b, tp.ForceFlush(context.Background()))
		b.ReportMetric(float64(len(exp.GetSpans()))/float64(b.N), "spans/run")
		require.NoError(b, tp.Shutdown(context.Background()))
	})
}

func benchmarkRuns(b *testing.B, tp trace.TracerProvider) {
	var steps durations
	st := openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	eng := newEngine(b, engine.Config{
		Store:          st,
		StepObserver:   steps.observe,
		TracerProvider: tp,
	})
	wfID := ledgerSetup(b, eng)
	busy, _ := st.WriterBusy()
	elapsed := timeRuns(b, eng, wfID)
	after, _ := st.WriterBusy()
	checkLedger(b, eng, b.N)
	// The writer's share of the time: near 100 %, runs/s is 1 / writer-ms/run whatever the
	// CPUs (every run's commits go through SQLite's one writer).
	b.ReportMetric(100*(after-busy).Seconds()/elapsed.Seconds(), "writer-busy-%")
	b.ReportMetric((after-busy).Seconds()*1000/float64(b.N), "writer-ms/run")

	rps := float64(b.N) / elapsed.Seconds()
	p50, p99 := steps.percentile(50), steps.percentile(99)
	b.ReportMetric(rps, "runs/s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-step-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-step-ms")
	b.Logf("sqlite (traced: %v): %d runs in %s = %.0f runs/s; %d steps, p50 %s, p99 %s (targets: >= 500 runs/s, p50 < 2ms)",
		tp != nil, b.N, elapsed.Round(time.Millisecond), rps, steps.len(), p50, p99)
}

// BenchmarkRunsPostgresProcesses measures runs/s with 1, 2 and 4 worker processes
// (TestHelperWorker, concurrency 4 each), and one with concurrency 1, sharing one
// PostgreSQL schema; this process only
// starts the runs. Beside runs/s it reports what a run costs the database: the statements
// the worker processes send a run (stmts/run, from pgx's tracer in each process), those of
// the Execute that started it (stmts/execute), and the CPU time of the PostgreSQL backends
// serving this benchmark's connections a run (pg-cpu-ms/run, utime+stime from /proc; not
// reported when the server is not on this machine). Its sub-benchmarks keep
// `-bench BenchmarkRuns/sqlite` from running it.
func BenchmarkRunsPostgresProcesses(b *testing.B) {
	// slots is each worker process's concurrency. One process with one slot runs one unit
	// at a time: what a run costs PostgreSQL with no other run's statements beside it (no
	// lock, buffer or CPU contention among the backends), the cost a run has on a server
	// with cores to spare.
	for _, c := range []struct{ n, slots int }{{1, 4}, {2, 4}, {4, 4}, {1, 1}} {
		n := c.n
		name := fmt.Sprintf("%d-workers", n)
		if c.slots == 1 {
			name += "-1-slot"
		}
		b.Run(name, func(b *testing.B) {
			base := sharedDSN(b, "postgres")
			app := "svcbench" + strconv.FormatInt(time.Now().UnixNano(), 36)
			dsn := withAppName(b, base, app)
			var execCounter store.StatementCounter
			eng := newEngine(b, engine.Config{Store: store.OpenCountingPostgres(b, dsn, &execCounter)})
			wfID := ledgerSetup(b, eng)
			var helpers []*helperProc
			for range n {
				helpers = append(helpers, startHelper(b, dsn, 15*time.Second, c.slots, 250*time.Millisecond, envHelperCount+"=1"))
			}
			for _, h := range helpers {
				h.waitReady(b)
			}
			watch := openStore(b, base) // the benchmark's polls for the end: not counted, nor their CPU
			cpu, measured := startBackendCPU(b, app)
			execCounter.Take()
			b.ResetTimer()
			executeN(b, eng, wfID, b.N)
			waitDrainedOn(b, watch)
			elapsed := b.Elapsed()
			b.StopTimer()
			executes := execCounter.Take()
			var pgCPU time.Duration
			if measured {
				var err error
				pgCPU, err = cpu.since()
				require.NoError(b, err)
			}
			worked := map[string]int{}
			for _, h := range helpers {
				require.True(b, h.alive(), "helper worker died: %s", h.stderr.String())
				addCounts(worked, h.stop(b))
			}
			checkLedger(b, eng, b.N)

			rps := float64(b.N) / elapsed.Seconds()
			perRun := float64(countsTotal(worked)) / float64(b.N)
			perExecute := float64(countsTotal(executes)) / float64(b.N)
			b.ReportMetric(rps, "runs/s")
			b.ReportMetric(perRun, "stmts/run")
			b.ReportMetric(float64(store.RoundTrips(worked))/float64(b.N), "trips/run")
			b.ReportMetric(perExecute, "stmts/execute")
			b.ReportMetric(float64(store.RoundTrips(executes))/float64(b.N), "trips/execute")
			cpuNote := "not measured"
			if measured {
				ms := pgCPU.Seconds() * 1000 / float64(b.N)
				b.ReportMetric(ms, "pg-cpu-ms/run")
				cpuNote = fmt.Sprintf("%.2f ms a run (%s in all)", ms, pgCPU.Round(10*time.Millisecond))
			}
			b.Logf("postgres, %d worker processes: %d runs in %s = %.0f runs/s; statements a run: %.2f from the workers "+
				"(pgx's tracer) + %.2f from Execute; PostgreSQL backends' CPU: %s\nworkers' statements by kind:\n%s",
				n, b.N, elapsed.Round(time.Millisecond), rps, perRun, perExecute, cpuNote, countsByKind(worked, b.N, nil, 0))
		})
	}
}

// BenchmarkStatementsPerStep counts the statements (each a round trip but a BEGIN sent with
// the statement after it: trips/run) one worker sends to
// PostgreSQL for the 3-step ledger run: per run, per step, and by statement, from pgx's
// tracer, each kind with the first text sent. Execute's own statements are counted apart.
// The runs are queued first, then one worker of concurrency 1 runs them: each claim takes
// one job, as a worker does under light load.
func BenchmarkStatementsPerStep(b *testing.B) {
	var counter store.StatementCounter
	dsn := sharedDSN(b, "postgres")
	st := store.OpenCountingPostgres(b, dsn, &counter)
	eng := newEngine(b, engine.Config{Store: st})
	wfID := ledgerSetup(b, eng)
	watch := openStore(b, dsn) // the benchmark's polls for the end, not counted
	// One run first, whose upsert declares the accounts table's key index, and the index's
	// build: the runs counted then meet the tables as a deployment does after its first run.
	stop := startWorker(b, eng, worker.Options{Concurrency: 1, Poll: 5 * time.Millisecond})
	execute(b, eng, wfID, ledgerInput(0))
	waitDrainedOn(b, watch)
	require.NoError(b, stop())
	counter.Take()
	executeN(b, eng, wfID, b.N)
	executes := counter.Take()
	b.ResetTimer()
	stop = startWorker(b, eng, worker.Options{Concurrency: 1, Poll: 5 * time.Millisecond})
	waitDrainedOn(b, watch)
	b.StopTimer()
	require.NoError(b, stop())
	ran := counter.Take()
	checkLedger(b, eng, b.N+1)
	total, execTotal := countsTotal(ran), countsTotal(executes)
	b.ReportMetric(float64(total)/float64(b.N), "stmts/run")
	b.ReportMetric(float64(store.RoundTrips(ran))/float64(b.N), "trips/run")
	b.ReportMetric(float64(total)/float64(3*b.N), "stmts/step")
	b.ReportMetric(float64(execTotal)/float64(b.N), "stmts/execute")
	b.ReportMetric(float64(store.RoundTrips(executes))/float64(b.N), "trips/execute")
	b.Logf("worker statements by kind (idle polls included):\n%s\nExecute's statements by kind:\n%s",
		countsByKind(ran, b.N, counter.Example, 300), countsByKind(executes, b.N, counter.Example, 300))
}

// BenchmarkQueuedRuns shows that runs queued behind a busy worker hold no goroutine and no
// memory beyond the engine's bounded caches: they live only in the jobs table. b.N is not
// used: each iteration queues 10,000 runs (run it with -benchtime 1x).
//
// On PostgreSQL the worker is busy in a step that blocks on a channel. On SQLite a step runs
// inside its transaction on the one writer connection, so a blocked step would stall every
// Execute of the process; there the worker is held between two steps of its run instead
// (blocked in the StepObserver after its first step committed), busy with no transaction open.
func BenchmarkQueuedRuns(b *testing.B) {
	for _, dialect := range dialects {
		b.Run(dialect, func(b *testing.B) { benchmarkQueuedRuns(b, dialect) })
	}
}

func benchmarkQueuedRuns(b *testing.B, dialect string) {
	const queued = 10_000
	ctx := context.Background()
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	block := func() {
		once.Do(func() { close(entered) })
		<-release
	}
	cfg := engine.Config{Store: openStore(b, sharedDSN(b, dialect))}
	if dialect == "sqlite" {
		cfg.StepObserver = func(stepType string, _ time.Duration) {
			if stepType == "hold" {
				block()
			}
		}
	}
	eng := newEngine(b, cfg)
	eng.RegisterStep("hold", func(context.Context, *svctype.StepCall) (any, error) {
		if dialect != "sqlite" {
			block()
		}
		return nil, nil
	})
	blocker := createWorkflow(b, eng, "blocker", `{"actions": [{"type": "hold", "properties": {}}, {"type": "hold", "properties": {}}]}`)
	wfID := ledgerSetup(b, eng)
	stop := startWorker(b, eng, worker.Options{Concurrency: 1, Poll: 10 * time.Millisecond})
	execute(b, eng, blocker, nil)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		b.Fatal("the worker never started the blocking run")
	}

	goroutines, heap := func() (int, uint64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapInuse
	}()
	b.ResetTimer()
	began := time.Now()
	for i := range queued {
		if _, err := eng.Execute(ctx, org, wfID, ledgerInput(i), engine.ExecuteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	perExecute := time.Since(began) / queued
	b.StopTimer()
	// Let the worker see the wakeups it got while full (a benchmark's settling time: what
	// follows measures goroutines and heap, not an outcome).
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	dGoroutines := runtime.NumGoroutine() - goroutines
	dHeap := (float64(ms.HeapInuse) - float64(heap)) / (1 << 20)
	jobs := countJobs(b, eng)
	require.Equal(b, queued+1, jobs, "every queued run waits in the jobs table")

	b.ReportMetric(float64(dGoroutines), "goroutines-delta")
	b.ReportMetric(dHeap, "heap-delta-MiB")
	b.ReportMetric(float64(jobs), "jobs")
	b.ReportMetric(float64(perExecute.Microseconds())/1000, "execute-ms")
	b.Logf("%s: %d runs queued behind a busy worker: goroutines %+d, heap in use %+.2f MiB, %d jobs waiting; Execute took %s each",
		dialect, queued, dGoroutines, dHeap, jobs, perExecute)

	close(release)
	require.NoError(b, stop())
}
