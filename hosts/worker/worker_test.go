package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/metrics"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/testclock"
)

// registerSlow adds the "slow" step kind: 20ms of work that writes nothing.
func registerSlow(eng *engine.Engine) {
	eng.RegisterStep("slow", func(ctx context.Context, _ *svctype.StepCall) (any, error) {
		// Stands for a step's work, so that a SIGKILL lands in the middle of a run (and a
		// benchmark's worker has something to do): it waits for nothing.
		time.Sleep(20 * time.Millisecond)
		return nil, nil
	})
}

func TestWorkerCompletesRuns(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			eng := newEngine(t, engine.Config{Store: store.OpenTest(t, dialect)})
			wfID := ledgerSetup(t, eng)
			var ids []string
			// Half queued before the worker starts, half while it runs.
			for i := range 10 {
				ids = append(ids, execute(t, eng, wfID, ledgerInput(i)))
			}
			stop := startWorker(t, eng, worker.Options{Concurrency: 3, Poll: 50 * time.Millisecond})
			for i := 10; i < 20; i++ {
				ids = append(ids, execute(t, eng, wfID, ledgerInput(i)))
			}
			waitFor(t, 30*time.Second, 10*time.Millisecond, "every job to be done", func() bool {
				return countJobs(t, eng) == 0
			})
			for _, id := range ids {
				doc, err := eng.RunStatus(context.Background(), org, id)
				require.NoError(t, err)
				require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			}
			require.Equal(t, len(ids), countRows(t, eng, "ledger"), "one ledger row per run")

			require.NoError(t, stop(), "an idle worker stops when cancelled (were it stuck, stop would not return)")
		})
	}
}

// TestWorkerDrain cancels a worker while a step is in flight: Run waits for the step,
// commits it once, and releases the run's job so that another worker finishes the run at
// once rather than after a lease.
func TestWorkerDrain(t *testing.T) {
	t.Parallel()
	finishers := []struct {
		name   string
		finish func(t *testing.T, eng *engine.Engine)
	}{
		{"eng.Work", func(t *testing.T, eng *engine.Engine) {
			n, err := eng.Work(context.Background())
			require.NoError(t, err)
			require.Equal(t, 1, n, "the drained run's job is claimable at once (its 15s lease was released)")
		}},
		{"second worker", func(t *testing.T, eng *engine.Engine) {
			stop := startWorker(t, eng, worker.Options{Poll: 20 * time.Millisecond})
			waitFor(t, 5*time.Second, 10*time.Millisecond, "the second worker to finish the run", func() bool {
				return countJobs(t, eng) == 0
			})
			require.NoError(t, stop())
		}},
	}
	for _, dialect := range dialects {
		for _, f := range finishers {
			t.Run(dialect+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				// No chains: the step after the one in flight is a unit of its own, which the
				// drain leaves to the next worker.
				eng := newEngine(t, engine.Config{Store: store.OpenTest(t, dialect), ChainTime: -1})
				_, err := eng.CreateTable(ctx, org, "marks", map[string]string{"step": "text"})
				require.NoError(t, err)
				entered := make(chan struct{}, 1)
				release := make(chan struct{})
				returned := make(chan struct{}) // closed when Run returns
				var calls atomic.Int32
				var early atomic.Bool // Run returned while this step was in flight
				eng.RegisterStep("block", func(ctx context.Context, call *svctype.StepCall) (any, error) {
					calls.Add(1)
					select {
					case entered <- struct{}{}:
					default:
					}
					<-release
					select {
					case <-returned:
						early.Store(true)
					default:
					}
					_, err := call.Tables.InsertRow(ctx, call.OrgID, "marks", map[string]any{"step": "block"})
					return map[string]any{"ok": true}, err
				})
				wfID := createWorkflow(t, eng, "drain", `{"actions": [
				  {"type": "block", "outputKey": "b", "properties": {}},
				  {"type": "custom-table", "properties": {"table": "marks", "operation": "write", "fields": {"step": "after"}}}
				]}`)
				runID := execute(t, eng, wfID, nil)

				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				done := make(chan error, 1)
				go func() {
					err := worker.New(eng, worker.Options{Concurrency: 2, Poll: 20 * time.Millisecond, Logger: quiet}).Run(runCtx)
					close(returned)
					done <- err
				}()
				select {
				case <-entered:
				case <-time.After(10 * time.Second):
					t.Fatal("the worker never started the blocking step")
				}
				// Run returns after the step in flight, not before: the step sees Run still
				// running when it is released, and finds its commit made once Run returns.
				cancel()
				close(release)
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(10 * time.Second):
					t.Fatal("Run did not return after the step in flight finished")
				}
				require.False(t, early.Load(), "Run returned while a step was in flight")

				run, err := eng.GetRun(ctx, org, runID)
				require.NoError(t, err)
				require.Equal(t, svctype.RunRunning, run.Status, "a drained run is left running for the next worker")
				require.Equal(t, 1, run.Cursor.Step, "the step in flight was committed")
				marks := func() map[string]int {
					rows, err := eng.ReadRows(ctx, org, "marks", nil, 0)
					require.NoError(t, err)
					m := map[string]int{}
					for _, r := range rows {
						m[r.Data["step"].(string)]++
					}
					return m
				}
				require.Equal(t, map[string]int{"block": 1}, marks())
				require.Equal(t, 1, countJobs(t, eng))

				f.finish(t, eng)
				doc, err := eng.RunStatus(ctx, org, runID)
				require.NoError(t, err)
				require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
				require.Equal(t, map[string]any{"ok": true}, doc.Context["b"])
				require.Equal(t, map[string]int{"block": 1, "after": 1}, marks(), "the drained step is not run again")
				require.Equal(t, int32(1), calls.Load())
				require.Zero(t, countJobs(t, eng))
			})
		}
	}
}

