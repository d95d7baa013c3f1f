package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := ok[map[string]string](t, b.do(t, http.MethodGet, "/health", "", nil), http.StatusOK)
	require.Equal(t, map[string]string{"status": "ok"}, got)
}

func TestWorkflowLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)

	created := b.createWorkflow(t, orgA, "onboarding")
	require.True(t, strings.HasPrefix(created.ID, "wfl-"), created.ID)
	require.Equal(t, "onboarding", created.Name)
	require.Equal(t, 1, created.Version)
	require.JSONEq(t, upsertDefinition, string(created.Definition))

	got := ok[workflowDoc](t, b.do(t, http.MethodGet, "/workflows/"+created.ID, orgA, nil), http.StatusOK)
	require.Equal(t, created, got)

	listed := ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", orgA, nil), http.StatusOK)
	require.Len(t, listed.Items, 1)
	require.Equal(t, created.ID, listed.Items[0].ID)
	require.Empty(t, listed.NextCursor)

	updated := ok[workflowDoc](t, b.do(t, http.MethodPut, "/workflows/"+created.ID, orgA,
		workflowBody("onboarding-v2", `{"actions":[]}`)), http.StatusOK)
	require.Equal(t, created.ID, updated.ID)
	require.Equal(t, 2, updated.Version)
	require.Equal(t, "onboarding-v2", updated.Name)
	require.JSONEq(t, `{"actions":[]}`, string(updated.Definition))

	rec := b.do(t, http.MethodDelete, "/workflows/"+created.ID, orgA, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Empty(t, rec.Body.String())

	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/workflows/" + created.ID},
		{http.MethodDelete, "/workflows/" + created.ID},
		{http.MethodPut, "/workflows/" + created.ID},
		{http.MethodPost, "/workflows/" + created.ID + "/execute"},
		{http.MethodGet, "/workflows/wfl-00000000-0000-0000-0000-000000000000"},
	} {
		var body any
		if tc.method == http.MethodPut {
			body = workflowBody("x", `{"actions":[]}`)
		}
		problem(t, b.do(t, tc.method, tc.path, orgA, body), http.StatusNotFound, "not_found")
	}
}

func TestWorkflowWarnings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA,
		workflowBody("w", `{"actions":[{"type":"not_registered_anywhere","properties":{}}]}`)), http.StatusCreated)
	require.NotEmpty(t, w.Warnings)
}

