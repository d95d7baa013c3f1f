package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// report is what a scenario found: the counts it prints and every invariant that failed.
type report struct {
	scenario   string
	runs       int
	took       time.Duration
	chaosFor   time.Duration
	kills      int
	busyKills  int
	pgRestarts int
	pgDown     time.Duration
	starts     []string // processes and how many times each was started
	ownExits   []string // exits no one caused: findings
	notes      []string

	afterChaos map[string]int // runs by status once the chaos stopped and runs settled
	leftPaused int            // of those, paused at an undecided approval or form, as planned
	executes   int            // execute requests sent for the runs (retries carry the same Idempotency-Key)
	final      map[string]int // runs by status at the end

	// rows, summed over both tables
	rowsExpected, rowsFound, rowsDuplicated, rowsMissing, rowsUnexpected int
	rowsByTable                                                          []string

	// deliveries
	deliveriesExpected  int // by the runs' events
	deliveriesRecorded  int // rows the service has for the registered targets
	deliveriesSucceeded int // of those, succeeded
	deliveriesFailed    int
	deliveriesPending   int
	accepted            int // delivery ids the receiver answered 2xx at least once
	lost                int // succeeded by the service, never accepted by the receiver
	receivedTwice       int // delivery ids received more than once (a retry, a lost answer)
	acceptedTwice       int // delivery ids answered 2xx more than once
	acceptedTwiceLost   int // of those, an answer the service never recorded (its sender died, or its commit failed)
	doubledByService    int // the service recorded two successes for one delivery
	eventsMissing       int // an expected (event, run) without a delivery
	eventsDoubled       int // an (event, run) with more than one delivery: an event emitted twice
	phantom             int // delivery ids the receiver saw and the service does not have
	requests            int
	retries             int // attempts beyond the first, as the service recorded them
	answers             map[string]int

	failures []string
}

func (r *report) fail(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *report) ok() bool { return len(r.failures) == 0 }

func countExecutes(outcomes []*outcome) int {
	n := 0
	for _, o := range outcomes {
		n += o.get().executes
	}
	return n
}

func countStatuses(outcomes []*outcome) map[string]int {
	m := map[string]int{}
	for _, o := range outcomes {
		g := o.get()
		s := g.status
		if g.runID == "" {
			s = "not started"
		}
		m[s]++
	}
	return m
}

// checkSettled checks the runs once the chaos stopped and the drivers returned: every run
// ended, or is paused at an approval or form that its plan leaves for later and that is
// open.
func (r *report) checkSettled(ctx context.Context, d *driver, plans []plan, outcomes []*outcome) error {
	for i, p := range plans {
		o := outcomes[i].get()
		switch {
		case o.runID == "":
			r.fail("%s: never started: %v", p.tag, o.err)
		case o.err != nil:
			r.fail("%s (%s, run %s): %v", p.tag, p.kind, o.runID, o.err)
		case terminal(o.status):
		case o.status == "paused" && o.leftPaused:
			what, err := d.pendingPause(ctx, p, o.runID)
			if err != nil {
				return err
			}
			if what == "" {
				r.fail("%s (run %s): paused with no open approval or form", p.tag, o.runID)
			} else {
				r.leftPaused++
			}
		default:
			r.fail("%s (%s, run %s): still %s after the settle wait", p.tag, p.kind, o.runID, o.status)
		}
	}
	return nil
}

// checkRuns checks every run ended as its plan says.
func (r *report) checkRuns(plans []plan, outcomes []*outcome) {
	for i, p := range plans {
		o := outcomes[i].get()
		if o.runID == "" || o.err != nil {
			continue // reported already
		}
		if o.status != p.expectedStatus() {
			r.fail("%s (%s, run %s): ended %s, expected %s (%s)", p.tag, p.kind, o.runID, o.status, p.expectedStatus(), o.reason)
		}
	}
}

// row is what the check reads of a custom-table row.
type row struct {
	ID   string         `json:"id"`
	Data map[string]any `json:"data"`
}

