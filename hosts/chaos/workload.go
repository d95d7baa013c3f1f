package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The workload: four workflows, each run of the chaos run executing one of them.
//
//   - foreach: a plain write, a foreach whose elements upsert a row keyed by run and index
//     and write (plain insert) another, then a plain write. An element applied twice shows
//     as two rows of one key in the plain table; an upsert that inserted twice, in the other.
//   - approval: a write, a PbotApproval decided over the API (some rejected), a write that
//     only an approved run reaches.
//   - form: a write, a PbotForm submitted over the API, a write of the submitted value.
//   - mixed: a shorter foreach, an approval, a form, a write.
//
// Every row carries a key made of the run's tag and its place in the run, so the rows
// expected from each run's final status are known exactly.
const (
	kindForeach  = "foreach"
	kindApproval = "approval"
	kindForm     = "form"
	kindMixed    = "mixed"
)

var kinds = []string{kindForeach, kindApproval, kindForm, kindMixed}

// Tables: writes take plain inserts, upserts take upserts keyed on key.
const (
	tableWrites  = "chaos_writes"
	tableUpserts = "chaos_upserts"
)

func write(key string, extra string) string {
	return `{"type": "custom-table", "properties": {"table": "` + tableWrites + `", "operation": "write",
	  "fields": {"key": "` + key + `", "run": "{{__run_id}}"` + extra + `}}}`
}

const loopStep = `{"type": "loop", "properties": {"mode": "foreach", "items": "@input.items", "result_key": "looped", "max_iterations": 1000,
  "steps": [
    {"type": "custom-table", "properties": {"table": "` + tableUpserts + `", "operation": "upsert", "keys": ["key"],
      "values": ["{{input.tag}}-u{{index}}"], "fields": {"run": "{{__run_id}}", "item": "@item"}}},
    {"type": "custom-table", "properties": {"table": "` + tableWrites + `", "operation": "write",
      "fields": {"key": "{{input.tag}}-w{{index}}", "run": "{{__run_id}}"}}}
  ]}}`

const approvalStep = `{"type": "PbotApproval", "properties": {"approver_role": "chaos", "comment": "run {{input.tag}}",
  "request_payload": {"tag": "@input.tag"}}}`

const formStep = `{"type": "PbotForm", "properties": {"expected_keys": ["answer"]}}`

// definitions are the workflows by kind.
var definitions = map[string]string{
	kindForeach:  `{"actions": [` + write("{{input.tag}}-start", "") + `, ` + loopStep + `, ` + write("{{input.tag}}-end", "") + `]}`,
	kindApproval: `{"actions": [` + write("{{input.tag}}-before", "") + `, ` + approvalStep + `, ` + write("{{input.tag}}-after", `, "approved": "@__approved"`) + `]}`,
	kindForm:     `{"actions": [` + write("{{input.tag}}-before", "") + `, ` + formStep + `, ` + write("{{input.tag}}-after", `, "answer": "@answer"`) + `]}`,
	kindMixed:    `{"actions": [` + loopStep + `, ` + approvalStep + `, ` + formStep + `, ` + write("{{input.tag}}-end", `, "answer": "@answer"`) + `]}`,
}

// formStepOf is the index of each kind's PbotForm step (-1: none).
var formStepOf = map[string]int{kindForeach: -1, kindApproval: -1, kindForm: 1, kindMixed: 2}

// hookEvents are the events the receiver is registered for, each on a path of its own.
var hookEvents = []string{"workflow_run_started", "workflow_run_completed", "workflow_run_failed",
	"pbot_approval_requested", "pbot_approval_decided"}

// plan is what run i is to do.
type plan struct {
	i     int
	kind  string
	tag   string
	items int
	// reject: its approval is decided false, so it ends rejected.
	reject bool
	// late: its pauses are left undecided until the chaos is over, so that some runs are
	// paused through every kill and restart.
	late bool
}

func makePlans(n int, rng *rand.Rand) []plan {
	plans := make([]plan, n)
	for i := range plans {
		p := plan{i: i, kind: kinds[i%len(kinds)], tag: fmt.Sprintf("r%04d", i)}
		switch p.kind {
		case kindForeach:
			p.items = 20 + rng.IntN(180)
		case kindMixed:
			p.items = 5 + rng.IntN(40)
		}
		p.reject = (p.kind == kindApproval || p.kind == kindMixed) && i%7 == 3
		p.late = i%5 == 2
		plans[i] = p
	}
	return plans
}

// expectedStatus is the status the run must end in.
func (p plan) expectedStatus() string {
	if p.reject {
		return "rejected"
	}
	return "completed"
}