// TestBadWorkflowRequests: every bad create answers its status, code and pointers, and
// none of them writes anything.
func TestBadWorkflowRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		body     any
		headers  []string
		status   int
		code     string
		pointers []string // each must be among the answer's pointers
	}{
		{name: "truncated JSON", body: `{"name": "x", "definition": {`, status: 400, code: "malformed_json"},
		{name: "not JSON", body: `name=x`, status: 400, code: "malformed_json"},
		{name: "trailing garbage", body: `{"name":"x","definition":{"actions":[]}} }`, status: 400, code: "malformed_json"},
		{name: "empty body", body: ``, status: 400, code: "malformed_json"},
		{name: "body is an array", body: `[]`, status: 422, code: "validation_failed"},
		{name: "definition not an object", body: `{"name":"x","definition":"actions"}`, status: 422, code: "validation_failed", pointers: []string{"/definition"}},
		{name: "name missing", body: `{"definition":{"actions":[]}}`, status: 422, code: "validation_failed", pointers: []string{"/name"}},
		{name: "name blank", body: `{"name":"  ","definition":{"actions":[]}}`, status: 422, code: "validation_failed", pointers: []string{"/name"}},
		{name: "unknown member", body: `{"name":"x","definition":{"actions":[]},"color":"red"}`, status: 422, code: "validation_failed", pointers: []string{"/color"}},
		{name: "definition without actions", body: `{"name":"x","definition":{}}`, status: 422, code: "validation_failed", pointers: []string{"/definition/actions"}},
		{
			name: "steps invalid against the definition schema",
			body: workflowBody("x", `{"actions":[
				{"type":"custom-table","properties":{"table":"t","operation":"read"}},
				{"type":5,"properties":{}},
				{"type":"custom-table"}]}`),
			status: 422, code: "validation_failed",
			pointers: []string{"/definition/actions/1/type", "/definition/actions/2/properties"},
		},
		{
			name:   "step properties invalid for the step kind",
			body:   workflowBody("x", `{"actions":[{"type":"custom-table","properties":{"operation":"upsert"}}]}`),
			status: 422, code: "validation_failed",
			pointers: []string{"/definition/actions/0/properties/table", "/definition/actions/0/properties/keys"},
		},
		{
			name: "read limit and loop max_iterations over their maximums",
			body: workflowBody("x", `{"actions":[
				{"type":"custom-table","properties":{"table":"t","operation":"read","limit":10001}},
				{"type":"loop","properties":{"mode":"foreach","items":"@input.xs","max_iterations":100001,
					"steps":[{"type":"custom-table","properties":{"table":"t","operation":"read","limit":20000}}]}}]}`),
			status: 422, code: "validation_failed",
			pointers: []string{"/definition/actions/0/properties/limit", "/definition/actions/1/properties/max_iterations",
				"/definition/actions/1/properties/steps/0/properties/limit"},
		},
		{name: "unsupported content type", body: `{}`, headers: []string{"Content-Type: text/plain"}, status: 415, code: "unsupported_media_type"},
		{name: "over 10 MiB", body: `{"name":"x","definition":{"actions":[],"pad":"` + strings.Repeat("a", 10<<20) + `"}}`, status: 413, code: "body_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			p := problem(t, b.do(t, http.MethodPost, "/workflows", orgA, tc.body, tc.headers...), tc.status, tc.code)
			got := pointers(p)
			for _, want := range tc.pointers {
				require.Contains(t, got, want, "errors: %+v", p.Errors)
			}
			for _, d := range p.Errors {
				require.NotEmpty(t, d.Message)
				if s, isString := d.Value.(string); isString {
					require.LessOrEqual(t, len(s), 200, "a problem must not echo a large body")
				}
			}
			listed := ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", orgA, nil), http.StatusOK)
			require.Empty(t, listed.Items, "a bad request wrote a workflow")
		})
	}
}

func TestDuplicateWorkflowName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.createWorkflow(t, orgA, "dup")
	problem(t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("dup", `{"actions":[]}`)), http.StatusConflict, "conflict")

	other := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("other", `{"actions":[]}`)), http.StatusCreated)
	problem(t, b.do(t, http.MethodPut, "/workflows/"+other.ID, orgA, workflowBody("dup", `{"actions":[]}`)), http.StatusConflict, "conflict")

	got := ok[workflowDoc](t, b.do(t, http.MethodGet, "/workflows/"+other.ID, orgA, nil), http.StatusOK)
	require.Equal(t, 1, got.Version, "a refused update stored a version")
	listed := ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", orgA, nil), http.StatusOK)
	require.Len(t, listed.Items, 2)
}

// TestOrgHeader: the org check answers before Huma reads anything, on every kind of route.
func TestOrgHeader(t *testing.T) {
	t.Parallel()
	routes := []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/workflows", nil},
		{http.MethodPost, "/workflows", `{"name": broken`},
		{http.MethodPost, "/workflows", workflowBody("x", `{"actions":[]}`)},
		{http.MethodGet, "/runs?status=bogus", nil},
		{http.MethodPost, "/custom-tables", map[string]any{"name": "t", "fields": map[string]string{"a": "text"}}},
		{http.MethodGet, "/runs/run-x/status", nil},
	}
	for _, tc := range []struct {
		name, org string
		status    int
		code      string
	}{
		{name: "missing", org: "", status: 401, code: "missing_org"},
		{name: "spaces", org: "org a", status: 400, code: "invalid_org"},
		{name: "slash", org: "org/a", status: 400, code: "invalid_org"},
		{name: "too long", org: strings.Repeat("a", 129), status: 400, code: "invalid_org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for _, r := range routes {
				var headers []string
				if tc.org != "" {
					headers = append(headers, "X-Org-Id: "+tc.org)
				}
				problem(t, b.do(t, r.method, r.path, "", r.body, headers...), tc.status, tc.code)
			}
		})
	}
	t.Run("longest valid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", strings.Repeat("a", 128), nil), http.StatusOK)
		ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", "Acme_1.eu:prod-2", nil), http.StatusOK)
	})
}

