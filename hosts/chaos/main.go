// Command chaos is a test tool, not part of the service: it runs the real svcflow binary
// under failure and checks that nothing was lost or done twice (`make chaos`). It builds
// svcflow, starts it, drives it over HTTP with a mixed workload while it kills processes,
// then lets everything settle and checks what the service recorded against what the
// workload asked for and what a webhook receiver saw.
//
// Scenarios (-scenario all runs both, one after the other):
//
//   - postgres: a fresh database on the machine's PostgreSQL (created, migrated, dropped at
//     the end), one `svcflow runtime` and three `svcflow worker` processes; a random worker
//     is killed with SIGKILL every 2-4 s and started again; PostgreSQL itself is restarted
//     once halfway (pg_ctlcluster, the machine's Debian cluster; -pg-restart=false skips it).
//   - sqlite: one `svcflow serve` on a SQLite file, killed with SIGKILL every 2-4 s and
//     started again on the same file and port.
//
// The workload: -runs runs of four workflows (hosts/chaos/workload.go): foreach loops that
// upsert and insert custom-table rows, approvals decided over the API (some rejected),
// form pauses submitted over the API, and both in one run; every run's start, end,
// approval request and decision go to webhooks registered on a flaky receiver in this
// program, which fails a fraction of first attempts with a 500, a closed connection or no
// answer. A fifth of the runs leave their pauses undecided until the chaos is over.
//
// The checks, after the chaos: every run ended, or is paused at an open approval or form it
// was meant to wait at; then, those decided, every run ended as planned (completed, or
// rejected where its approval was refused); every table row expected is there once, none
// twice, none extra; every run event has exactly one delivery; every delivery the service
// calls succeeded was accepted (2xx) by the receiver; none was recorded as succeeded twice.
// A delivery the receiver accepted twice is counted apart: at-least-once delivery sends
// again when the answer to an accepted attempt was never recorded (its worker was killed,
// or PostgreSQL was away when it committed). A process that exits by itself (on a lost
// database connection, say) is restarted and reported as a finding. Counts are printed;
// the exit status is 1 when an invariant failed.
//
//	go run ./hosts/chaos [-scenario all|postgres|sqlite] [-runs 200] [-chaos 30s] [-pg-restart=true]
//	                     [-postgres-dsn DSN] [-binary PATH] [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/svcflow/svcflow/internal/svcbin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout))
}

// options are the command line's settings.
type options struct {
	scenarios []string
	runs      int
	chaosFor  time.Duration
	killMin   time.Duration
	killMax   time.Duration
	lease     time.Duration
	workers   int
	pgRestart bool
	pgBase    string
	binary    string
	keep      bool
	seed      uint64
	failRate  float64
	settle    time.Duration
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "all", "postgres, sqlite or all")
	runs := fs.Int("runs", 200, "runs started during the chaos, mixed over the four workflows")
	chaosFor := fs.Duration("chaos", 30*time.Second, "how long processes are killed")
	killMin := fs.Duration("kill-min", 2*time.Second, "the least pause between two kills")
	killMax := fs.Duration("kill-max", 4*time.Second, "the longest pause between two kills")
	lease := fs.Duration("lease", 2*time.Second, "--lease of every svcflow process: how soon a killed worker's jobs are taken over")
	workers := fs.Int("workers", 3, "worker processes of the postgres scenario")
	pgRestart := fs.Bool("pg-restart", true, "postgres scenario: restart the machine's PostgreSQL once, halfway (pg_ctlcluster)")
	pgBase := fs.String("postgres-dsn", "", "the PostgreSQL server to create the scenario's database on (default $SVC_TEST_POSTGRES_DSN, else "+defaultPostgresDSN+")")
	binary := fs.String("binary", "", "an svcflow binary to run instead of building ./hosts/svcflow")
	keep := fs.Bool("keep", false, "keep the temporary directory: each scenario's process logs and SQLite file")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the workload's and the chaos's random choices")
	failRate := fs.Float64("fail-rate", 0.2, "the fraction of first delivery attempts the receiver fails")
	settle := fs.Duration("settle", 60*time.Second, "the longest wait for runs, then deliveries, to settle after the chaos")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o := options{runs: *runs, chaosFor: *chaosFor, killMin: *killMin, killMax: *killMax, lease: *lease,
		workers: *workers, pgRestart: *pgRestart, pgBase: postgresBase(*pgBase), binary: *binary, keep: *keep,
		seed: *seed, failRate: *failRate, settle: *settle}
	switch *scenario {
	case "all":
		o.scenarios = []string{"postgres", "sqlite"}
	case "postgres", "sqlite":
		o.scenarios = []string{*scenario}
	default:
		return o, fmt.Errorf("-scenario %q: postgres, sqlite or all", *scenario)
	}
	if o.runs < 1 || o.workers < 1 || o.killMin <= 0 || o.killMax < o.killMin || o.lease < time.Second ||
		o.failRate < 0 || o.failRate >= 1 || o.chaosFor <= 0 || o.settle <= 0 {
		return o, fmt.Errorf("-runs, -workers at least 1; 0 < -kill-min <= -kill-max; -lease at least 1s; 0 <= -fail-rate < 1")
	}
	return o, nil
}

func run(args []string, out io.Writer) int {
	opts, err := parse(args, os.Stderr)
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(os.Stderr, "chaos:", err)
		}
		return 2
	}
	// Ctrl-C or SIGTERM ends the scenario's waits; the deferred stops then end every child
	// (and the kernel kills them should this program die first: see procAttr).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reports, err := runAll(ctx, opts, out)
	for _, r := range reports {
		r.print(out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	for _, r := range reports {
		if !r.ok() {
			return 1
		}
	}
	return 0
}

// runAll builds the binary (unless given) and runs each scenario in turn.
func runAll(ctx context.Context, opts options, out io.Writer) ([]*report, error) {
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		return nil, err
	}
	if opts.keep {
		defer fmt.Fprintf(out, "\nkept %s (process logs, SQLite file)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	bin := opts.binary
	if bin == "" {
		began := time.Now()
		if bin, err = svcbin.Build(ctx, dir); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "chaos: built svcflow in %.1fs; seed %d\n", time.Since(began).Seconds(), opts.seed)
	}
	var reports []*report
	for _, name := range opts.scenarios {
		sc := &scenario{name: name, bin: bin, dir: filepath.Join(dir, name), out: out, runs: opts.runs,
			chaosFor: opts.chaosFor, killMin: opts.killMin, killMax: opts.killMax, lease: opts.lease,
			workers: opts.workers, pgRestart: opts.pgRestart && name == "postgres", pgBase: opts.pgBase,
			seed: opts.seed, failRate: opts.failRate, settle: opts.settle}
		fmt.Fprintf(out, "\nchaos: %s scenario, %d runs, %s of kills every %s-%s\n", name, opts.runs, opts.chaosFor, opts.killMin, opts.killMax)
		r, err := sc.run(ctx)
		if r != nil {
			reports = append(reports, r)
		}
		if err != nil {
			return reports, fmt.Errorf("%s: %w", name, err)
		}
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
	}
	return reports, nil
}
