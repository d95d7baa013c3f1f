package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the fair mode's backlog counter reads the server's database

	"github.com/svcflow/svcflow/engine/svctype"
)

const (
	orgA = "bench-a"
	orgB = "bench-b"

	// floodClients is how many clients of bench-a start the fair mode's backlog.
	floodClients = 50
	// probeEvery is the fair mode's pace of bench-b runs: one at a time, one started every
	// probeEvery at most.
	probeEvery = 250 * time.Millisecond
	// drainCheck is how often the fair mode looks whether bench-a's backlog has drained.
	drainCheck = 50 * time.Millisecond
	// drainTimeout bounds the fair mode's wait for bench-a's backlog to drain.
	drainTimeout = 30 * time.Minute
)

// closedLoop is the wait, poll and form modes: opts.clients clients, each sending its next run
// once its previous one has ended, execute opts.runs runs of the ledger workflow as bench-a.
func closedLoop(ctx context.Context, c *client, mode string, opts options) (result, error) {
	wfID, err := c.setupLedger(ctx, orgA)
	if err != nil {
		return result{}, fmt.Errorf("setup: %w", err)
	}
	var formID string
	if mode == "form" {
		if formID, err = c.setupForm(ctx, orgA, wfID); err != nil {
			return result{}, fmt.Errorf("setup: %w", err)
		}
	}
	return drive(ctx, c, mode, wfID, formID, opts)
}

