package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

// starts records the order in which runs' first steps begin.
type starts struct {
	mu    sync.Mutex
	order []string
	at    map[string]int
}

func newStarts() *starts { return &starts{at: map[string]int{}} }

// fairSetup returns an engine over a fresh store of dialect whose "mark" step records run
// starts, with a ledger table in each of orgs.
func fairSetup(t testing.TB, dialect string, cfg engine.Config, orgs ...string) (*engine.Engine, *starts) {
	t.Helper()
	cfg.Store = store.OpenTest(t, dialect)
	eng := newEngine(t, cfg)
	st := newStarts()
	eng.RegisterStep("mark", st.mark)
	for _, o := range orgs {
		_, err := eng.CreateTable(context.Background(), o, "ledger", map[string]string{"run": "text"})
		require.NoError(t, err)
	}
	return eng, st
}

func (s *starts) mark(_ context.Context, call *svctype.StepCall) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[call.RunID]; !ok {
		s.at[call.RunID] = len(s.order)
		s.order = append(s.order, call.RunID)
	}
	return map[string]any{"ok": true}, nil
}

// position is where run started (-1: not yet), and how many runs had started by then.
func (s *starts) position(run string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.at[run]; ok {
		return i
	}
	return -1
}

func (s *starts) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

const markFlow = `{"actions": [
  {"type": "mark", "properties": {}},
  {"type": "custom-table", "properties": {"table": "ledger", "operation": "write", "fields": {"run": "{{__run_id}}"}}},
  {"type": "mark", "properties": {}}
]}`

// burst is what runBurst measured.
type burst struct {
	runs int
	// worst is the most runs accepted after a run that started before it.
	worst    int
	worstRun string
	// latencies are the runs' times from Execute to completed, as their clients saw them.
	latencies durations
}

// runBurst runs a burst from many clients in a closed loop (each executes a run, waits for
// it to complete, and executes the next) through a worker of concurrency slots.
func runBurst(tb testing.TB, dialect string, clients, perClient, concurrency int) *burst {
	eng, st := fairSetup(tb, dialect, engine.Config{}, org)
	wfID := createWorkflow(tb, eng, "burst", markFlow)
	stop := startWorker(tb, eng, worker.Options{Concurrency: concurrency})
	defer func() { require.NoError(tb, stop()) }()

	type accepted struct {
		id string
		at time.Time
	}
	var (
		mu   sync.Mutex
		runs []accepted
		out  burst
		wg   sync.WaitGroup
	)
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				began := time.Now()
				run, err := eng.Execute(context.Background(), org, wfID, json.RawMessage(fmt.Sprintf(`{"c": %d, "i": %d}`, c, i)), engine.ExecuteOptions{})
				if err != nil {
					errs <- err
					return
				}
				status, err := eng.WaitRun(context.Background(), org, run.ID, svctype.RunRunning, 60*time.Second)
				if err != nil || status != svctype.RunCompleted {
					errs <- fmt.Errorf("run %s: %s %v", run.ID, status, err)
					return
				}
				mu.Lock()
				runs = append(runs, accepted{run.ID, run.CreatedAt})
				out.latencies.observe("", time.Since(began))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
	require.Len(tb, runs, clients*perClient)
	out.runs = len(runs)

	// How many runs accepted after a run started before it.
	slices.SortFunc(runs, func(a, b accepted) int { return a.at.Compare(b.at) })
	for i, r := range runs {
		overtaken := 0
		for _, later := range runs[i+1:] {
			if later.at.After(r.at) && st.position(later.id) < st.position(r.id) {
				overtaken++
			}
		}
		if overtaken > out.worst {
			out.worst, out.worstRun = overtaken, r.id
		}
	}
	return &out
}

// A burst from many clients in a closed loop: runs start in the order they were accepted
// (no run is overtaken by more than the runs that were claimed together with it), so none
// waits for the burst to end. (How long they take: BenchmarkBurst.)
func TestBurstRunsStartInAcceptanceOrder(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			const concurrency = 4
			got := runBurst(t, dialect, 40, 10, concurrency)
			// Runs claimed together start in any order, a batch holds up to concurrency runs, and
			// under -race on a loaded machine a slot's goroutine can be descheduled while others
			// cycle: allow a few batches. Before fair claiming, runs that fell into the table
			// were overtaken by the whole rest of the burst (hundreds here).
			require.LessOrEqual(t, got.worst, 5*concurrency, "run %s was overtaken by %d runs accepted after it", got.worstRun, got.worst)
		})
	}
}

// BenchmarkBurst is TestBurstRunsStartInAcceptanceOrder's burst, measured: 400 runs from 40
// clients in a closed loop through 4 slots, each run's time from Execute to completed
// (p50, p99, max) and the most runs accepted after one that started before it. Before fair
// claiming the p99 was 15.8 s against a p50 of 100 ms: some runs waited for the burst.
func BenchmarkBurst(b *testing.B) {
	for _, dialect := range dialects {
		b.Run(dialect, func(b *testing.B) {
			var got *burst
			for b.Loop() {
				got = runBurst(b, dialect, 40, 10, 4)
			}
			p50, p99, most := got.latencies.percentile(50), got.latencies.percentile(99), got.latencies.percentile(100)
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(most.Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(got.worst), "most-overtaken")
			b.Logf("%s: %d runs; Execute to completed p50 %v, p99 %v, max %v; most overtaken run: by %d later runs",
				dialect, got.runs, p50, p99, most, got.worst)
		})
	}
}

// backlogged is what runBacklog measured.
type backlogged struct {
	took          time.Duration // org B's run, from Execute to completed
	aheadOfB      int           // org A's runs that started between B's acceptance and its start
	leftInBacklog int           // org A's runs not started when B's completed
}

