package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// ledgerFlow is hosts/worker's ledgerFlow (helpers_test.go), the workflow of make bench-runs:
// an upsert keyed on the input id, a filtered read with a where, and a plain insert whose
// field is a template. Keep the two identical, or the figures stop comparing.
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

// ledgerBody is the execute body of run i: hosts/worker's ledgerInput(i) as the input, its
// account one of keys distinct ones (50 as hosts/worker's).
func ledgerBody(i, keys int) []byte {
	return fmt.Appendf(nil, `{"input": {"id": "acct-%d", "amount": %d}}`, keyOf(i, keys), i%20)
}

// keyOf is run i's account among keys: spread over the whole range (7919 is a prime that
// divides no key count here), so that a run's rows are anywhere in a large table, not in its
// first pages.
func keyOf(i, keys int) int { return i * 7919 % keys }

// prefillFlow upserts an account per id of its input: what fills the accounts table with
// every key before the timed runs, so that they read and write a table of -keys rows.
const prefillFlow = `{"actions": [
  {"type": "loop", "properties": {"mode": "foreach", "items": "@input.ids", "max_iterations": 100000, "steps": [
    {"type": "custom-table", "properties": {"table": "accounts", "operation": "upsert", "keys": ["id"], "values": ["@item"],
                                            "fields": {"amount": 0}}}
  ]}}
]}`

const (
	// waitParam is what ?wait= asks for on execute and status.
	waitParam = "30s"
	// requestTimeout bounds one request: a long poll of waitParam and then some.
	requestTimeout = 45 * time.Second
	// runTimeout bounds the wait for one run to end.
	runTimeout = 5 * time.Minute
	// pollEvery is the pause between two status requests of the poll mode, and between two
	// status requests that came back running at once from a server that ignores ?wait=.
	pollEvery = 20 * time.Millisecond
	// quickAnswer is how fast a status answer that is still running must come back for the
	// client to take it that the server ignored ?wait= (a long poll lasts until the run ends
	// or the wait is over).
	quickAnswer = 5 * time.Millisecond
)

// client speaks the runtime API of one server.
type client struct {
	base string
	hc   *http.Client
	// keys is how many distinct account keys the runs use (the table grows to that many rows).
	keys int
}

// newClient keeps up to conns idle connections to the server, so that each of that many
// concurrent callers reuses its connection instead of dialing per request.
func newClient(base string, conns int) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &client{base: base, hc: &http.Client{Transport: tr}, keys: 50}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// runDoc is what the client reads of execute's and status's answers.
type runDoc struct {
	ID     string            `json:"id"`
	Status svctype.RunStatus `json:"status"`
	Reason string            `json:"reason,omitempty"`
}

// apiError is a non-2xx answer.
type apiError struct {
	op     string // "execute", "status", ...
	status int
	code   string // the problem's code, when the body is one
}

func (e *apiError) Error() string {
	if e.code != "" {
		return fmt.Sprintf("%s: HTTP %d %s", e.op, e.status, e.code)
	}
	return fmt.Sprintf("%s: HTTP %d", e.op, e.status)
}

// do sends one request as org and decodes a 2xx JSON answer into out (when not nil). It
// reads every body to its end so that the connection goes back to the pool.
func (c *client) do(ctx context.Context, op, method, path, org string, body []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if org != "" { // "" for the public form routes
		req.Header.Set("X-Org-Id", org)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// The cause without the URL, whose run id would make every failure a reason of its own.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&p)
		return resp.StatusCode, &apiError{op: op, status: resp.StatusCode, code: p.Code}
	}
	if raw, ok := out.(*[]byte); ok { // the answer's bytes, for the caller to parse
		if *raw, err = io.ReadAll(resp.Body); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: read the answer: %w", op, err)
		}
		return resp.StatusCode, nil
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: decode the answer: %w", op, err)
		}
	}
	return resp.StatusCode, nil
}

// setupLedger declares ledgerFlow's tables and the workflow for org and returns its id.
func (c *client) setupLedger(ctx context.Context, org string) (string, error) {
	tables := []string{
		`{"name": "accounts", "fields": {"id": "text", "amount": "number"}}`,
		`{"name": "ledger", "fields": {"run": "text", "text": "text"}}`,
	}
	for _, t := range tables {
		if _, err := c.do(ctx, "create table", http.MethodPost, "/custom-tables", org, []byte(t), nil); err != nil {
			return "", err
		}
	}
	if err := c.prefill(ctx, org); err != nil {
		return "", err
	}
	return c.createWorkflow(ctx, org, "ledger", ledgerFlow)
}