func TestRouterFallbacks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
		allow        []string
	}{
		{http.MethodGet, "/nope", 404, "not_found", nil},
		{http.MethodGet, "/workflows/x/y/z", 404, "not_found", nil},
		{http.MethodDelete, "/workflows", 405, "method_not_allowed", []string{"GET", "POST"}},
		{http.MethodPatch, "/workflows/wfl-1", 405, "method_not_allowed", []string{"GET", "PUT", "DELETE"}},
		{http.MethodGet, "/runs/run-1/cancel", 405, "method_not_allowed", []string{"POST"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			rec := b.do(t, tc.method, tc.path, orgA, nil)
			problem(t, rec, tc.status, tc.code)
			if tc.allow != nil {
				require.ElementsMatch(t, tc.allow, rec.Header().Values("Allow"))
			}
		})
	}
}

func TestInternalErrorsAreHidden(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.st.Close())
	p := problem(t, b.do(t, http.MethodGet, "/workflows", orgA, nil), http.StatusInternalServerError, "internal")
	require.Equal(t, "internal error", p.Detail)
	require.Empty(t, p.Errors)
	require.Contains(t, b.logs.String(), "request failed", "the real error must be logged")
	// The line names the request and its organization.
	require.Regexp(t, `msg="request failed" method=GET path=/workflows org_id=`+orgA+` err=`, b.logs.String())
}

func TestExecute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createWorkflow(t, orgA, "w")

	t.Run("no body", func(t *testing.T) {
		run := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, nil), http.StatusAccepted)
		require.True(t, strings.HasPrefix(run.ID, "run-"), run.ID)
		require.Equal(t, "running", run.Status)
	})
	t.Run("with input", func(t *testing.T) {
		run := b.execute(t, orgA, w.ID, map[string]any{"email": "a@example.com"})
		require.Equal(t, "running", run.Status)
	})
	t.Run("idempotency key", func(t *testing.T) {
		first := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, `{"input":{"n":1}}`, "Idempotency-Key: k-1"), http.StatusAccepted)
		again := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, `{"input":{"n":1}}`, "Idempotency-Key: k-1"), http.StatusAccepted)
		require.Equal(t, first.ID, again.ID)
		other := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, `{"input":{"n":1}}`, "Idempotency-Key: k-2"), http.StatusAccepted)
		require.NotEqual(t, first.ID, other.ID)
		// The key belongs to org A: org B using it starts nothing of A's (and B has no such workflow).
		problem(t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgB, `{}`, "Idempotency-Key: k-1"), http.StatusNotFound, "not_found")
	})

	before := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs?limit=500", orgA, nil), http.StatusOK)
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
		ptr    string
	}{
		{"input not an object", `{"input": 5}`, 422, "validation_failed", "/input"},
		{"input a string", `{"input": "x"}`, 422, "validation_failed", "/input"},
		{"input an array", `{"input": [1]}`, 422, "validation_failed", "/input"},
		{"malformed", `{"input": {`, 400, "malformed_json", ""},
		{"not JSON", `input=1`, 400, "malformed_json", ""},
		{"a member besides input", `{"input": {"key": "sk-live-never-echoed-0042"}, "inptu": {}}`, 422, "validation_failed", ""},
		{"not an object", `[{"input": {}}]`, 422, "validation_failed", ""},
	} {
		rec := b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, tc.body)
		p := problem(t, rec, tc.status, tc.code)
		if tc.ptr != "" {
			require.Contains(t, pointers(p), tc.ptr, tc.name)
		}
		require.NotContains(t, rec.Body.String(), "sk-live-never-echoed", "%s: the body is not echoed", tc.name)
	}
	// Not JSON at all: 415, as on every route with a body.
	problem(t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA, `{"input": {}}`, "Content-Type: text/plain"), http.StatusUnsupportedMediaType, "unsupported_media_type")
	after := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs?limit=500", orgA, nil), http.StatusOK)
	require.Len(t, after.Items, len(before.Items), "a bad execute started a run")
}