// runBacklog queues backlog runs of one organization, lets a worker of concurrency slots
// start on them, then executes one run of another organization and waits for it.
func runBacklog(tb testing.TB, dialect string, backlog, concurrency int) backlogged {
	const orgB = "org-other"
	ctx := context.Background()
	eng, st := fairSetup(tb, dialect, engine.Config{}, org, orgB)
	wfA := createWorkflow(tb, eng, "flood", markFlow)
	wB, err := eng.CreateWorkflow(ctx, orgB, engine.WorkflowInput{Name: "single", Definition: json.RawMessage(markFlow)})
	require.NoError(tb, err)
	for i := range backlog {
		execute(tb, eng, wfA, json.RawMessage(fmt.Sprintf(`{"i": %d}`, i)))
	}
	stop := startWorker(tb, eng, worker.Options{Concurrency: concurrency})
	defer func() { require.NoError(tb, stop()) }()
	waitFor(tb, 30*time.Second, time.Millisecond, "the backlog to start draining", func() bool { return st.count() >= 20 })

	began := time.Now()
	run, err := eng.Execute(ctx, orgB, wB.ID, nil, engine.ExecuteOptions{})
	require.NoError(tb, err)
	startedBefore := st.count() // B's run is accepted: every A run counted below started after
	if pos := st.position(run.ID); pos >= 0 {
		startedBefore = pos
	}
	status, err := eng.WaitRun(ctx, orgB, run.ID, svctype.RunRunning, 60*time.Second)
	require.NoError(tb, err)
	require.Equal(tb, svctype.RunCompleted, status)
	return backlogged{took: time.Since(began), aheadOfB: st.position(run.ID) - startedBefore, leftInBacklog: backlog - st.count()}
}

// One organization's backlog of a thousand runs does not hold back another organization's
// run: it starts within about one claim per busy slot, while the backlog is still there.
// (How long it takes: BenchmarkBacklog.)
func TestAnotherOrganizationIsNotHeldBackByABacklog(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			const backlog, concurrency = 1000, 4
			got := runBacklog(t, dialect, backlog, concurrency)
			t.Logf("%s: %d of org A's runs started between org B's acceptance and its start; %d of A's runs had not started yet",
				dialect, got.aheadOfB, got.leftInBacklog)
			require.LessOrEqual(t, got.aheadOfB, 2*concurrency, "org B's run waited behind org A's backlog")
			require.Greater(t, got.leftInBacklog, backlog/2, "org B's run was not served only because the backlog ran out")
		})
	}
}

// BenchmarkBacklog is TestAnotherOrganizationIsNotHeldBackByABacklog, measured: how long
// another organization's run takes from Execute to completed beside a backlog of 1,000 runs
// (4 slots), and how many of the backlog's runs started before it.
func BenchmarkBacklog(b *testing.B) {
	for _, dialect := range dialects {
		b.Run(dialect, func(b *testing.B) {
			var got backlogged
			for b.Loop() {
				got = runBacklog(b, dialect, 1000, 4)
			}
			b.ReportMetric(float64(got.took.Microseconds())/1000, "other-org-run-ms")
			b.ReportMetric(float64(got.aheadOfB), "backlog-runs-ahead")
			b.Logf("%s: org B's run completed in %v; %d of org A's runs started between its acceptance and its start",
				dialect, got.took, got.aheadOfB)
		})
	}
}

// Runs longer than the slice share the slots: with every slot held by one organization's
// long runs, another organization's short run finishes long before any of them.
func TestLongRunsShareTheSlots(t *testing.T) {
	t.Parallel()
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			const (
				concurrency = 2
				orgB        = "org-short"
			)
			ctx := context.Background()
			eng, st := fairSetup(t, dialect, engine.Config{Slice: 20 * time.Millisecond})
			eng.RegisterStep("slow", func(context.Context, *svctype.StepCall) (any, error) {
				// Stands for an element's work, so that a long run outlasts its slice (the
				// slice is measured on the wall clock): it waits for nothing.
				time.Sleep(3 * time.Millisecond)
				return map[string]any{"ok": true}, nil
			})
			items := make([]int, 150)
			long := createWorkflow(t, eng, "long", `{"actions": [
				{"type": "mark", "properties": {}},
				{"type": "loop", "properties": {"mode": "foreach", "items": "@input.items",
				  "steps": [{"type": "slow", "properties": {}}]}}]}`)
			short, err := eng.CreateWorkflow(ctx, orgB, engine.WorkflowInput{Name: "short", Definition: json.RawMessage(`{"actions": [{"type": "mark", "properties": {}}]}`)})
			require.NoError(t, err)
			in, err := json.Marshal(map[string]any{"items": items})
			require.NoError(t, err)
			var longRuns []string
			for range concurrency {
				longRuns = append(longRuns, execute(t, eng, long, in))
			}
			startWorker(t, eng, worker.Options{Concurrency: concurrency})
			waitFor(t, 30*time.Second, time.Millisecond, "the long runs to start", func() bool { return st.count() == concurrency })

			run, err := eng.Execute(ctx, orgB, short.ID, nil, engine.ExecuteOptions{})
			require.NoError(t, err)
			status, err := eng.WaitRun(ctx, orgB, run.ID, svctype.RunRunning, 60*time.Second)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, status)
			for _, id := range longRuns {
				r, err := eng.GetRun(ctx, org, id)
				require.NoError(t, err)
				require.Equal(t, svctype.RunRunning, r.Status, "the short run finished while the long ones still ran")
			}
			for _, id := range longRuns {
				status, err := eng.WaitRun(ctx, org, id, svctype.RunRunning, 60*time.Second)
				require.NoError(t, err)
				require.Equal(t, svctype.RunCompleted, status, "a run handed back at every slice still completes")
			}
		})
	}
}