// prefill writes the c.keys accounts through prefillFlow, 20,000 a run.
func (c *client) prefill(ctx context.Context, org string) error {
	wfID, err := c.createWorkflow(ctx, org, "prefill", prefillFlow)
	if err != nil {
		return err
	}
	const chunk = 20_000
	for lo := 0; lo < c.keys; lo += chunk {
		var b bytes.Buffer
		b.WriteString(`{"input": {"ids": [`)
		for k := lo; k < min(lo+chunk, c.keys); k++ {
			if k > lo {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"acct-%d"`, k)
		}
		b.WriteString(`]}}`)
		var d runDoc
		if _, err := c.do(ctx, "prefill", http.MethodPost, "/workflows/"+url.PathEscape(wfID)+"/execute", org, b.Bytes(), &d); err != nil {
			return err
		}
		var requests int
		d, err := c.awaitEnd(ctx, org, d, &requests)
		if err != nil {
			return err
		}
		if d.Status != svctype.RunCompleted {
			return fmt.Errorf("prefill run %s ended %s", d.ID, d.Status)
		}
	}
	return nil
}

// setupForm creates a public external form whose submissions start workflow wfID with the
// ledger input {id, amount}, and returns its id.
func (c *client) setupForm(ctx context.Context, org, wfID string) (string, error) {
	body := fmt.Appendf(nil, `{"name": "ledger intake", "is_public": true, "trigger_workflow_id": %q,
		"schema": {"version": "form_schema_v1", "pages": [{"id": "p", "fields": [
			{"key": "id", "type": "text", "label": "Account", "required": true},
			{"key": "amount", "type": "number", "label": "Amount", "required": true}]}]}}`, wfID)
	var f struct {
		ID string `json:"id"`
	}
	_, err := c.do(ctx, "create form", http.MethodPost, "/external-forms", org, body, &f)
	return f.ID, err
}

// submit sends submission i to public form formID (no X-Org-Id) and returns the run it
// started, as running.
func (c *client) submit(ctx context.Context, formID string, i int) (runDoc, error) {
	var res struct {
		RunID string `json:"triggered_run_id"`
	}
	body := fmt.Appendf(nil, `{"id": "acct-%d", "amount": %d}`, keyOf(i, c.keys), i%20)
	if _, err := c.do(ctx, "submit", http.MethodPost, "/forms/public/"+url.PathEscape(formID)+"/submit", "", body, &res); err != nil {
		return runDoc{}, err
	}
	return runDoc{ID: res.RunID, Status: svctype.RunRunning}, nil
}

// execute starts run i of workflow wfID; wait is the ?wait= parameter, "" for none.
func (c *client) execute(ctx context.Context, org, wfID string, i int, wait string) (runDoc, error) {
	path := "/workflows/" + url.PathEscape(wfID) + "/execute"
	if wait != "" {
		path += "?wait=" + wait
	}
	var d runDoc
	_, err := c.do(ctx, "execute", http.MethodPost, path, org, ledgerBody(i, c.keys), &d)
	return d, err
}

// status reads a run's status; wait is the ?wait= parameter, "" for none.
func (c *client) status(ctx context.Context, org, runID, wait string) (runDoc, error) {
	path := "/runs/" + url.PathEscape(runID) + "/status"
	if wait != "" {
		path += "?wait=" + wait
	}
	var d runDoc
	_, err := c.do(ctx, "status", http.MethodGet, path, org, nil, &d)
	return d, err
}

// awaitEnd follows run d until its status is not running, with long polls
// (GET /runs/{id}/status?wait=30s). A server that ignores ?wait= answers at once; a running
// answer that came back in under quickAnswer is taken for that, and the next request waits
// pollEvery, so the client works with and without long polls. requests counts the requests
// sent.
func (c *client) awaitEnd(ctx context.Context, org string, d runDoc, requests *int) (runDoc, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	for d.Status == svctype.RunRunning {
		sent := time.Now()
		next, err := c.status(ctx, org, d.ID, waitParam)
		*requests++
		if err != nil {
			return d, runError(ctx, d, err)
		}
		d = next
		if d.Status == svctype.RunRunning && time.Since(sent) < quickAnswer {
			if err := sleep(ctx, pollEvery); err != nil {
				return d, runError(ctx, d, err)
			}
		}
	}
	return d, nil
}

// pollEnd follows run d until its status is not running, asking every pollEvery.
func (c *client) pollEnd(ctx context.Context, org string, d runDoc, requests *int) (runDoc, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	for d.Status == svctype.RunRunning {
		if err := sleep(ctx, pollEvery); err != nil {
			return d, runError(ctx, d, err)
		}
		next, err := c.status(ctx, org, d.ID, "")
		*requests++
		if err != nil {
			return d, runError(ctx, d, err)
		}
		d = next
	}
	return d, nil
}

// runError names a run that outlived runTimeout instead of a bare deadline.
func runError(ctx context.Context, d runDoc, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("status: still %s after %s", d.Status, runTimeout)
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
