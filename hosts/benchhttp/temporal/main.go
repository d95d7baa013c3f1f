// Command temporalbench is the other half of make bench-vs-temporal: the shape of
// benchhttp -mode wait (100 clients in a closed loop, 3,000 runs, each run three steps, the
// first of which upserts the run's account among -keys, the third of which writes one row
// keyed by the run) on the Temporal dev server (`temporal server start-dev`) with a Go SDK
// worker, timed from the client's ExecuteWorkflow to its Get of the result. It is its own
// Go module so that svcflow's module carries no Temporal dependency.
//
// What the Temporal side does and what it does not:
//
//   - the dev server is started fresh for each round (its in-memory SQLite, no file: its
//     fastest form; svcflow writes a SQLite file), headless, on free loopback ports;
//   - the worker and the clients run in this process;
//   - -activities local (default): the workflow calls three local activities in turn;
//     -activities tasks: three activity tasks (each a round trip through the server);
//   - the activities' work is in this process's memory, under one mutex: an upsert of the
//     account (a map of -keys accounts, filled before the clock starts), a read of it when
//     the amount is over 10 (the ledger workflow's filtered read), and the append of one
//     row {run, text} to a slice: cheaper than svcflow's, whose three steps are SQL
//     statements on a custom table of -keys rows and a growing one, committed to disk.
//
// -vs runs the svcflow side too, the same minute: -rounds rounds, each running the command
// -svcflow (benchhttp -mode wait ..., whose "figures:" line it reads) and then the Temporal
// side, alternating which goes first, and prints each round's figures, their medians and
// the ratio of the medians' runs/s. Without a temporal binary (-temporal) it says why and
// sets the svcflow figures beside -reference runs/s, labelled as such.
//
//	go run . [-temporal PATH] [-activities local|tasks] [-clients 100] [-runs 3000] [-keys 3000]
//	go run . -vs -svcflow 'CMD' [-rounds 3] [-reference 38.5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

type options struct {
	temporal   string
	activities string
	clients    int
	runs       int
	keys       int
	// pollers, when above 0, is the worker's pollers of workflow tasks and of activity
	// tasks each (the SDK's default otherwise).
	pollers int
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	flag.StringVar(&o.temporal, "temporal", "temporal", "the temporal CLI (go install github.com/temporalio/cli/cmd/temporal@v1.5.1)")
	flag.StringVar(&o.activities, "activities", "local", "local: three local activities a run; tasks: three activity tasks")
	flag.IntVar(&o.clients, "clients", 100, "concurrent clients")
	flag.IntVar(&o.runs, "runs", 3000, "workflow runs in all")
	flag.IntVar(&o.keys, "keys", 3000, "distinct accounts the runs upsert")
	flag.IntVar(&o.pollers, "pollers", 0, "the worker's pollers of workflow tasks and of activity tasks, each (0: the SDK's default, 2)")
	vs := flag.Bool("vs", false, "run -svcflow and this side -rounds times each, alternating, and compare")
	svcflowCmd := flag.String("svcflow", "", "with -vs: the command of the svcflow side (a benchhttp -mode wait that prints a figures: line)")
	rounds := flag.Int("rounds", 3, "with -vs: rounds, each side once a round")
	reference := flag.Float64("reference", 38.5, "with -vs: Temporal's runs/s to compare with when it cannot run here (issue 35's figure: the dev server with three local activities)")
	flag.Parse()
	if o.activities != "local" && o.activities != "tasks" {
		fmt.Fprintln(os.Stderr, "temporalbench: -activities is local or tasks")
		return 2
	}
	if o.clients < 1 || o.runs < 1 || o.keys < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "temporalbench: -clients, -runs, -keys and -rounds must be at least 1")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *vs {
		if *svcflowCmd == "" {
			fmt.Fprintln(os.Stderr, "temporalbench: -vs needs -svcflow CMD")
			return 2
		}
		return versus(ctx, o, *svcflowCmd, *rounds, *reference)
	}
	if _, err := exec.LookPath(o.temporal); err != nil {
		fmt.Fprintln(os.Stderr, "temporalbench:", err)
		return 1
	}
	f, err := temporalSide(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporalbench:", err)
		return 1
	}
	fmt.Println(f.line())
	return 0
}