// drive is closedLoop's timed part, on a ledger workflow wfID (and, in the form mode, its
// form formID) already set up: it prints the mode's table and returns its result.
func drive(ctx context.Context, c *client, mode, wfID, formID string, opts options) (result, error) {
	n := opts.runs
	lat := make([]time.Duration, n)
	var next, sent, completed, requests, endedInExecute atomic.Int64
	fails := newTally()

	var wg sync.WaitGroup
	cpu := startCPU(opts.pids)
	start := time.Now()
	for range min(opts.clients, n) {
		wg.Go(func() {
			reqs := 0
			defer func() { requests.Add(int64(reqs)) }()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				sent.Add(1)
				began := time.Now()
				var d runDoc
				var err error
				switch mode {
				case "form":
					d, err = c.submit(ctx, formID, i)
					reqs++
					if err == nil {
						d, err = c.awaitEnd(ctx, orgA, d, &reqs)
					}
				case "wait":
					d, err = c.execute(ctx, orgA, wfID, i, waitParam)
					reqs++
					if err == nil && d.Status != svctype.RunRunning {
						endedInExecute.Add(1)
					}
					if err == nil {
						d, err = c.awaitEnd(ctx, orgA, d, &reqs)
					}
				default:
					d, err = c.execute(ctx, orgA, wfID, i, "")
					reqs++
					if err == nil {
						d, err = c.pollEnd(ctx, orgA, d, &reqs)
					}
				}
				took := time.Since(began)
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					fails.add(err.Error())
				case d.Status != svctype.RunCompleted:
					fails.add("run ended " + string(d.Status))
				default:
					lat[completed.Add(1)-1] = took
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	serverCPU, ownCPU, cpuKnown := cpu.stop()
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	r := result{
		name:      mode,
		runs:      int(sent.Load()),
		completed: int(completed.Load()),
		elapsed:   elapsed,
		lat:       lat[:completed.Load()],
		requests:  requests.Load(),
		failures:  fails,
		serverCPU: serverCPU, ownCPU: ownCPU, cpuKnown: cpuKnown,
	}
	slices.Sort(r.lat)
	switch mode {
	case "form":
		r.notes = append(r.notes, fmt.Sprintf("each run started by POST /forms/public/{formId}/submit (no X-Org-Id; the form's trigger is the ledger workflow), followed with GET /runs/{id}/status?wait=%s", waitParam))
	case "wait":
		r.notes = append(r.notes, fmt.Sprintf("execute?wait=%s answered an ended run for %d of %d runs; the others were followed with GET /runs/{id}/status?wait=%s",
			waitParam, endedInExecute.Load(), r.runs, waitParam),
			"targets (with ?wait= on the server): runs/s at least 70 % of make bench-runs', p99 under 1 s")
	default:
		r.notes = append(r.notes, fmt.Sprintf("execute answered at once; GET /runs/{id}/status every %s", pollEvery))
	}
	if n := r.cpuNote(); n != "" {
		r.notes = append(r.notes, n)
	}
	r.notes = append(r.notes, r.figuresLine())
	printMode(mode, r)
	return r, nil
}

// probe is one bench-b run of the fair mode.
type probe struct {
	at      time.Duration // when it was sent, from the start of the flood
	backlog int           // bench-a runs not ended when it was sent
	took    time.Duration
	ok      bool
}

// fair is the fair mode: bench-a floods the server with opts.backlog fire-and-forget runs
// from floodClients clients while bench-b runs one run at a time with ?wait=, until bench-a's
// backlog has drained.
func fair(ctx context.Context, c *client, dbPath string, opts options) ([]result, error) {
	wfA, err := c.setupLedger(ctx, orgA)
	if err != nil {
		return nil, fmt.Errorf("setup %s: %w", orgA, err)
	}
	wfB, err := c.setupLedger(ctx, orgB)
	if err != nil {
		return nil, fmt.Errorf("setup %s: %w", orgB, err)
	}
	counter, err := openRunCounter(dbPath)
	if err != nil {
		return nil, err
	}
	defer counter.close()

	start := time.Now()

	// bench-a's flood.
	var next, sentA, accepted atomic.Int64
	failsA := newTally()
	var acceptedIn time.Duration
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		var wg sync.WaitGroup
		for range min(floodClients, opts.backlog) {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= opts.backlog || ctx.Err() != nil {
						return
					}
					sentA.Add(1)
					if _, err := c.execute(ctx, orgA, wfA, i, ""); err != nil {
						if ctx.Err() == nil {
							failsA.add(err.Error())
						}
						continue
					}
					accepted.Add(1)
				}
			})
		}
		wg.Wait()
		acceptedIn = time.Since(start)
	}()

	// The end of bench-a's backlog: every run it started has ended.
	var drainedIn time.Duration
	var drainErr error
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		select {
		case <-flooded:
		case <-ctx.Done():
			return
		}
		ctx, cancel := context.WithTimeout(ctx, drainTimeout)
		defer cancel()
		for {
			n, err := counter.unended(ctx, orgA)
			if err != nil {
				drainErr = err
				return
			}
			if n == 0 {
				drainedIn = time.Since(start)
				return
			}
			if err := sleep(ctx, drainCheck); err != nil {
				drainErr = fmt.Errorf("%s runs still not ended: %w", orgA, err)
				return
			}
		}
	}()

	// bench-b's runs, one at a time, until the backlog has drained.
	probes := make([]probe, 0, 4096)
	failsB := newTally()
	requestsB := 0
	var probing time.Duration