// checkRows reads both tables whole and compares them with the rows the runs' plans and
// final statuses call for: each key once, none missing, none extra; a form's submitted
// answer in its row.
func (r *report) checkRows(ctx context.Context, c *client, plans []plan, outcomes []*outcome) error {
	want := map[string]map[string]bool{tableWrites: {}, tableUpserts: {}}
	answers := map[string]string{} // key -> the answer its row must carry
	for i, p := range plans {
		if o := outcomes[i].get(); o.status != p.expectedStatus() {
			continue // its rows are not known; duplicates are still counted
		}
		writes, upserts := p.expectedRows()
		for _, k := range writes {
			want[tableWrites][k] = true
		}
		for _, k := range upserts {
			want[tableUpserts][k] = true
		}
		switch {
		case p.kind == kindForm:
			answers[p.tag+"-after"] = p.answer()
		case p.kind == kindMixed && !p.reject:
			answers[p.tag+"-end"] = p.answer()
		}
	}
	for _, table := range []string{tableWrites, tableUpserts} {
		rows, err := listAll[row](ctx, c, "read "+table, "/custom-tables/"+table+"/rows")
		if err != nil {
			return err
		}
		seen := map[string]int{}
		var dup, missing, unexpected int
		for _, rw := range rows {
			k, _ := rw.Data["key"].(string)
			seen[k]++
			if a, ok := answers[k]; ok && rw.Data["answer"] != a {
				r.fail("row %s of %s: answer %v, expected %q", k, table, rw.Data["answer"], a)
			}
		}
		for k, n := range seen {
			if n > 1 {
				dup += n - 1
				r.fail("%s: %d rows with key %s", table, n, k)
			}
			if !want[table][k] && !unexpectedOK(k, plans, outcomes) {
				unexpected++
				r.fail("%s: a row with key %s that no run should have written", table, k)
			}
		}
		for k := range want[table] {
			if seen[k] == 0 {
				missing++
				r.fail("%s: no row with key %s", table, k)
			}
		}
		r.rowsExpected += len(want[table])
		r.rowsFound += len(rows)
		r.rowsDuplicated += dup
		r.rowsMissing += missing
		r.rowsUnexpected += unexpected
		r.rowsByTable = append(r.rowsByTable, fmt.Sprintf("%s %d expected, %d found, %d duplicated, %d missing", table, len(want[table]), len(rows), dup, missing))
	}
	return nil
}

// unexpectedOK says a row's key belongs to a run that did not end as planned (already a
// failure of its own), whose rows are not known.
func unexpectedOK(key string, plans []plan, outcomes []*outcome) bool {
	tag, _, _ := strings.Cut(key, "-")
	for i, p := range plans {
		if p.tag == tag {
			return outcomes[i].get().status != p.expectedStatus()
		}
	}
	return false
}