// TestHelperWorker is the worker process that TestWorkerSIGKILL kills and that
// BenchmarkRunsPostgresProcesses runs; it does nothing unless one of them starts it.
func TestHelperWorker(t *testing.T) {
	if os.Getenv(envHelper) != "1" {
		t.Skip("the worker process of TestWorkerSIGKILL and BenchmarkRunsPostgresProcesses: runs only when they start it")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	lease, err := time.ParseDuration(os.Getenv(envHelperLease))
	require.NoError(t, err)
	poll, err := time.ParseDuration(os.Getenv(envHelperPoll))
	require.NoError(t, err)
	concurrency, err := strconv.Atoi(os.Getenv(envHelperConcurrency))
	require.NoError(t, err)
	var counter *store.StatementCounter
	var st *store.Store
	if os.Getenv(envHelperCount) == "1" {
		counter = &store.StatementCounter{}
		st = store.OpenCountingPostgres(t, os.Getenv(envHelperDSN), counter)
	} else {
		st = openStore(t, os.Getenv(envHelperDSN))
	}
	eng := newEngine(t, engine.Config{Store: st, Lease: lease})
	registerSlow(eng)
	if counter != nil {
		counter.Take() // what opening and migrating sent
	}
	fmt.Println(helperReady)
	require.NoError(t, worker.New(eng, worker.Options{Concurrency: concurrency, Poll: poll, Logger: quiet}).Run(ctx))
	if counter != nil {
		// Stopped by SIGTERM after the benchmark's runs: what the worker sent, for its parent.
		b, err := json.Marshal(counter.Take())
		require.NoError(t, err)
		fmt.Println(helperStatements + string(b))
	}
}

// crashFlow is a foreach whose elements write one row each (a plain insert: an element
// applied twice would leave a duplicate) and then take 20ms.
const crashFlow = `{"actions": [
  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.items", "result_key": "done",
    "steps": [
      {"type": "custom-table", "properties": {"table": "seen", "operation": "write", "fields": {"i": "@index"}}},
      {"type": "slow", "outputKey": "s", "properties": {}}
    ]}}
]}`

// TestWorkerSIGKILL: a worker killed with SIGKILL in the middle of a run leaves the run to
// the next worker, its job claimable again within one lease; no committed effect is applied
// twice, and the foreach's committed progress survives element by element.
func TestWorkerSIGKILL(t *testing.T) {
	t.Parallel()
	// The default lease is 15s, well inside the 30s within which a killed worker's jobs must
	// be claimable again; 2s keeps this test fast.
	const (
		lease = 2 * time.Second
		poll  = 100 * time.Millisecond
		items = 150
	)
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dsn := sharedDSN(t, dialect)
			var firstStep atomic.Int64 // when this process first committed a step (unix ns)
			eng := newEngine(t, engine.Config{Store: openStore(t, dsn), Lease: lease, StepObserver: func(string, time.Duration) {
				firstStep.CompareAndSwap(0, time.Now().UnixNano())
			}})
			registerSlow(eng)
			_, err := eng.CreateTable(ctx, org, "seen", map[string]string{"i": "number"})
			require.NoError(t, err)
			wfID := createWorkflow(t, eng, "crash", crashFlow)
			list := make([]string, items)
			for i := range list {
				list[i] = strconv.Itoa(i)
			}
			runID := execute(t, eng, wfID, json.RawMessage(`{"items": [`+strings.Join(list, ",")+`]}`))

			h := startHelper(t, dsn, lease, 4, poll)
			waitFor(t, 60*time.Second, 5*time.Millisecond, "the helper worker to write 20 rows", func() bool {
				if !h.alive() {
					t.Fatalf("the helper worker exited on its own: %s\n%s", h.cmd.ProcessState, h.stderr.String())
				}
				return countRows(t, eng, "seen") >= 20
			})
			h.kill()
			killedAt := time.Now()
			atKill := countRows(t, eng, "seen")
			require.GreaterOrEqual(t, atKill, 20)
			require.LessOrEqual(t, atKill, 120)
			run, err := eng.GetRun(ctx, org, runID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunRunning, run.Status)
			require.NotNil(t, run.Cursor.Loop)
			require.Equal(t, atKill, run.Cursor.Loop.Next,
				"the foreach's committed progress is exactly the elements whose rows exist: the element in flight left nothing")
			require.Equal(t, 1, countJobs(t, eng), "the run's job outlives its worker")

			stop := startWorker(t, eng, worker.Options{Concurrency: 4, Poll: poll})
			waitFor(t, 60*time.Second, 20*time.Millisecond, "the next worker to finish the run", func() bool {
				run, err := eng.GetRun(ctx, org, runID)
				require.NoError(t, err)
				return run.Status != svctype.RunRunning
			})
			require.NoError(t, stop())
			takeover := time.Unix(0, firstStep.Load()).Sub(killedAt)
			t.Logf("%s: killed after %d of %d elements; the next worker committed its first element %s after the kill (lease %s, poll %s)",
				dialect, atKill, items, takeover.Round(time.Millisecond), lease, poll)
			// At most one lease (the last heartbeat or commit of the dead worker) plus a poll and
			// one element; the rest is slack for the race detector.
			require.Less(t, takeover, lease+3*time.Second)

			doc, err := eng.RunStatus(ctx, org, runID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Len(t, doc.Context["done"], items)
			rows, err := eng.ReadRows(ctx, org, "seen", nil, 0)
			require.NoError(t, err)
			seen := map[int]int{}
			for _, r := range rows {
				f, _ := svctype.Float(r.Data["i"])
				seen[int(f)]++
			}
			for i := range items {
				require.Equal(t, 1, seen[i], "element %d's row", i)
			}
			require.Len(t, rows, items)
			require.Zero(t, countJobs(t, eng))
		})
	}
}