probeLoop:
	for i := 0; ; i++ {
		select {
		case <-drained:
			break probeLoop
		default:
		}
		backlog, err := counter.unended(ctx, orgA)
		if err != nil {
			return nil, err
		}
		began := time.Now()
		d, err := c.execute(ctx, orgB, wfB, i, waitParam)
		requestsB++
		if err == nil {
			d, err = c.awaitEnd(ctx, orgB, d, &requestsB)
		}
		p := probe{at: began.Sub(start), backlog: backlog, took: time.Since(began)}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			failsB.add(err.Error())
		case d.Status != svctype.RunCompleted:
			failsB.add("run ended " + string(d.Status))
		default:
			p.ok = true
		}
		probes = append(probes, p)
		probing = time.Since(start)
		if err := sleep(ctx, time.Until(began.Add(probeEvery))); err != nil {
			return nil, err
		}
	}
	<-flooded
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if drainErr != nil {
		return nil, drainErr
	}

	statuses, err := counter.byStatus(ctx, orgA)
	if err != nil {
		return nil, err
	}
	for s, n := range statuses {
		if s != string(svctype.RunCompleted) {
			failsA.addN("run ended "+s, n)
		}
	}
	a := result{
		name:      "fair " + orgA,
		runs:      int(sentA.Load()),
		completed: statuses[string(svctype.RunCompleted)],
		elapsed:   drainedIn,
		requests:  sentA.Load(),
		failures:  failsA,
	}
	a.notes = append(a.notes,
		fmt.Sprintf("%s: %d fire-and-forget executes from %d clients, accepted in %s (%.0f/s); its last run ended %s after the first execute",
			orgA, accepted.Load(), floodClients, acceptedIn.Round(time.Millisecond), float64(accepted.Load())/acceptedIn.Seconds(),
			drainedIn.Round(time.Millisecond)))

	b := result{name: "fair " + orgB, runs: len(probes), elapsed: probing, failures: failsB, requests: int64(requestsB)}
	backlogs := make([]int, 0, len(probes))
	var slowest probe
	for _, p := range probes {
		backlogs = append(backlogs, p.backlog)
		if p.ok {
			b.lat = append(b.lat, p.took)
			b.completed++
		}
		if p.took > slowest.took {
			slowest = p
		}
	}
	slices.Sort(b.lat)
	slices.Sort(backlogs)
	b.notes = append(b.notes,
		fmt.Sprintf("%s: one run at a time (one every %s at most) with execute?wait=%s, while %s's backlog drained",
			orgB, probeEvery, waitParam, orgA))
	if len(backlogs) > 0 {
		b.notes = append(b.notes,
			fmt.Sprintf("%s runs not yet ended when each %s run was sent: min %d, median %d, max %d; the slowest %s run (%s) was sent at +%s behind %d",
				orgA, orgB, backlogs[0], backlogs[len(backlogs)/2], backlogs[len(backlogs)-1],
				orgB, fmtDur(slowest.took), slowest.at.Round(time.Millisecond), slowest.backlog))
		b.notes = append(b.notes, timeline(probes)...)
	}
	rs := []result{a, b}
	printMode("fair", rs...)
	return rs, nil
}

// timeline describes up to 12 bench-b runs, evenly spread over all of them.
func timeline(probes []probe) []string {
	const most = 12
	step := max(1, (len(probes)+most-1)/most)
	var lines []string
	for i := 0; i < len(probes); i += step {
		p := probes[i]
		state := "completed"
		if !p.ok {
			state = "FAILED"
		}
		lines = append(lines, fmt.Sprintf("  %s run %d sent at +%s behind %d %s runs: %s %s",
			orgB, i+1, p.at.Round(10*time.Millisecond), p.backlog, orgA, state, fmtDur(p.took)))
	}
	return lines
}

// runCounter reads the server's SQLite file, read-only, for what the API has no cheap answer
// to: how many of an organization's runs have not ended. Paging through GET /runs?status=running
// (10,000 runs) before every bench-b run would load the very server being measured; a count
// on the jobs table's (org_id, run_id) index is a few pages. A run holds a job row from its
// execute until it ends (make bench-runs counts the same table to see the drain).
type runCounter struct {
	db *sql.DB
}

func openRunCounter(path string) (*runCounter, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return &runCounter{db: db}, nil
}

func (rc *runCounter) close() { _ = rc.db.Close() }

// unended is how many of org's runs have not ended.
func (rc *runCounter) unended(ctx context.Context, org string) (int, error) {
	var n int
	err := rc.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE org_id = ?`, org).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count %s's jobs in the server's database: %w", org, err)
	}
	return n, nil
}

// byStatus counts org's runs per status.
func (rc *runCounter) byStatus(ctx context.Context, org string) (map[string]int, error) {
	rows, err := rc.db.QueryContext(ctx, `SELECT status, count(*) FROM runs WHERE org_id = ? GROUP BY status`, org)
	if err != nil {
		return nil, fmt.Errorf("count %s's runs in the server's database: %w", org, err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		m[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("count %s's runs in the server's database", org), err)
	}
	return m, nil
}
