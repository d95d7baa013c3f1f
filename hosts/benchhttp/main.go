// Command benchhttp is a benchmark tool, not part of the service: it measures svcflow from
// the outside, over HTTP, the way a tenant's program sees it. It builds the svcflow binary,
// starts `svcflow serve` on a SQLite file in a temporary directory, drives it with many
// concurrent HTTP clients, and stops it (SIGTERM) at the end. Every run executes the
// three-step ledger workflow of `make bench-runs` (hosts/worker/bench_test.go) with the same
// input shape, so that its figures compare with that in-process benchmark's.
//
// The latency of a run is the time from sending its execute request to seeing it in a status
// other than running; every run's latency is kept, and each mode prints runs/s and the p50,
// p90, p99 and largest latency. Modes:
//
//   - wait: -clients clients in a closed loop execute -runs runs in all with
//     POST /workflows/{id}/execute?wait=30s, following a run that is still running with
//     GET /runs/{id}/status?wait=30s until it is not.
//   - poll: the same, but execute answers at once and the client asks for the status every
//     20 ms.
//   - form: the wait mode, but each run is started by a visitor's submission to a public
//     external form (POST /forms/public/{formId}/submit, no X-Org-Id) whose trigger is the
//     ledger workflow.
//   - fair: organization bench-a floods -backlog fire-and-forget runs from 50 clients while
//     organization bench-b executes one run at a time (one every 250 ms at most) with
//     ?wait=30s; it prints bench-b's latencies, how many bench-a runs were still running
//     when each bench-b run was sent, and how long bench-a's backlog took to drain.
//
// Each mode gets a fresh server and database, so no mode measures on another's leftovers.
// The tool exits 1 when a request or a run failed.
//
// -mode load (make load, loadmode.go) is issue 21's set of figures, each from fresh
// processes: the wait mode's runs on SQLite and on PostgreSQL with 1, 2 and 4 worker
// processes (runs/s, run and step latency p50/p99), webhook deliveries/s, and gateway
// requests/s. It ends with one table of every figure beside the baseline file's
// (-baseline, docs/load-baseline.json), flagging a figure that lost more than 20 % as
// REGRESSION (printed; -fail-on-regression exits 1 then); -save-baseline then replaces the
// file with these figures.
//
//	go run ./hosts/benchhttp [-mode all] [-clients 100] [-runs 3000] [-backlog 10000] [-binary PATH] [-keep]
//	go run ./hosts/benchhttp -mode load [-runs 3000] [-pg DSN] [-pg-workers 1,2,4] [-hook-runs 2000] [-gateway-requests 30000] [-save-baseline [-baseline-note TEXT]] [-fail-on-regression]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/svcflow/svcflow/internal/svcbin"
)

// modes are the benchmarks -mode all runs, in this order.
var modes = []string{"wait", "poll", "form", "fair"}

// options are the command line's settings.
type options struct {
	clients, runs, backlog, workers int
	// keys is how many distinct account keys the runs use.
	keys int
	// pids are the svcflow processes whose CPU time a closed loop measures (cpu.go).
	pids []int
}

func main() {
	os.Exit(run())
}