// TestTwoWorkersShareRuns runs two engines, each with its own store and worker, on one
// PostgreSQL schema: the jobs table hands each run to exactly one of them.
func TestTwoWorkersShareRuns(t *testing.T) {
	t.Parallel()
	const runs = 200
	ctx := context.Background()
	dsn := sharedDSN(t, "postgres")
	var engines [2]*engine.Engine
	var steps [2]atomic.Int64
	for i := range engines {
		engines[i] = newEngine(t, engine.Config{Store: openStore(t, dsn), StepObserver: func(string, time.Duration) { steps[i].Add(1) }})
		engines[i].RegisterStep("pause", func(context.Context, *svctype.StepCall) (any, error) {
			// Stands for a step's work: a worker busy with it leaves the next runs to the
			// other one, which is how both come to share them. It waits for nothing.
			time.Sleep(time.Millisecond)
			return nil, nil
		})
	}
	_, err := engines[0].CreateTable(ctx, org, "done", map[string]string{"n": "number"})
	require.NoError(t, err)
	wfID := createWorkflow(t, engines[0], "shared", `{"actions": [
	  {"type": "custom-table", "properties": {"table": "done", "operation": "write", "fields": {"n": "@input.n"}}},
	  {"type": "pause", "properties": {}}
	]}`)
	var stops [2]func() error
	for i, eng := range engines {
		stops[i] = startWorker(t, eng, worker.Options{Concurrency: 4, Poll: 20 * time.Millisecond})
	}
	// Four producers, alternating engines so that both workers are woken.
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for n := p; n < runs; n += 4 {
				run, err := engines[n%2].Execute(ctx, org, wfID, json.RawMessage(fmt.Sprintf(`{"n": %d}`, n)), engine.ExecuteOptions{})
				if err != nil {
					t.Errorf("execute %d: %v", n, err)
					return
				}
				ids[n] = run.ID
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	waitFor(t, 60*time.Second, 10*time.Millisecond, "every run's job to be done", func() bool {
		return countJobs(t, engines[0]) == 0
	})
	for _, stop := range stops {
		require.NoError(t, stop())
	}
	for _, id := range ids {
		run, err := engines[1].GetRun(ctx, org, id)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, run.Status, run.Reason)
	}
	rows, err := engines[1].ReadRows(ctx, org, "done", nil, 0)
	require.NoError(t, err)
	seen := map[int]int{}
	for _, r := range rows {
		f, _ := svctype.Float(r.Data["n"])
		seen[int(f)]++
	}
	for n := range runs {
		require.Equal(t, 1, seen[n], "run %d's row", n)
	}
	require.Len(t, rows, runs)
	a, b := steps[0].Load(), steps[1].Load()
	t.Logf("steps committed: worker A %d, worker B %d", a, b)
	require.Positive(t, a, "worker A did some of the work")
	require.Positive(t, b, "worker B did some of the work")
	// A unit commits a run's write and its quick step after it together, or (past the
	// unit's time) one of them: the rows above show each write landed once.
	require.GreaterOrEqual(t, a+b, int64(runs), "at least a unit a run")
	require.LessOrEqual(t, a+b, int64(2*runs), "at most a unit a step")
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	type tick struct {
		at   string // the clock is set here, then eng.Work runs once
		runs int    // runs of the workflow so far
		slot string // the newest run's input.schedule.slot, when it is new at this tick
		next string // the schedule job's run_at afterwards
	}
	const berlin9 = `{"every": "1d", "at": "09:00", "timezone": "Europe/Berlin"}`
	cases := []struct {
		name     string
		schedule string
		start    string
		ticks    []tick
	}{
		{"every minute, no backlog", `{"every": "1m"}`, "2025-01-06T10:00:30Z", []tick{
			{at: "2025-01-06T10:01:29Z", runs: 0, next: "2025-01-06T10:01:30Z"},
			{at: "2025-01-06T10:01:31Z", runs: 1, slot: "2025-01-06T10:01:30Z", next: "2025-01-06T10:02:30Z"},
			// Ten slots later: one run for the missed slot, then the first slot after now.
			{at: "2025-01-06T10:11:31Z", runs: 2, slot: "2025-01-06T10:02:30Z", next: "2025-01-06T10:12:30Z"},
			{at: "2025-01-06T10:12:00Z", runs: 2, next: "2025-01-06T10:12:30Z"},
		}},
		{"09:00 Berlin is 08:00Z in winter", berlin9, "2025-01-06T07:00:00Z", []tick{
			{at: "2025-01-06T07:59:59Z", runs: 0, next: "2025-01-06T08:00:00Z"},
			{at: "2025-01-06T08:00:01Z", runs: 1, slot: "2025-01-06T08:00:00Z", next: "2025-01-07T08:00:00Z"},
			{at: "2025-01-16T08:30:00Z", runs: 2, slot: "2025-01-07T08:00:00Z", next: "2025-01-17T08:00:00Z"},
		}},
		{"09:00 Berlin is 07:00Z after the spring change", berlin9, "2025-03-29T12:00:00Z", []tick{
			{at: "2025-03-30T06:59:59Z", runs: 0, next: "2025-03-30T07:00:00Z"},
			{at: "2025-03-30T07:00:01Z", runs: 1, slot: "2025-03-30T07:00:00Z", next: "2025-03-31T07:00:00Z"},
		}},
	}
	parse := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return ts
	}
	for _, dialect := range dialects {
		for _, tc := range cases {
			t.Run(dialect+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				clock := testclock.New(parse(tc.start))
				st := store.OpenTest(t, dialect, store.WithNow(clock.Now))
				eng := newEngine(t, engine.Config{Store: st, Now: clock.Now})
				_, err := eng.CreateTable(ctx, org, "ticks", map[string]string{"slot": "text"})
				require.NoError(t, err)
				wfID := createWorkflow(t, eng, "scheduled", `{"schedule": `+tc.schedule+`, "actions": [
				  {"type": "custom-table", "properties": {"table": "ticks", "operation": "write", "fields": {"slot": "@input.schedule.slot"}}}
				]}`)
				for _, tk := range tc.ticks {
					clock.Set(parse(tk.at))
					_, err := eng.Work(ctx)
					require.NoError(t, err)
					runs := runsOf(t, eng, wfID)
					require.Len(t, runs, tk.runs, "runs at %s", tk.at)
					require.Equal(t, tk.runs, countRows(t, eng, "ticks"))
					if tk.slot != "" {
						require.Equal(t, svctype.RunCompleted, runs[0].Status, runs[0].Reason)
						var in struct {
							Schedule struct {
								Slot    string `json:"slot"`
								FiredAt string `json:"fired_at"`
							} `json:"schedule"`
						}
						require.NoError(t, json.Unmarshal(runs[0].Input, &in))
						require.Equal(t, tk.slot, in.Schedule.Slot)
						require.Equal(t, tk.at, in.Schedule.FiredAt)
					}
					jobs := store.AllJobs(t, st)
					require.Len(t, jobs, 1, "only the schedule job is left at %s", tk.at)
					require.Equal(t, svctype.JobSchedule, jobs[0].Kind)
					require.Equal(t, parse(tk.next), jobs[0].RunAt.UTC(), "the schedule job is re-armed for the next slot after %s", tk.at)
				}
			})
		}
	}
}