// TestRunEndToEnd: a workflow with a custom-table upsert step runs to completion and every
// run route tells the story.
func TestRunEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createWorkflow(t, orgA, "contacts")
	run := b.execute(t, orgA, w.ID, map[string]any{"email": "ada@example.com", "name": "Ada"})

	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "running", status["status"])

	b.work(t)

	status = ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, run.ID, status["id"])
	require.Equal(t, "completed", status["status"], "status: %v", status)
	runCtx, isMap := status["context"].(map[string]any)
	require.True(t, isMap, "context: %v", status["context"])
	saved, isMap := runCtx["saved"].(map[string]any)
	require.True(t, isMap, "context: %v", runCtx)
	require.Equal(t, "contacts", saved["table"])
	steps, isList := status["steps"].([]any)
	require.True(t, isList)
	require.Len(t, steps, 1)
	require.Equal(t, map[string]any{"index": float64(0), "type": "custom-table", "status": "completed"}, steps[0])

	evidence := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/evidence", orgA, nil), http.StatusOK)
	require.Equal(t, run.ID, evidence["run_id"])
	require.Equal(t, "completed", evidence["status"])
	effects, isList := evidence["effects"].([]any)
	require.True(t, isList, "evidence: %v", evidence)
	require.NotEmpty(t, effects)

	events := ok[list[eventDoc]](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/events", orgA, nil), http.StatusOK)
	require.GreaterOrEqual(t, len(events.Items), 2)
	require.Equal(t, "workflow_run_started", events.Items[0].Event)
	require.Equal(t, "workflow_run_completed", events.Items[len(events.Items)-1].Event)

	rows := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/contacts/rows?where="+url.QueryEscape(`{"email":"ada@example.com"}`), orgA, nil), http.StatusOK)
	require.Len(t, rows.Items, 1)
	require.Equal(t, "Ada", rows.Items[0].Data["name"])

	// A finished run cannot be cancelled.
	p := problem(t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/cancel", orgA, map[string]string{"reason": "late"}), http.StatusConflict, "conflict")
	require.Contains(t, p.Detail, "ended")
	status = ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", status["status"])
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createWorkflow(t, orgA, "w")

	run := b.execute(t, orgA, w.ID, map[string]any{"email": "x@example.com"})
	got := ok[runRef](t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/cancel", orgA, map[string]string{"reason": "duplicate"}, "X-Actor-Id: ops-7"), http.StatusOK)
	require.Equal(t, runRef{ID: run.ID, Status: "cancelled"}, got)
	problem(t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/cancel", orgA, map[string]string{"reason": "again"}), http.StatusConflict, "conflict")

	events := ok[list[eventDoc]](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/events", orgA, nil), http.StatusOK)
	last := events.Items[len(events.Items)-1]
	require.Equal(t, "workflow_run_cancelled", last.Event)
	require.Equal(t, "duplicate", last.Payload["reason"])
	require.Equal(t, map[string]any{"type": "api", "id": "ops-7"}, last.Payload["actor"])

	b.work(t) // nothing left to run: the cancelled run stays cancelled
	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "cancelled", status["status"])

	// Without a body and without X-Actor-Id: actor id "api".
	run2 := b.execute(t, orgA, w.ID, nil)
	ok[runRef](t, b.do(t, http.MethodPost, "/runs/"+run2.ID+"/cancel", orgA, nil), http.StatusOK)
	events = ok[list[eventDoc]](t, b.do(t, http.MethodGet, "/runs/"+run2.ID+"/events", orgA, nil), http.StatusOK)
	require.Equal(t, map[string]any{"type": "api", "id": "api"}, events.Items[len(events.Items)-1].Payload["actor"])

	problem(t, b.do(t, http.MethodPost, "/runs/run-missing/cancel", orgA, nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodPost, "/runs/"+run2.ID+"/cancel", orgA, `{"reason":`), http.StatusBadRequest, "malformed_json")
}

func TestListRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w1 := b.createWorkflow(t, orgA, "one")
	w2 := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("two", `{"actions":[]}`)), http.StatusCreated)
	r1 := b.execute(t, orgA, w1.ID, map[string]any{"email": "a@example.com"})
	r2 := b.execute(t, orgA, w2.ID, nil)
	r3 := b.execute(t, orgA, w2.ID, nil)
	ok[runRef](t, b.do(t, http.MethodPost, "/runs/"+r3.ID+"/cancel", orgA, nil), http.StatusOK)

	ids := func(q string) []string {
		t.Helper()
		l := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs"+q, orgA, nil), http.StatusOK)
		out := []string{}
		for _, r := range l.Items {
			out = append(out, r.ID)
		}
		return out
	}
	require.ElementsMatch(t, []string{r1.ID, r2.ID, r3.ID}, ids(""))
	require.ElementsMatch(t, []string{r2.ID, r3.ID}, ids("?workflow_id="+w2.ID))
	require.ElementsMatch(t, []string{r1.ID, r2.ID}, ids("?status=running"))
	require.ElementsMatch(t, []string{r3.ID}, ids("?status=cancelled&workflow_id="+w2.ID))
	require.Empty(t, ids("?status=completed"))

	for _, q := range []string{"?status=bogus", "?limit=0", "?limit=501", "?limit=x"} {
		p := problem(t, b.do(t, http.MethodGet, "/runs"+q, orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
		require.NotEmpty(t, p.Errors, q)
		require.True(t, strings.HasPrefix(p.Errors[0].Location, "query."), "%s: %+v", q, p.Errors[0])
	}
	p := problem(t, b.do(t, http.MethodGet, "/runs?status=bogus", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, "query.status[0]", p.Errors[0].Location)
}

func TestPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	want := map[string]bool{}
	for i := range 5 {
		w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody(fmt.Sprintf("w%d", i), `{"actions":[]}`)), http.StatusCreated)
		want[w.ID] = true
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		q := "/workflows?limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		page := ok[list[workflowDoc]](t, b.do(t, http.MethodGet, q, orgA, nil), http.StatusOK)
		require.LessOrEqual(t, len(page.Items), 2)
		for _, w := range page.Items {
			require.False(t, seen[w.ID], "duplicate across pages")
			seen[w.ID] = true
		}
		pages++
		require.Less(t, pages, 10)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	require.Equal(t, want, seen)
	require.Equal(t, 3, pages)

	// The default page holds up to 50.
	page := ok[list[workflowDoc]](t, b.do(t, http.MethodGet, "/workflows", orgA, nil), http.StatusOK)
	require.Len(t, page.Items, 5)

	// A cursor the store cannot read is the caller's mistake, located at the parameter
	// (TestListRoutesPage checks every list route).
	for _, path := range []string{"/workflows", "/runs"} {
		p := problem(t, b.do(t, http.MethodGet, path+"?cursor=not-a-cursor", orgA, nil), http.StatusBadRequest, "invalid_cursor")
		require.Equal(t, "query.cursor", p.Errors[0].Location, path)
	}
}

func TestCustomTables(t *testing.T) {
	t.Parallel()
	b := setup(t)

	created := ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "exceptions", "fields": map[string]string{"ref": "text", "status": "text", "amount": "number"},
	}), http.StatusCreated)
	require.Equal(t, "exceptions", created["name"])
	require.Equal(t, map[string]any{"ref": "text", "status": "text", "amount": "number"}, created["fields"])
	require.NotContains(t, created, "org_id")

	problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "exceptions", "fields": map[string]string{"ref": "text"},
	}), http.StatusConflict, "conflict")
	p := problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{
		"name": "bad name", "fields": map[string]string{"x": "blob"},
	}), http.StatusUnprocessableEntity, "validation_failed")
	require.ElementsMatch(t, []string{"/name", "/fields/x"}, pointers(p))
	problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, `{"name":"t","fields":{"a":1}}`), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/custom-tables", orgA, `{"name":"t",`), http.StatusBadRequest, "malformed_json")

	tables := ok[list[map[string]any]](t, b.do(t, http.MethodGet, "/custom-tables", orgA, nil), http.StatusOK)
	require.Len(t, tables.Items, 1, "only the good table exists")

	// Rows arrive through a workflow step.
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("exc", `{"actions":[
		{"type":"custom-table","properties":{"table":"exceptions","operation":"write","fields":{"ref":"@input.ref","status":"pending_review","amount":"@input.amount"}}}]}`)), http.StatusCreated)
	for i, ref := range []string{"A-1", "A-2", "A-3"} {
		b.execute(t, orgA, w.ID, map[string]any{"ref": ref, "amount": 10 * (i + 1)})
	}
	b.work(t)

	read := func(q string) []rowDoc {
		t.Helper()
		return ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/exceptions/rows"+q, orgA, nil), http.StatusOK).Items
	}
	require.Len(t, read(""), 3)
	require.Len(t, read("?limit=2"), 2)
	require.Len(t, read("?where="+url.QueryEscape(`{"status":"pending_review"}`)), 3)
	got := read("?where=" + url.QueryEscape(`{"ref":"A-2"}`))
	require.Len(t, got, 1)
	require.Equal(t, float64(20), got[0].Data["amount"])
	require.Len(t, read("?where="+url.QueryEscape(`{"amount":30}`)), 1)

	updated := ok[map[string]int](t, b.do(t, http.MethodPatch, "/custom-tables/exceptions/rows", orgA, map[string]any{
		"where": map[string]any{"ref": "A-2"}, "set": map[string]any{"status": "resolved"},
	}), http.StatusOK)
	require.Equal(t, map[string]int{"updated": 1}, updated)
	require.Len(t, read("?where="+url.QueryEscape(`{"status":"resolved"}`)), 1)
	require.Len(t, read("?where="+url.QueryEscape(`{"status":"pending_review"}`)), 2)

	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code, location     string
	}{
		{"where not JSON", http.MethodGet, "/custom-tables/exceptions/rows?where=" + url.QueryEscape(`{ref`), nil, 422, "validation_failed", "query.where"},
		{"where an array", http.MethodGet, "/custom-tables/exceptions/rows?where=" + url.QueryEscape(`["ref"]`), nil, 422, "validation_failed", "query.where"},
		{"where a string", http.MethodGet, "/custom-tables/exceptions/rows?where=" + url.QueryEscape(`"ref"`), nil, 422, "validation_failed", "query.where"},
		{"limit too large", http.MethodGet, "/custom-tables/exceptions/rows?limit=501", nil, 422, "validation_failed", "query.limit"},
		{"unknown table read", http.MethodGet, "/custom-tables/nope/rows", nil, 404, "not_found", ""},
		{"unknown table patch", http.MethodPatch, "/custom-tables/nope/rows", map[string]any{"where": map[string]any{}, "set": map[string]any{"a": 1}}, 404, "not_found", ""},
		{"set undeclared column", http.MethodPatch, "/custom-tables/exceptions/rows", map[string]any{"where": map[string]any{}, "set": map[string]any{"color": "red"}}, 422, "validation_failed", "body.set"},
		{"set empty", http.MethodPatch, "/custom-tables/exceptions/rows", map[string]any{"where": map[string]any{}, "set": map[string]any{}}, 422, "validation_failed", "body.set"},
		{"where missing", http.MethodPatch, "/custom-tables/exceptions/rows", map[string]any{"set": map[string]any{"status": "x"}}, 422, "validation_failed", "body.where"},
		{"where not an object", http.MethodPatch, "/custom-tables/exceptions/rows", map[string]any{"where": "ref", "set": map[string]any{"status": "x"}}, 422, "validation_failed", "body.where"},
		{"malformed patch", http.MethodPatch, "/custom-tables/exceptions/rows", `{"where":`, 400, "malformed_json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := problem(t, b.do(t, tc.method, tc.path, orgA, tc.body), tc.status, tc.code)
			if tc.location != "" {
				require.NotEmpty(t, p.Errors)
				require.Equal(t, tc.location, p.Errors[0].Location, "%+v", p.Errors[0])
			}
		})
	}
	// None of the refused patches changed a row.
	require.Len(t, read("?where="+url.QueryEscape(`{"status":"pending_review"}`)), 2)
	require.Len(t, read("?where="+url.QueryEscape(`{"status":"x"}`)), 0)
}

func TestProblemShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.do(t, http.MethodGet, "/workflows/wfl-missing", orgA, nil)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw))
	require.Equal(t, map[string]any{
		"title": "Not Found", "status": float64(404), "code": "not_found", "detail": "workflow not found",
	}, raw)
}