func run() int {
	mode := flag.String("mode", "all", "wait, poll, form, fair, all, match (the matcher end to end on -data) or load (make load: every figure of issue 21)")
	clients := flag.Int("clients", 100, "concurrent clients of the wait and poll modes")
	runs := flag.Int("runs", 3000, "runs executed in all by the wait and poll modes")
	backlog := flag.Int("backlog", 10_000, "runs bench-a floods the server with in the fair mode")
	workers := flag.Int("workers", 4, "svcflow serve --workers (4, as make bench-runs)")
	binary := flag.String("binary", "", "an svcflow binary to start instead of building ./hosts/svcflow")
	keep := flag.Bool("keep", false, "keep the temporary directory: each mode's database and server log")
	keys := flag.Int("keys", 50, "distinct account keys the runs upsert and read (the accounts table grows to that many rows)")
	data := flag.String("data", "", "the match mode's directory of records (go run ./match/cmd/benchmatch -write DIR)")
	repeat := flag.Int("repeat", 3, "how many times the match mode runs each variant")
	matchVariants := flag.String("variants", "inline,doc", "match: the variants to run, inline (the records in the execute body) and doc (doc: references to the CSV files)")
	docFiles := flag.Bool("doc-files", false, "match: start the server with --documents-dir, document content as files instead of in the database")
	pageSize := flag.Int("page", 10_000, "match: with -read pages, the elements read a page (GET /runs/{id}/context/{key}?limit=)")
	readResult := flag.String("read", "ndjson", "match: how the client reads the result, ndjson (streamed whole, Accept: application/x-ndjson) or pages (the paged JSON answer)")
	flag.StringVar(&opsAddr, "ops-addr", "", "start the server with --ops-addr ADDR: /metrics and Go's profiler at http://ADDR/debug/pprof/ while the bench runs")
	pgDSN := flag.String("pg", defaultPGDSN(), "load: a PostgreSQL database whose server gets the load_<pid>_<k>w databases (default: "+pgEnv+", else the local postgres database)")
	pgWorkers := flag.String("pg-workers", "1,2,4", "load: svcflow worker processes of each PostgreSQL phase; \"\" for none")
	hookRuns := flag.Int("hook-runs", 2000, "load: runs of the webhook phase, two deliveries each")
	gwRequests := flag.Int("gateway-requests", 30_000, "load: requests of the gateway phase, through the gateway and then directly")
	gwClients := flag.Int("gateway-clients", 64, "load: concurrent clients of the gateway phase")
	baselinePath := flag.String("baseline", "docs/load-baseline.json", "load: the file of previous figures the figures are compared with")
	saveBaseline := flag.Bool("save-baseline", false, "load: compare with -baseline, then replace it with these figures")
	baselineNote := flag.String("baseline-note", "", "load, with -save-baseline: a note the baseline keeps (how quiet the machine was)")
	failOnRegression := flag.Bool("fail-on-regression", false, "load: exit 1 when a figure is a REGRESSION (by default it is only printed: the machine is noisy)")
	flag.Parse()

	selected := modes
	if *mode == "load" {
		selected = nil
	} else if *mode == "match" {
		if *data == "" {
			fmt.Fprintln(os.Stderr, "benchhttp: -mode match needs -data DIR")
			return 2
		}
		selected = nil
	} else if *mode != "all" {
		selected = []string{*mode}
	}
	for _, m := range selected {
		if !slices.Contains(modes, m) {
			fmt.Fprintf(os.Stderr, "benchhttp: unknown -mode %q (wait, poll, form, fair, all, match or load)\n", *mode)
			return 2
		}
	}
	if *clients < 1 || *runs < 1 || *backlog < 1 || *workers < 1 || *keys < 1 {
		fmt.Fprintln(os.Stderr, "benchhttp: -clients, -runs, -backlog, -workers and -keys must be at least 1")
		return 2
	}
	opts := options{clients: *clients, runs: *runs, backlog: *backlog, workers: *workers, keys: *keys}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "benchhttp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchhttp:", err)
		return 1
	}
	if *keep {
		defer fmt.Printf("\nkept %s (each mode's bench.db and server.log)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	bin := *binary
	if bin == "" {
		if bin, err = svcbin.Build(ctx, dir); err != nil {
			fmt.Fprintln(os.Stderr, "benchhttp:", err)
			return 1
		}
	}
	if *mode == "load" {
		ws, err := parseWorkers(*pgWorkers)
		if err != nil || *hookRuns < 1 || *gwRequests < 1 || *gwClients < 1 {
			fmt.Fprintln(os.Stderr, "benchhttp: -pg-workers is a list of process counts (1,2,4); -hook-runs, -gateway-requests and -gateway-clients are at least 1")
			return 2
		}
		lo := loadOptions{options: opts, pgDSN: *pgDSN, pgWorkers: ws, hookRuns: *hookRuns, gwRequests: *gwRequests, gwClients: *gwClients}
		return loadMain(ctx, bin, dir, lo, loadBaseline{path: *baselinePath, save: *saveBaseline, note: *baselineNote, failOnRegression: *failOnRegression})
	}
	fmt.Printf("benchhttp: %s serve --workers %d on SQLite files in %s; %d clients, %d runs (wait, poll), a backlog of %d (fair), %d distinct keys; %d CPUs, shared by the server and this tool\n",
		filepath.Base(bin), opts.workers, dir, opts.clients, opts.runs, opts.backlog, opts.keys, runtime.NumCPU())

	if *mode == "match" {
		if err := matchMode(ctx, bin, filepath.Join(dir, "match"), *data, opts.workers, *repeat, *readResult, *pageSize, strings.Split(*matchVariants, ","), *docFiles); err != nil {
			fmt.Fprintln(os.Stderr, "benchhttp: match:", err)
			return 1
		}
		return 0
	}
	var all []result
	failed := false
	for _, m := range selected {
		rs, err := runMode(ctx, m, bin, filepath.Join(dir, m), opts)
		all = append(all, rs...)
		for _, r := range rs {
			failed = failed || r.failures.count() > 0
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchhttp: %s: %v\n", m, err)
			return 1
		}
	}
	if len(selected) > 1 {
		fmt.Println("\nall modes")
		printTable(os.Stdout, all)
	}
	if failed {
		fmt.Println("FAIL: some requests or runs failed")
		return 1
	}
	return 0
}

// runMode starts a server with its own database in dir, runs one mode against it and stops
// the server, whatever happened.
func runMode(ctx context.Context, mode, bin, dir string, opts options) (rs []result, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, bin, dir, opts.workers)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := srv.stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	// Clients stop as soon as the server dies, instead of counting refused connections.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-srv.exited:
			cancel(fmt.Errorf("svcflow exited during the benchmark (%s): see %s", srv.exitErr, srv.logPath))
		case <-ctx.Done():
		}
	}()

	conns := opts.clients
	if mode == "fair" {
		conns = floodClients
	}
	c := newClient(srv.base, conns+8)
	c.keys = opts.keys
	opts.pids = []int{srv.cmd.Process.Pid}
	defer c.close()

	switch mode {
	case "wait", "poll", "form":
		var r result
		r, err = closedLoop(ctx, c, mode, opts)
		rs = []result{r}
	case "fair":
		rs, err = fair(ctx, c, filepath.Join(dir, "bench.db"), opts)
	}
	if ctx.Err() != nil {
		// Interrupted, or the server died: say so rather than what a client saw then.
		err = context.Cause(ctx)
	}
	return rs, err
}