// delivery is what the check reads of a delivery.
type delivery struct {
	ID       string `json:"delivery_id"`
	Event    string `json:"event"`
	RunID    string `json:"run_id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// checkDeliveries waits (at most settle) until no delivery of the registered targets is
// pending, then compares the service's deliveries, the runs' events and what the receiver
// saw.
func (r *report) checkDeliveries(ctx context.Context, c *client, rcv *receiver, hooks map[string]string, plans []plan, outcomes []*outcome, settle time.Duration) error {
	var all []delivery
	deadline := time.Now().Add(settle)
	for {
		all = all[:0]
		pending := 0
		for _, ev := range hookEvents {
			ds, err := listAll[delivery](ctx, c, "deliveries", "/webhooks/"+hooks[ev]+"/deliveries")
			if err != nil {
				return err
			}
			for _, d := range ds {
				if d.Status == "pending" {
					pending++
				}
			}
			all = append(all, ds...)
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	received, answers, requests := rcv.snapshot()
	r.answers, r.requests = answers, requests

	// The events each run must have delivered, and what the service has.
	want := map[string]int{} // "<event> of run <id>" -> deliveries
	for i, p := range plans {
		o := outcomes[i].get()
		if o.runID == "" || o.status != p.expectedStatus() {
			continue
		}
		for ev, n := range p.expectedEvents() {
			want[ev+" of run "+o.runID] = n
			r.deliveriesExpected += n
		}
	}
	have := map[string]int{}
	byID := map[string]delivery{}
	for _, d := range all {
		byID[d.ID] = d
		have[d.Event+" of run "+d.RunID]++
		r.deliveriesRecorded++
		r.retries += max(d.Attempts-1, 0)
		switch d.Status {
		case "succeeded":
			r.deliveriesSucceeded++
			if received[d.ID].accepted == 0 {
				r.lost++
				r.fail("delivery %s (%s of run %s): succeeded for the service, never accepted by the receiver", d.ID, d.Event, d.RunID)
			}
		case "failed":
			r.deliveriesFailed++
			r.fail("delivery %s (%s of run %s): failed after %d attempts", d.ID, d.Event, d.RunID, d.Attempts)
		default:
			r.deliveriesPending++
			r.fail("delivery %s (%s of run %s): still %s after %s", d.ID, d.Event, d.RunID, d.Status, settle)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if n := have[k]; n < want[k] {
			r.eventsMissing += want[k] - n
			r.fail("%s: %d deliveries, expected %d", k, n, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		_, runID, _ := strings.Cut(k, " of run ")
		if n := have[k]; n > want[k] && !unplanned(runID, plans, outcomes) {
			r.eventsDoubled += n - want[k]
			r.fail("%s: %d deliveries, expected %d", k, n, want[k])
		}
	}

	for id, rec := range received {
		if rec.accepted > 0 {
			r.accepted++
		}
		if rec.requests > 1 {
			r.receivedTwice++
		}
		if _, ok := byID[id]; !ok {
			r.phantom++
			r.fail("the receiver got delivery %q (%s), which the service does not list", id, rec.event)
		}
		if rec.accepted < 2 {
			continue
		}
		r.acceptedTwice++
		// Accepted twice: legitimate only when one of the 2xx answers never made it into
		// the service's record (the worker that got it was killed, or could not commit,
		// before recording it). Two successes recorded means a delivery was sent again
		// after the service knew it had been delivered.
		var doc struct {
			AttemptList []struct {
				Outcome string `json:"outcome"`
			} `json:"attempt_list"`
		}
		if err := retry(ctx, func() error {
			return c.do(ctx, "get delivery", http.MethodGet, "/deliveries/"+id, nil, nil, &doc)
		}); err != nil {
			return err
		}
		succeeded := 0
		for _, a := range doc.AttemptList {
			if a.Outcome == "succeeded" {
				succeeded++
			}
		}
		if succeeded > 1 {
			r.doubledByService++
			r.fail("delivery %s (%s of run %s): the service recorded %d successful attempts", id, rec.event, rec.runID, succeeded)
		} else {
			r.acceptedTwiceLost++
		}
	}
	return nil
}

// unplanned says a run did not end as planned: its events are not known (already a failure).
func unplanned(runID string, plans []plan, outcomes []*outcome) bool {
	for i, p := range plans {
		if o := outcomes[i].get(); o.runID == runID {
			return o.status != p.expectedStatus()
		}
	}
	return true
}

// print writes the report.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: %d runs in %.1fs (chaos %.1fs) ==\n", r.scenario, r.runs, r.took.Seconds(), r.chaosFor.Seconds())
	fmt.Fprintf(w, "chaos:       %d SIGKILLs (%d of a process busy in the 300 ms before), %d PostgreSQL restarts", r.kills, r.busyKills, r.pgRestarts)
	if r.pgRestarts > 0 {
		fmt.Fprintf(w, " (pg_ctlcluster restart took %s)", r.pgDown.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "; starts: %s\n", strings.Join(r.starts, ", "))
	if len(r.ownExits) == 0 {
		fmt.Fprintf(w, "processes:   none exited by itself (every exit was a SIGKILL of the chaos)\n")
	} else {
		fmt.Fprintf(w, "processes:   %d exits by themselves, restarted by this program (FINDING):\n", len(r.ownExits))
		for _, e := range r.ownExits {
			fmt.Fprintf(w, "               %s\n", e)
		}
	}
	fmt.Fprintf(w, "runs:        after the chaos %s (%d paused at an open approval or form, left for later)\n", statusLine(r.afterChaos), r.leftPaused)
	fmt.Fprintf(w, "             at the end      %s\n", statusLine(r.final))
	fmt.Fprintf(w, "             %d execute requests for %d runs (a retry after no answer carries the same Idempotency-Key; a run started twice would double its rows)\n", r.executes, r.runs)
	fmt.Fprintf(w, "table rows:  %d expected, %d found, %d duplicated, %d missing, %d unexpected\n",
		r.rowsExpected, r.rowsFound, r.rowsDuplicated, r.rowsMissing, r.rowsUnexpected)
	for _, t := range r.rowsByTable {
		fmt.Fprintf(w, "               %s\n", t)
	}
	fmt.Fprintf(w, "deliveries:  %d expected, %d recorded (%d succeeded, %d failed, %d pending); %d events missing, %d doubled\n",
		r.deliveriesExpected, r.deliveriesRecorded, r.deliveriesSucceeded, r.deliveriesFailed, r.deliveriesPending, r.eventsMissing, r.eventsDoubled)
	fmt.Fprintf(w, "receiver:    %d requests (%s); %d delivery ids accepted, %d lost, %d received more than once\n",
		r.requests, answerLine(r.answers), r.accepted, r.lost, r.receivedTwice)
	fmt.Fprintf(w, "             %d accepted (2xx) twice: %d after an answer the service never recorded (at-least-once), %d recorded as succeeded twice; %d retries recorded; %d unknown ids\n",
		r.acceptedTwice, r.acceptedTwiceLost, r.doubledByService, r.retries, r.phantom)
	for _, n := range r.notes {
		fmt.Fprintf(w, "note:        %s\n", n)
	}
	if r.ok() {
		fmt.Fprintf(w, "result:      PASS\n")
		return
	}
	fmt.Fprintf(w, "result:      FAIL, %d invariant violations:\n", len(r.failures))
	for i, f := range r.failures {
		if i == 30 {
			fmt.Fprintf(w, "               … and %d more\n", len(r.failures)-i)
			break
		}
		fmt.Fprintf(w, "               %s\n", f)
	}
}

func statusLine(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func answerLine(m map[string]int) string {
	var parts []string
	for _, k := range []string{answerOK, answer500, answerClosed, answerHung} {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
