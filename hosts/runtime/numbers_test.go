package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// setupOn is setup on the named store dialect ("sqlite" or "postgres").
func setupOn(t *testing.T, dialect string) *bundle {
	t.Helper()
	st := store.OpenTest(t, dialect)
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t)})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	srv := runtime.New(eng, runtime.Options{Logger: slog.New(slog.DiscardHandler), Version: "test", IdentityKey: testIdentityKey})
	return &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API()}
}

func numberDialects(t *testing.T) []string {
	if os.Getenv("SVC_TEST_POSTGRES_DSN") == "" {
		t.Log("SVC_TEST_POSTGRES_DSN unset: SQLite only")
		return []string{"sqlite"}
	}
	return []string{"sqlite", "postgres"}
}

// A number in a run's input is data: a 30-digit reference and a decimal no float64 holds
// come back with the digits they were sent with, in the run's context, a step's output, a
// template it renders, and a custom table's row written then read back (docs/decisions.md,
// "Numbers kept exactly").
func TestNumbersKeptExactly(t *testing.T) {
	t.Parallel()
	const (
		big = "123456789012345678901234567891"
		dec = "0.1000000000000000055511151231257827"
	)
	for _, dialect := range numberDialects(t) {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, dialect)
			b.eng.RegisterStep("echo", func(_ context.Context, call *svctype.StepCall) (any, error) { return call.Properties, nil })
			ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
				"name": "refs", "fields": map[string]string{"a": "number", "d": "number", "text": "text"},
			}), http.StatusCreated)
			w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("numbers", `{"actions": [
			  {"type": "echo", "outputKey": "echoed", "properties": {"a": "@input.a", "d": "@input.d", "text": "ref {{input.a}} / {{input.d}}"}},
			  {"type": "custom-table", "properties": {"table": "refs", "operation": "write",
			    "fields": {"a": "@echoed.a", "d": "@input.d", "text": "ref {{input.a}}"}}}]}`)), http.StatusCreated)
			run := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA,
				`{"input": {"a": `+big+`, "d": `+dec+`}}`), http.StatusAccepted)
			b.work(t)

			rec := b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			body := rec.Body.String()
			require.Contains(t, body, `"status":"completed"`)
			require.Contains(t, body, `"input":{"a":`+big+`,"d":`+dec+`}`, "the context's input")
			require.Contains(t, body, `"a":`+big+`,"d":`+dec+`,"text":"ref `+big+` / `+dec+`"`, "the step's output and its template")

			rows := b.do(t, http.MethodGet, "/custom-tables/refs/rows", orgA, nil)
			require.Equal(t, http.StatusOK, rows.Code, rows.Body.String())
			require.Contains(t, rows.Body.String(), `"a":`+big)
			require.Contains(t, rows.Body.String(), `"d":`+dec)
			require.Contains(t, rows.Body.String(), `"text":"ref `+big+`"`)
		})
	}
}

// A condition compares numbers on their digits: 30-digit integers that differ in the last
// digit are not equal, and the larger is greater, though one float64 holds both.
func TestConditionsCompareBigNumbersExactly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.eng.RegisterStep("echo", func(_ context.Context, call *svctype.StepCall) (any, error) { return call.Properties, nil })
	for i, tc := range []struct {
		condition, a string
		want         string
	}{
		{`{"equal": ["@input.a", 123456789012345678901234567891]}`, "123456789012345678901234567891", "completed"},
		{`{"equal": ["@input.a", 123456789012345678901234567891]}`, "123456789012345678901234567890", "condition_not_met"},
		{`{"greaterThan": ["@input.a", 123456789012345678901234567890]}`, "123456789012345678901234567891", "completed"},
		{`{"greaterThan": ["@input.a", 123456789012345678901234567890]}`, "123456789012345678901234567890", "condition_not_met"},
		{`{"lessThan": ["@input.a", "@input.b"]}`, "99999999999999999999999999999", "completed"},
	} {
		w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody(fmt.Sprint("cond", i),
			`{"condition": `+tc.condition+`, "actions": [{"type": "echo", "properties": {"a": "@input.a"}}]}`)),
			http.StatusCreated)
		run := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA,
			`{"input": {"a": `+tc.a+`, "b": 100000000000000000000000000000}}`), http.StatusAccepted)
		b.work(t)
		doc := ok[struct {
			Status string `json:"status"`
		}](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
		require.Equal(t, tc.want, doc.Status, "%s with a = %s: %+v", tc.condition, tc.a, doc)
	}
}

// A number no float64 holds is refused where it comes in, naming where it is, and no run
// is made.
func TestOutOfRangeNumberIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createWorkflow(t, orgA, "contacts")
	for _, tc := range []struct{ body, pointer string }{
		{`{"input": {"n": 1e400}}`, "/input/n"},
		{`{"input": {"list": [1, {"x": -1E999}]}}`, "/input/list/1/x"},
	} {
		for _, query := range []string{"", "?wait=1s"} {
			p := problem(t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute"+query, orgA, tc.body), http.StatusUnprocessableEntity, "validation_failed")
			require.Equal(t, []string{tc.pointer}, pointers(p), tc.body)
		}
	}
	runs := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs", orgA, nil), http.StatusOK)
	require.Empty(t, runs.Items, "no run was made")
	// 1e-400 is not out of range: it is kept as written.
	run := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, `{"input": {"email": "a@x", "tiny": 1e-400}}`), http.StatusAccepted)
	rec := b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil)
	require.Contains(t, rec.Body.String(), `"tiny":1e-400`)
}

// A person's form submission and a rows update are data too: a 30-digit number submitted
// to a form pause reaches the run's context with its digits, and one set by
// PATCH /custom-tables/{tableName}/rows is the row's, exactly.
func TestSubmittedNumbersKeptExactly(t *testing.T) {
	t.Parallel()
	const big = "123456789012345678901234567891"
	b := setupOn(t, "sqlite")
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("ask", `{"actions": [
	  {"type": "PbotForm", "properties": {"expected_keys": ["account"], "schema": {"version": "form_schema_v1",
	    "pages": [{"id": "p", "fields": [{"key": "account", "type": "number", "label": "Account", "required": true}]}]}}}]}`)), http.StatusCreated)
	run := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, `{"input": {}}`), http.StatusAccepted)
	b.work(t)
	ok[map[string]any](t, b.do(t, http.MethodPost, "/forms/"+run.ID+"/0/submit", orgA, `{"data": {"account": `+big+`}}`), http.StatusOK)
	b.work(t)
	rec := b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"account":`+big, "the submitted number, digit for digit")
	rec = b.do(t, http.MethodGet, "/forms/"+run.ID+"/0", orgA, nil)
	require.Contains(t, rec.Body.String(), `"account":`+big)

	ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "accounts", "fields": map[string]string{"name": "text", "n": "number"}}), http.StatusCreated)
	wr := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("row", `{"actions": [
	  {"type": "custom-table", "properties": {"table": "accounts", "operation": "write", "fields": {"name": "ada", "n": 1}}}]}`)), http.StatusCreated)
	ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+wr.ID+"/execute", orgA, `{"input": {}}`), http.StatusAccepted)
	b.work(t)
	ok[map[string]any](t, b.do(t, http.MethodPatch, "/custom-tables/accounts/rows", orgA, `{"where": {"name": "ada"}, "set": {"n": `+big+`}}`), http.StatusOK)
	rec = b.do(t, http.MethodGet, "/custom-tables/accounts/rows", orgA, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"n":`+big, rec.Body.String())
}
