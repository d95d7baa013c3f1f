package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcflow/svcflow/internal/svcbin"
)

// The load mode (make load): the figures of issue 21 from the outside, each phase against
// fresh svcflow processes on loopback:
//
//   - sqlite: `svcflow serve` on a SQLite file, the wait mode's closed loop of ledger runs:
//     runs/s, run latency, and step latency from the step histogram (metrics.go);
//   - postgres-Kw: a fresh PostgreSQL database, `svcflow migrate`, one `svcflow runtime` and
//     K `svcflow worker` processes, the same runs, for each K of -pg-workers;
//   - webhooks: runs of an empty workflow whose workflow.started and workflow.completed are
//     registered to a receiver of this program: deliveries/s and event to delivery;
//   - gateway: serve's gateway with a runtime key, GET /workflows/{id} from many clients,
//     and the same route on the runtime directly.
//
// Each phase prints its own detail; then one table of every figure beside the baseline's
// (figures.go).

// loadOptions are the load mode's sizes.
type loadOptions struct {
	options
	pgDSN      string // a database on the server where the phases' databases are created
	pgWorkers  []int  // worker processes of each PostgreSQL phase; none: no PostgreSQL
	hookRuns   int    // runs of the webhook phase (two deliveries each)
	gwRequests int    // requests of each gateway phase
	gwClients  int
}

// loadOrg is the organization of the run phases; the webhook and gateway phases have their own.
const loadOrg = orgA