// expectedRows lists the keys the run must have written, by table, once it ended as
// expected.
func (p plan) expectedRows() (writes, upserts []string) {
	k := func(s string) string { return p.tag + "-" + s }
	loop := func() {
		for j := range p.items {
			writes = append(writes, k(fmt.Sprintf("w%d", j)))
			upserts = append(upserts, k(fmt.Sprintf("u%d", j)))
		}
	}
	switch p.kind {
	case kindForeach:
		writes = append(writes, k("start"))
		loop()
		writes = append(writes, k("end"))
	case kindApproval, kindForm:
		writes = append(writes, k("before"))
		if !p.reject {
			writes = append(writes, k("after"))
		}
	case kindMixed:
		loop()
		if !p.reject {
			writes = append(writes, k("end"))
		}
	}
	return writes, upserts
}

// expectedEvents counts the deliveries each registered event must have for this run.
func (p plan) expectedEvents() map[string]int {
	// A rejected run ends with workflow_run_completed too, {result: {status: rejected}}
	// (docs/decisions.md, approvals).
	ev := map[string]int{"workflow_run_started": 1, "workflow_run_completed": 1}
	if p.kind == kindApproval || p.kind == kindMixed {
		ev["pbot_approval_requested"] = 1
		ev["pbot_approval_decided"] = 1
	}
	return ev
}

func (p plan) answer() string { return "a-" + p.tag }

// outcome is what the driver saw of a run.
type outcome struct {
	mu         sync.Mutex
	runID      string
	status     string
	reason     string
	executes   int  // execute requests sent (a retry carries the same Idempotency-Key)
	leftPaused bool // paused and left so, its plan being late, while the chaos went on
	decisions  int  // approvals decided and forms submitted (answers 2xx or 409)
	err        error
}

func (o *outcome) set(f func(o *outcome)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

func (o *outcome) get() outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return outcome{runID: o.runID, status: o.status, reason: o.reason, executes: o.executes,
		leftPaused: o.leftPaused, decisions: o.decisions, err: o.err}
}

// setup creates the tables, the webhooks (one path per event on the receiver) and the
// workflows, and returns the workflow ids by kind and the webhook ids by event.
func setup(ctx context.Context, c *client, hookBase string) (wfs map[string]string, hooks map[string]string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tables := []map[string]any{
		{"name": tableWrites, "fields": map[string]string{"key": "text", "run": "text", "approved": "boolean", "answer": "text"}},
		{"name": tableUpserts, "fields": map[string]string{"key": "text", "run": "text", "item": "number"}},
	}
	for _, t := range tables {
		if err := retry(ctx, func() error { return c.do(ctx, "create table", http.MethodPost, "/custom-tables", t, nil, nil) }); err != nil {
			return nil, nil, err
		}
	}
	hooks = map[string]string{}
	for _, ev := range hookEvents {
		var h struct {
			ID string `json:"id"`
		}
		body := map[string]any{"event": ev, "url": hookBase + "/hook/" + ev}
		if err := retry(ctx, func() error { return c.do(ctx, "create webhook", http.MethodPost, "/webhooks", body, nil, &h) }); err != nil {
			return nil, nil, err
		}
		hooks[ev] = h.ID
	}
	wfs = map[string]string{}
	for _, kind := range kinds {
		var w struct {
			ID string `json:"id"`
		}
		body := map[string]any{"name": "chaos-" + kind, "definition": json.RawMessage(definitions[kind])}
		if err := retry(ctx, func() error { return c.do(ctx, "create workflow", http.MethodPost, "/workflows", body, nil, &w) }); err != nil {
			return nil, nil, err
		}
		wfs[kind] = w.ID
	}
	return wfs, hooks, nil
}

// statusDoc is what the driver reads of GET /runs/{id}/status.
type statusDoc struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func terminal(status string) bool {
	switch status {
	case "completed", "failed", "cancelled", "rejected", "condition_not_met":
		return true
	}
	return false
}

// driver runs the workload's side of each run: execute, follow, decide.
type driver struct {
	c   *client
	wfs map[string]string
	// chaosOver is closed when the chaos has stopped: late plans are decided from then on.
	chaosOver chan struct{}
	rngMu     sync.Mutex
	rng       *rand.Rand
}

func (d *driver) jitter(maxDur time.Duration) time.Duration {
	d.rngMu.Lock()
	defer d.rngMu.Unlock()
	return time.Duration(d.rng.Int64N(int64(maxDur)))
}

func (d *driver) over() bool {
	select {
	case <-d.chaosOver:
		return true
	default:
		return false
	}
}