// Runs started in the worker's process while every slot is busy wait in the jobs table, not
// in the worker: any other worker may claim them at once (no lease held on them), in the
// order they were accepted. A drain hands the run in progress back at once.
// PostgreSQL only: on SQLite a step that blocks holds the one writer, so Execute would wait.
func TestWorkerLeavesQueuedRunsToAnyWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng := newEngine(t, engine.Config{Store: store.OpenTest(t, "postgres")})
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	var calls atomic.Int32
	eng.RegisterStep("block", func(context.Context, *svctype.StepCall) (any, error) {
		if calls.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
		return map[string]any{"ok": true}, nil
	})
	wfID := createWorkflow(t, eng, "queued", `{"actions": [{"type": "block", "properties": {}}]}`)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- worker.New(eng, worker.Options{Concurrency: 1, Poll: time.Hour, Logger: quiet}).Run(runCtx)
	}()
	var first string
	waitFor(t, 10*time.Second, 5*time.Millisecond, "the worker to take the first run", func() bool {
		if first == "" {
			first = execute(t, eng, wfID, nil)
		}
		select {
		case <-entered:
			return true
		default:
			return false
		}
	})
	waiting := []string{execute(t, eng, wfID, nil), execute(t, eng, wfID, nil)}
	claimed, err := eng.Store().ClaimJobs(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 2, "the waiting runs' jobs are free for any worker")
	require.Equal(t, waiting, []string{claimed[0].RunID, claimed[1].RunID}, "in the order they were accepted")
	for i := range claimed {
		require.NoError(t, eng.RunJob(ctx, &claimed[i]))
	}

	cancel()
	close(release)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the drain")
	}
	n, err := eng.Work(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, n, "the drained run finished its step and ended")
	for _, id := range append(waiting, first) {
		run, err := eng.GetRun(ctx, org, id)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, run.Status, id)
	}
}

