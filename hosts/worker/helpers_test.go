package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

const (
	org = "acme"

	// The helper worker process (TestHelperWorker) is configured by these.
	envHelper            = "SVC_HELPER_WORKER"
	envHelperDSN         = "SVC_HELPER_DSN"
	envHelperLease       = "SVC_HELPER_LEASE"
	envHelperConcurrency = "SVC_HELPER_CONCURRENCY"
	envHelperPoll        = "SVC_HELPER_POLL"
	// helperReady is the line the helper prints once its worker is about to claim.
	helperReady = "svcflow-helper-worker-ready"
)

// dialects are the stores the tests run on; postgres skips without SVC_TEST_POSTGRES_DSN.
var dialects = []string{"sqlite", "postgres"}

var quiet = testlog.Quiet()

// ledgerFlow is the three-step workflow of the tests and benchmarks: an upsert keyed on the
// input id, a filtered read with a where, and a plain insert whose field is a template (one
// ledger row per run: a duplicate would reveal a step applied twice).
const ledgerFlow = `{"actions": [
  {"type": "custom-table", "outputKey": "account",
   "properties": {"table": "accounts", "operation": "upsert", "keys": ["id"], "values": ["@input.id"],
                  "fields": {"amount": "@input.amount"}}},
  {"type": "custom-table", "outputKey": "big",
   "filter": {"condition": {"greaterThan": ["@input.amount", 10]}},
   "properties": {"table": "accounts", "operation": "read", "where": {"id": "@input.id"}}},
  {"type": "custom-table", "outputKey": "note",
   "properties": {"table": "ledger", "operation": "write",
                  "fields": {"run": "{{__run_id}}", "text": "{{input.id}} moved {{input.amount}}"}}}
]}`

// ledgerSetup declares ledgerFlow's tables and the workflow, and returns its id.
func ledgerSetup(tb testing.TB, eng *engine.Engine) string {
	tb.Helper()
	ctx := context.Background()
	_, err := eng.CreateTable(ctx, org, "accounts", map[string]string{"id": "text", "amount": "number"})
	require.NoError(tb, err)
	_, err = eng.CreateTable(ctx, org, "ledger", map[string]string{"run": "text", "text": "text"})
	require.NoError(tb, err)
	return createWorkflow(tb, eng, "ledger", ledgerFlow)
}

func ledgerInput(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id": "acct-%d", "amount": %d}`, i%50, i%20))
}

func createWorkflow(tb testing.TB, eng *engine.Engine, name, def string) string {
	tb.Helper()
	w, err := eng.CreateWorkflow(context.Background(), org, engine.WorkflowInput{Name: name, Definition: json.RawMessage(def)})
	require.NoError(tb, err)
	return w.ID
}

func execute(tb testing.TB, eng *engine.Engine, wfID string, input json.RawMessage) string {
	tb.Helper()
	run, err := eng.Execute(context.Background(), org, wfID, input, engine.ExecuteOptions{})
	require.NoError(tb, err)
	return run.ID
}

func countRows(tb testing.TB, eng *engine.Engine, table string) int {
	tb.Helper()
	rows, err := eng.ReadRows(context.Background(), org, table, nil, 0)
	require.NoError(tb, err)
	return len(rows)
}

func countJobs(tb testing.TB, eng *engine.Engine) int {
	tb.Helper()
	return store.CountAllJobs(tb, eng.Store())
}

// sharedDSN returns the DSN of a fresh database that other processes can open too: a SQLite
// file in a temporary directory, or a PostgreSQL schema of its own (skipped without
// SVC_TEST_POSTGRES_DSN).
func sharedDSN(tb testing.TB, dialect string) string {
	tb.Helper()
	return store.NewTestDSN(tb, dialect)
}

// openStore opens (with opts) and migrates the database at dsn; it is closed at cleanup.
func openStore(tb testing.TB, dsn string, opts ...store.Option) *store.Store {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	require.NoError(tb, st.Migrate(ctx))
	return st
}

func newEngine(tb testing.TB, cfg engine.Config) *engine.Engine {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	eng, err := engine.New(cfg)
	require.NoError(tb, err)
	if _, bench := tb.(*testing.B); !bench {
		// Checking every event against its schema runs in the event sinks, inside the
		// transaction that emits it: a tenth of a run's CPU in BenchmarkRuns, which times
		// the service, not its tests. The tests of this package check the contract.
		contracttest.WatchEvents(tb, eng)
	}
	return eng
}

// startWorker runs worker.Run in the background. The returned stop cancels it, waits for it
// to return (drain included) and gives Run's error; cleanup stops it too.
func startWorker(tb testing.TB, eng *engine.Engine, opts worker.Options) (stop func() error) {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(eng, opts).Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	tb.Cleanup(func() { _ = stop() })
	return stop
}

// waitFor polls cond every interval until it holds, failing tb after timeout.
func waitFor(tb testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(interval) // polls for cond to hold: a wait for something to happen
	}
}

// durations collects what a StepObserver is told.
type durations struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *durations) observe(_ string, d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// percentile returns the p-th percentile (0 < p <= 100) of the observed durations.
func (s *durations) percentile(p float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.d) == 0 {
		return 0
	}
	sorted := slices.Clone(s.d)
	slices.Sort(sorted)
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (s *durations) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.d)
}

// syncBuffer is a bytes.Buffer safe to read while a child process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// helperProc is a worker running in a child process (TestHelperWorker).
type helperProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	ready  chan struct{}
	exited chan struct{}
}

// startHelper starts TestHelperWorker in a child process of this test binary against dsn.
// Cleanup kills it if it still runs.
func startHelper(tb testing.TB, dsn string, lease time.Duration, concurrency int, poll time.Duration) *helperProc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envHelper+"=1",
		envHelperDSN+"="+dsn,
		envHelperLease+"="+lease.String(),
		envHelperConcurrency+"="+strconv.Itoa(concurrency),
		envHelperPoll+"="+poll.String(),
	)
	h := &helperProc{cmd: cmd, stderr: &syncBuffer{}, ready: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = h.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.TrimSpace(sc.Text()) == helperReady {
				close(h.ready)
				signalled = true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(h.exited)
	}()
	tb.Cleanup(func() {
		h.kill()
		if tb.Failed() {
			tb.Logf("helper worker stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

// waitReady waits for the helper to have opened its store and started its worker.
func (h *helperProc) waitReady(tb testing.TB) {
	tb.Helper()
	select {
	case <-h.ready:
	case <-h.exited:
		tb.Fatalf("helper worker exited before it was ready: %s\n%s", h.cmd.ProcessState, h.stderr.String())
	case <-time.After(60 * time.Second):
		tb.Fatalf("helper worker not ready after 60s:\n%s", h.stderr.String())
	}
}

// alive reports whether the helper process is still running.
func (h *helperProc) alive() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (h *helperProc) kill() {
	if h.alive() {
		_ = h.cmd.Process.Kill()
	}
	<-h.exited
}

// runsOf lists a workflow's runs, newest first.
func runsOf(tb testing.TB, eng *engine.Engine, wfID string) []svctype.Run {
	tb.Helper()
	page, err := eng.ListRuns(context.Background(), org, engine.RunFilter{WorkflowID: wfID, ListOptions: svctype.ListOptions{Limit: 100}})
	require.NoError(tb, err)
	return page.Items
}