// execute starts p's run, retrying with the same Idempotency-Key until the runtime answers.
func (d *driver) execute(ctx context.Context, p plan, o *outcome) error {
	items := make([]int, p.items)
	for j := range items {
		items[j] = j
	}
	body := map[string]any{"input": map[string]any{"tag": p.tag, "items": items}}
	hdr := map[string]string{"Idempotency-Key": "chaos-" + p.tag}
	var ref statusDoc
	err := retry(ctx, func() error {
		o.set(func(o *outcome) { o.executes++ })
		err := d.c.do(ctx, "execute", http.MethodPost, "/workflows/"+d.wfs[p.kind]+"/execute", body, hdr, &ref)
		if statusOf(err) == http.StatusConflict { // the same key in flight: try again
			return &apiError{op: "execute", status: 503}
		}
		return err
	})
	if err != nil {
		return err
	}
	o.set(func(o *outcome) { o.runID, o.status = ref.ID, ref.Status })
	return nil
}

// follow waits for p's run to end, deciding its pauses; a late plan's pause is left as it
// is while the chaos goes on (follow returns then, the run paused).
func (d *driver) follow(ctx context.Context, p plan, o *outcome) error {
	runID := o.get().runID
	last := "running"
	for {
		var st statusDoc
		q := url.Values{"wait": {"5s"}, "last_status": {last}, "context": {"false"}}
		err := retry(ctx, func() error {
			return d.c.do(ctx, "status", http.MethodGet, "/runs/"+runID+"/status?"+q.Encode(), nil, nil, &st)
		})
		if err != nil {
			return err
		}
		o.set(func(o *outcome) { o.status, o.reason = st.Status, st.Reason })
		if terminal(st.Status) {
			return nil
		}
		last = st.Status
		if st.Status != "paused" {
			continue
		}
		if p.late && !d.over() {
			o.set(func(o *outcome) { o.leftPaused = true })
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.jitter(1500 * time.Millisecond)):
		}
		decided, err := d.decide(ctx, p, runID)
		if err != nil {
			return err
		}
		if decided {
			o.set(func(o *outcome) { o.decisions++ })
		} else {
			// Paused with nothing open: the decision of a moment ago is being applied.
			// Ask again with the status as the last one seen, after a short pause.
			time.Sleep(100 * time.Millisecond)
			last = "running"
		}
	}
}

// decide decides the approval p's run waits at, or submits its form. It reports false when
// neither is open.
func (d *driver) decide(ctx context.Context, p plan, runID string) (bool, error) {
	var a struct {
		StepID int    `json:"step_id"`
		Status string `json:"status"`
	}
	err := retry(ctx, func() error {
		return d.c.do(ctx, "get approval", http.MethodGet, "/approvals/"+runID, nil, nil, &a)
	})
	switch {
	case err == nil && a.Status == "pending":
		body := map[string]any{"approved": !p.reject, "comment": "chaos " + p.tag}
		err := retry(ctx, func() error {
			return d.c.do(ctx, "decide", http.MethodPost, fmt.Sprintf("/approvals/%s/%d", runID, a.StepID), body, nil, nil)
		})
		if statusOf(err) == http.StatusConflict { // decided by an earlier try whose answer was lost
			err = nil
		}
		return true, err
	case err != nil && statusOf(err) != http.StatusNotFound:
		return false, err
	}
	step := formStepOf[p.kind]
	if step < 0 {
		return false, nil
	}
	var f struct {
		Status string `json:"status"`
	}
	err = retry(ctx, func() error {
		return d.c.do(ctx, "get form", http.MethodGet, fmt.Sprintf("/forms/%s/%d", runID, step), nil, nil, &f)
	})
	if statusOf(err) == http.StatusNotFound {
		return false, nil
	}
	if err != nil || f.Status != "open" {
		return false, err
	}
	body := map[string]any{"data": map[string]any{"answer": p.answer()}}
	err = retry(ctx, func() error {
		return d.c.do(ctx, "submit form", http.MethodPost, fmt.Sprintf("/forms/%s/%d/submit", runID, step), body, nil, nil)
	})
	if statusOf(err) == http.StatusConflict {
		err = nil
	}
	return true, err
}

// pendingPause says what p's paused run waits at: "approval", "form", or "" for nothing.
func (d *driver) pendingPause(ctx context.Context, p plan, runID string) (string, error) {
	var a struct {
		Status string `json:"status"`
	}
	err := retry(ctx, func() error { return d.c.do(ctx, "get approval", http.MethodGet, "/approvals/"+runID, nil, nil, &a) })
	if err == nil && a.Status == "pending" {
		return "approval", nil
	}
	if err != nil && statusOf(err) != http.StatusNotFound {
		return "", err
	}
	if step := formStepOf[p.kind]; step >= 0 {
		var f struct {
			Status string `json:"status"`
		}
		err := retry(ctx, func() error {
			return d.c.do(ctx, "get form", http.MethodGet, fmt.Sprintf("/forms/%s/%d", runID, step), nil, nil, &f)
		})
		if err != nil && statusOf(err) != http.StatusNotFound {
			return "", err
		}
		if err == nil && f.Status == "open" {
			return "form", nil
		}
	}
	return "", nil
}