// loadRun runs every phase and returns the figures, and a description of the machine. A
// phase that fails (PostgreSQL restarting, a server dying) is reported and the next one
// runs: the error joins every phase's.
func loadRun(ctx context.Context, bin, dir string, o loadOptions) ([]figure, string, error) {
	var figs []figure
	var errs []error
	phase := func(name string, fn func() ([]figure, error)) {
		if ctx.Err() != nil {
			return
		}
		got, err := fn()
		figs = append(figs, got...)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchhttp: load: %s: %v\n", name, err)
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	phase("sqlite", func() ([]figure, error) { return sqlitePhase(ctx, bin, filepath.Join(dir, "sqlite"), o) })
	pgVersion := ""
	if len(o.pgWorkers) > 0 {
		pg, err := openPGAdmin(ctx, o.pgDSN)
		if err != nil {
			errs = append(errs, fmt.Errorf("postgres: %w", err))
		}
		for _, k := range o.pgWorkers {
			if pg == nil {
				break
			}
			pgVersion = pg.version
			phase(pgLabel(k), func() ([]figure, error) {
				return pgPhaseAgain(ctx, pg, func(try int) ([]figure, error) {
					return postgresPhase(ctx, bin, filepath.Join(dir, fmt.Sprintf("postgres-%dw-%d", k, try)), o, pg, k)
				})
			})
		}
	}
	phase("webhooks", func() ([]figure, error) { return webhookPhase(ctx, bin, filepath.Join(dir, "webhooks"), o) })
	phase("gateway", func() ([]figure, error) { return gatewayPhase(ctx, bin, filepath.Join(dir, "gateway"), o) })
	if ctx.Err() != nil {
		errs = append(errs, context.Cause(ctx))
	}
	return figs, machine(pgVersion), errors.Join(errs...)
}

// pgLabel names the PostgreSQL phase of k worker processes.
func pgLabel(k int) string {
	if k == 1 {
		return "postgres, 1 worker"
	}
	return fmt.Sprintf("postgres, %d workers", k)
}

// pgPhaseAgain runs a PostgreSQL phase, and runs it once more when PostgreSQL restarted
// during it (its start time changed): what it measured then was the restart, whether or
// not runs failed. Another program on the machine may restart PostgreSQL at any time.
func pgPhaseAgain(ctx context.Context, pg *pgAdmin, phase func(try int) ([]figure, error)) ([]figure, error) {
	for try := 1; ; try++ {
		before, err := pg.startTime(ctx)
		if err != nil {
			return nil, err
		}
		figs, err := phase(try)
		after, serr := pg.startTime(ctx)
		if serr != nil {
			return figs, errors.Join(err, serr)
		}
		if after.Equal(before) || try == 2 || ctx.Err() != nil {
			if !after.Equal(before) {
				err = errors.Join(err, errors.New("PostgreSQL restarted during this phase twice: its figures include a restart"))
			}
			return figs, err
		}
		fmt.Printf("  PostgreSQL restarted during this phase (at %s): measuring it again\n", after.Format(time.TimeOnly))
	}
}

// stopAll stops every process at once and joins what they report.
func stopAll(procs ...*server) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// watch cancels the returned context when any of procs exits, so clients stop at once
// instead of counting refused connections.
func watch(ctx context.Context, procs ...*server) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	for _, p := range procs {
		go func() {
			select {
			case <-p.exited:
				cancel(fmt.Errorf("svcflow exited during the benchmark (%s): see %s", p.exitErr, p.logPath))
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// phaseServe is the one `svcflow serve` of a load phase: the process, a context that
// ends when it exits (watch), and a client of conns connections.
type phaseServe struct {
	srv    *server
	c      *client
	cancel context.CancelCauseFunc
}

// startPhaseServe starts `svcflow args` with its log in dir/server.log, answering at base
// once healthURL does.
func startPhaseServe(ctx context.Context, bin, dir string, args []string, base, healthURL string, conns int) (*phaseServe, context.Context, error) {
	srv, err := startProcess(ctx, bin, filepath.Join(dir, "server.log"), args, nil, base, healthURL)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := watch(ctx, srv)
	return &phaseServe{srv: srv, c: newClient(srv.base, conns), cancel: cancel}, ctx, nil
}

// stop closes the client and stops the process, joining its error to *errp.
func (p *phaseServe) stop(errp *error) {
	p.c.close()
	p.cancel(nil)
	*errp = errors.Join(*errp, p.srv.stop())
}

// serveArgs is `svcflow serve` on dir/bench.db at addr with no gateway (the default
// 127.0.0.1:8081 may be another program's), then extra.
func serveArgs(dir, addr string, workers int, extra ...string) []string {
	return append([]string{"serve", "--db", "sqlite:" + filepath.Join(dir, "bench.db"), "--runtime-addr", addr,
		"--gateway-addr", "", "--workers", fmt.Sprint(workers)}, extra...)
}

// freeAddrs returns n loopback addresses.
func freeAddrs(n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		a, err := svcbin.FreeAddr()
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// runFigures measures the ledger runs of one phase: setup, the step histograms of metrics
// (each process's /metrics URL) before, the closed loop, the histograms after.
func runFigures(ctx context.Context, c *client, phase, label string, metrics []string, o loadOptions) ([]figure, error) {
	wfID, err := c.setupLedger(ctx, loadOrg)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	claims := map[string]float64{} // after minus before, summed over processes
	scrape := func(sign float64) (histogram, error) {
		var sum histogram
		for _, u := range metrics {
			h, err := scrapeHistogram(ctx, c.hc, u, stepHistogram)
			if err != nil {
				return histogram{}, err
			}
			sum = sum.add(h)
			cs, err := scrapeCounter(ctx, c.hc, u, claimsCounter)
			if err != nil {
				return histogram{}, err
			}
			for k, v := range cs {
				claims[k] += sign * v
			}
		}
		return sum, nil
	}
	before, err := scrape(-1)
	if err != nil {
		return nil, err
	}
	r, err := drive(ctx, c, "wait", wfID, "", o.options)
	if err != nil {
		return nil, err
	}
	after, err := scrape(1)
	if err != nil {
		return nil, err
	}
	if n := r.failures.count(); n > 0 {
		return nil, fmt.Errorf("%d of %d runs failed: %v", n, r.runs, r.failures.reasons())
	}
	steps := after.sub(before)
	fmt.Printf("  %.0f steps committed (%.1f a run); step latency from %s: p50 %s, p99 %s, interpolated in the histogram's buckets\n",
		steps.total(), steps.total()/float64(max(r.completed, 1)), stepHistogram, fmtDur(steps.quantile(.5)), fmtDur(steps.quantile(.99)))
	empty, found := claims[`{outcome="empty"}`], claims[`{outcome="jobs"}`]
	fmt.Printf("  %.0f claims by the workers (%.2f a run): %.0f found jobs, %.0f found none (%s)\n",
		empty+found, (empty+found)/float64(max(r.completed, 1)), found, empty, claimsCounter)
	return []figure{
		rate(phase+".runs_per_s", label+": runs/s", float64(r.completed)/r.elapsed.Seconds()),
		latency(phase+".run_p50_ms", label+": run p50", r.percentile(50)),
		latency(phase+".run_p99_ms", label+": run p99", r.percentile(99)),
		latency(phase+".step_p50_ms", label+": step p50", steps.quantile(.5)),
		latency(phase+".step_p99_ms", label+": step p99", steps.quantile(.99)),
	}, nil
}

// sqlitePhase: svcflow serve on a SQLite file.
func sqlitePhase(ctx context.Context, bin, dir string, o loadOptions) (figs []figure, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	p, ctx, err := startPhaseServe(ctx, bin, dir, serveArgs(dir, addrs[0], o.workers, "--ops-addr", addrs[1]),
		"http://"+addrs[0], "http://"+addrs[0]+"/health", o.clients+8)
	if err != nil {
		return nil, err
	}
	defer p.stop(&err)
	c := p.c
	o.pids = []int{p.srv.cmd.Process.Pid}
	fmt.Printf("\nsqlite: svcflow serve --workers %d, %d clients, %d runs of the wait mode\n", o.workers, o.clients, o.runs)
	figs, err = runFigures(ctx, c, "sqlite", "sqlite", []string{"http://" + addrs[1] + "/metrics"}, o)
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return figs, err
}

// postgresPhase: a fresh database on pg, svcflow migrate, one svcflow runtime and k svcflow
// worker processes.
func postgresPhase(ctx context.Context, bin, dir string, o loadOptions, pg *pgAdmin, k int) (figs []figure, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("load_%d_%dw", os.Getpid(), k)
	dsn, err := pg.create(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pg.drop(name)) }()
	if err := retrySetup(ctx, "svcflow migrate", func() error { return migrate(ctx, bin, dsn, filepath.Join(dir, "migrate.log")) }); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := []string{"SVC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key)}

	addrs, err := freeAddrs(1 + 2*k)
	if err != nil {
		return nil, err
	}
	rt, err := startProcess(ctx, bin, filepath.Join(dir, "runtime.log"),
		[]string{"runtime", "--db", dsn, "--runtime-addr", addrs[0]}, env, "http://"+addrs[0], "http://"+addrs[0]+"/health")
	if err != nil {
		return nil, err
	}
	procs := []*server{rt}
	defer func() { err = errors.Join(err, stopAll(procs...)) }()
	var metrics []string
	for i := range k {
		ops, health := addrs[1+2*i], addrs[2+2*i]
		w, err := startProcess(ctx, bin, filepath.Join(dir, fmt.Sprintf("worker-%d.log", i+1)),
			[]string{"worker", "--db", dsn, "--workers", fmt.Sprint(o.workers), "--ops-addr", ops, "--health-addr", health},
			env, "", "http://"+health+"/readyz")
		if err != nil {
			return nil, err
		}
		procs = append(procs, w)
		metrics = append(metrics, "http://"+ops+"/metrics")
	}
	ctx, cancel := watch(ctx, procs...)
	defer cancel(nil)
	c := newClient(rt.base, o.clients+8)
	defer c.close()
	for _, p := range procs {
		o.pids = append(o.pids, p.cmd.Process.Pid)
	}
	label := pgLabel(k)
	fmt.Printf("\n%s: svcflow runtime and %d svcflow worker --workers %d, %d clients, %d runs of the wait mode\n", label, k, o.workers, o.clients, o.runs)
	figs, err = runFigures(ctx, c, fmt.Sprintf("postgres_%dw", k), label, metrics, o)
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return figs, err
}

// pace is how long setup waits between tries of a step PostgreSQL may interrupt.
const pace = 2 * time.Second

// retrySetup tries fn for up to a minute: PostgreSQL may be restarting (another program on
// the machine restarts it at times).
func retrySetup(ctx context.Context, what string, fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		fmt.Fprintf(os.Stderr, "benchhttp: %s: %v; trying again\n", what, err)
		if err := sleep(ctx, pace); err != nil {
			return err
		}
	}
}

// pgEnv is store.PostgresDSNEnv, the test suite's PostgreSQL (not imported: this tool
// speaks to svcflow from the outside only).
const pgEnv = "SVC_TEST_POSTGRES_DSN"

// defaultPGDSN is the test suite's PostgreSQL when it is set, else the local server's
// postgres database.
func defaultPGDSN() string {
	if v := os.Getenv(pgEnv); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// parseWorkers reads -pg-workers: "1,2,4", or "" for none.
func parseWorkers(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-pg-workers: %q is not a process count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadBaseline is what the load mode does with its baseline file.
type loadBaseline struct {
	path string
	// save replaces the file with the figures (after comparing), keeping note.
	save bool
	note string
	// failOnRegression makes a REGRESSION exit 1.
	failOnRegression bool
}

// loadMain runs the load mode, prints the table of figures beside the baseline's, saves
// them as the new baseline when asked, and returns the exit code.
func loadMain(ctx context.Context, bin, dir string, o loadOptions, b loadBaseline) int {
	pg := "no PostgreSQL"
	if len(o.pgWorkers) > 0 {
		pg = fmt.Sprintf("PostgreSQL with %v worker processes", o.pgWorkers)
	}
	fmt.Printf("benchhttp -mode load: %s; SQLite and %s; %d clients, %d runs a phase, %d step slots a process; %d webhook runs; %d gateway requests from %d clients; %d CPUs, shared by the servers and this tool%s\n",
		filepath.Base(bin), pg, o.clients, o.runs, o.workers, o.hookRuns, o.gwRequests, o.gwClients, runtime.NumCPU(), loadAverage())
	figs, mach, err := loadRun(ctx, bin, dir, o)
	bl, berr := readBaseline(b.path)
	switch {
	case errors.Is(berr, fs.ErrNotExist):
		fmt.Printf("\nno baseline at %s (-save-baseline writes one)\n", b.path)
	case berr != nil:
		fmt.Fprintln(os.Stderr, "benchhttp:", berr)
		return 1
	}
	fmt.Printf("\nmake load: every figure (%s)\n", mach)
	regressions := compare(os.Stdout, figs, bl)
	if bl != nil {
		fmt.Printf("baseline: %s, %s\n", bl.Taken, bl.Machine)
		if bl.Note != "" {
			fmt.Printf("  %s\n", bl.Note)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchhttp: load:", err)
		return 1
	}
	if b.save {
		if err := writeBaseline(b.path, mach, b.note, figs); err != nil {
			fmt.Fprintln(os.Stderr, "benchhttp:", err)
			return 1
		}
		fmt.Printf("saved as the new baseline in %s\n", b.path)
		return 0
	}
	if regressions > 0 {
		fmt.Printf("%d figures lost more than %.0f %% against the baseline (REGRESSION); the machine's noise can do that: run again before believing it\n",
			regressions, 100*(1-regressionRatio))
		if b.failOnRegression {
			return 1
		}
	}
	return 0
}