// TestWorkerCountsItsClaims: svcflow_worker_jobs_claimed_total counts each job claimed,
// svcflow_worker_claims_total each claim by outcome, an idle worker's polls as empty.
func TestWorkerCountsItsClaims(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	reg := metrics.New(quiet, st, append(engine.Metrics(), worker.Metrics()...)...)
	// A slice no run outlasts, even under -race on a busy machine: a run handed back would be
	// claimed twice.
	eng := newEngine(t, engine.Config{Store: st, Meter: reg, Slice: time.Minute})
	wfID := ledgerSetup(t, eng)
	for i := range 6 {
		execute(t, eng, wfID, ledgerInput(i))
	}
	stop := startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	defer stop()
	waitFor(t, 30*time.Second, 10*time.Millisecond, "every job to be done", func() bool { return countJobs(t, eng) == 0 })
	waitFor(t, 10*time.Second, 10*time.Millisecond, "an idle poll", func() bool {
		return scrape(t, reg)[`svcflow_worker_claims_total{outcome="empty"}`] > 0
	})

	scraped := scrape(t, reg)
	value := func(series string) float64 {
		v, ok := scraped[series]
		require.True(t, ok, "%s in %v", series, scraped)
		return v
	}
	require.Equal(t, 6.0, value("svcflow_worker_jobs_claimed_total"), "each run is one job here")
	found := value(`svcflow_worker_claims_total{outcome="jobs"}`)
	require.GreaterOrEqual(t, found, 3.0, "at most 2 jobs a claim (Concurrency 2)")
	require.LessOrEqual(t, found, 6.0)
	require.Greater(t, value(`svcflow_worker_claims_total{outcome="empty"}`), 0.0, "an idle worker's polls find nothing")
}
