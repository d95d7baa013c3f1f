package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/hosts/gateway"
)

// TestConsoleReachesOnlyItsWindow: the console's API forwards the allow-listed runtime
// routes of an organization the management token's account owns, and nothing else; a
// decision through it is the account holder's.
func TestConsoleReachesOnlyItsWindow(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	mgmtB, _, _ := b.signup(t, "other@platform.example", "cust-b")
	code, wf, _ := b.call(t, "POST", "/workflows", live, `{"name": "sign-off", "definition": {"actions": [{"type": "PbotApproval", "properties": {"approver_role": "ops"}}]}}`)
	require.Equal(t, http.StatusCreated, code, wf)
	code, run, _ := b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusAccepted, code, run)
	_, err := b.eng.Work(context.Background())
	require.NoError(t, err)
	runID := run["id"].(string)

	api := "/console/api/orgs/cust-a"
	code, p, _ := b.call(t, "GET", api+"/runs", mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Len(t, p["items"], 1)
	code, p, _ = b.call(t, "GET", api+"/runs/"+runID+"/status", mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "paused", p["status"])
	for _, path := range []string{"/runs/" + runID + "/evidence", "/runs/" + runID + "/events", "/approvals?status=pending", "/forms/pending", "/webhooks",
		"/runs/" + runID + "/context/__run_id"} {
		code, p, _ = b.call(t, "GET", api+path, mgmt, "")
		require.Equal(t, http.StatusOK, code, "%s: %v", path, p)
	}

	// Outside the window: 404, whatever the runtime would have answered.
	for _, tc := range []struct{ method, path string }{
		{"GET", "/org-config"}, {"DELETE", "/workflows/" + wf["id"].(string)}, {"POST", "/workflows"},
		{"GET", "/runs/../org-config"}, {"POST", "/runs/" + runID + "/context/input"}, {"GET", "/runs/" + runID + "/context/a/b"},
		{"DELETE", "/runs/" + runID}, {"POST", "/runs/" + runID + "/cancel/x"}, {"GET", "/runs/" + runID + "/cancel"},
		{"POST", "/agents/x/resume"}, {"GET", "/agents/x/trace/y"},
	} {
		code, p, _ = b.call(t, tc.method, api+tc.path, mgmt, `{}`)
		require.Equal(t, http.StatusNotFound, code, "%s %s: %v", tc.method, tc.path, p)
	}
	code, _, _ = b.call(t, "GET", "/console/api/orgs/cust-a/runs", mgmtB, "")
	require.Equal(t, http.StatusNotFound, code, "another account's organization")
	code, p, _ = b.call(t, "GET", "/console/api/orgs/cust-a/runs", live, "")
	require.Equal(t, http.StatusForbidden, code, "a runtime key is not a management token")
	require.Equal(t, "key_on_management_route", p["code"])
	code, _, _ = b.call(t, "GET", "/console/api/orgs/cust-a/runs", "", "")
	require.Equal(t, http.StatusUnauthorized, code)

	// A decision is the account holder's; a client's own identity header is not believed.
	code, p, _ = b.call(t, "POST", api+"/approvals/"+runID+"/0", mgmt, `{"approved": true, "comment": "ship it"}`, "X-Svc-Identity: forged")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, map[string]any{"type": "user", "id": "ops@platform.example"}, p["decided_by"])

	// A cancel through the console is the account holder's, with the reason given.
	code, p, _ = b.call(t, "GET", api+"/runs/"+runID+"/context/__run_id", mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, runID, p["value"])
	code, wf2, _ := b.call(t, "POST", "/workflows", live, `{"name": "form-then-end", "definition": {"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["answer"]}}]}}`)
	require.Equal(t, http.StatusCreated, code, wf2)
	code, run2, _ := b.call(t, "POST", "/workflows/"+wf2["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusAccepted, code, run2)
	_, err = b.eng.Work(context.Background())
	require.NoError(t, err)
	code, p, _ = b.call(t, "POST", api+"/runs/"+run2["id"].(string)+"/cancel", mgmt, `{"reason": "sent by mistake"}`, "X-Actor-Id: forged")
	require.Equal(t, http.StatusOK, code, p)
	code, p, _ = b.call(t, "GET", "/runs/"+run2["id"].(string)+"/events", live, "")
	require.Equal(t, http.StatusOK, code, p)
	var cancelled map[string]any
	for _, e := range p["items"].([]any) {
		if e.(map[string]any)["event"] == "workflow_run_cancelled" {
			cancelled = e.(map[string]any)
		}
	}
	require.NotNil(t, cancelled, "the run's events: %v", p["items"])
	require.Contains(t, fmt.Sprint(cancelled), "sent by mistake")
	require.Contains(t, fmt.Sprint(cancelled), "ops@platform.example")
	require.NotContains(t, fmt.Sprint(cancelled), "forged")
	code, p, _ = b.call(t, "POST", "/console/api/orgs/cust-a/runs/"+run2["id"].(string)+"/cancel", mgmtB, `{}`)
	require.Equal(t, http.StatusNotFound, code, "another account's organization: %v", p)

	// The page and its script are served, with no third-party asset.
	for _, path := range []string{"/console", "/console/app.js", "/console/runs/" + runID, "/console/workflows.js", "/console/pagekit.js"} {
		resp, err := http.Get(b.gw.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NotContains(t, strings.ReplaceAll(string(body), "http://www.w3.org", ""), "http://", path)
		require.NotContains(t, string(body), "https://", path)
	}
}

// TestConsoleReachesThePagesRoutes: the workflows, tables, documents, webhooks, agents and
// forms pages read their routes through the console's window (an earlier workflow version,
// a table's rows by an indexed column, a document's content), a delivery is sent again
// through it (a second attempt recorded), and what those pages do not need stays outside.
func TestConsoleReachesThePagesRoutes(t *testing.T) {
	t.Parallel()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	b := setupSDK(t, gateway.Options{}, func(c *engine.Config) { c.AllowPrivateTargets = true })
	mgmt, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	ctx := context.Background()
	mustCall := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, p, _ := b.call(t, method, path, live, body)
		require.Equal(t, want, code, "%s %s: %v", method, path, p)
		return p
	}
	wf := mustCall("POST", "/workflows", `{"name": "greet", "definition": {"actions": []}}`, http.StatusCreated)["id"].(string)
	mustCall("PUT", "/workflows/"+wf, `{"name": "greet", "definition": {"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["a"]}}]}}`, http.StatusOK)
	mustCall("POST", "/custom-tables", `{"name": "payments", "fields": {"ref": "text", "status": "text"}, "indexes": [["status"]]}`, http.StatusCreated)
	mustCall("POST", "/webhooks", `{"event": "workflow.completed", "url": "`+hook.URL+`/hook"}`, http.StatusCreated)
	form := mustCall("POST", "/external-forms", `{"name": "Contact", "is_public": true, "schema": {"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "email", "type": "email", "label": "Email"}]}]}}`, http.StatusCreated)["id"].(string)
	doc, err := b.eng.UploadDocument(ctx, "cust-a", engine.DocumentUpload{Name: "rates.csv", Content: []byte("a,b\n1,2\n")})
	require.NoError(t, err)
	tablesWF := mustCall("POST", "/workflows", `{"name": "pay", "definition": {"actions": [{"type": "custom-table", "properties": {"table": "payments", "operation": "write", "fields": {"ref": "P-1", "status": "paid"}}},
		{"type": "custom-table", "properties": {"table": "payments", "operation": "write", "fields": {"ref": "P-2", "status": "open"}}}]}}`, http.StatusCreated)["id"].(string)
	mustCall("POST", "/workflows/"+tablesWF+"/execute", `{}`, http.StatusAccepted)
	var delivery map[string]any
	api := "/console/api/orgs/cust-a"
	for i := 0; i < 50 && delivery == nil; i++ {
		_, err := b.eng.Work(ctx)
		require.NoError(t, err)
		_, hooks, _ := b.call(t, "GET", api+"/webhooks", mgmt, "")
		id := hooks["items"].([]any)[0].(map[string]any)["id"].(string)
		_, ds, _ := b.call(t, "GET", api+"/webhooks/"+id+"/deliveries", mgmt, "")
		if items, _ := ds["items"].([]any); len(items) == 1 && items[0].(map[string]any)["status"] == "succeeded" {
			delivery = items[0].(map[string]any)
		}
	}
	require.NotNil(t, delivery, "the run's completion was delivered")

	get := func(path string) map[string]any {
		t.Helper()
		code, p, _ := b.call(t, "GET", api+path, mgmt, "")
		require.Equal(t, http.StatusOK, code, "%s: %v", path, p)
		return p
	}
	require.EqualValues(t, 1, get("/workflows/" + wf + "?version=1")["version"])
	require.EqualValues(t, 2, get("/workflows/" + wf)["version"])
	require.Len(t, get("/custom-tables")["items"], 1)
	rows := get(`/custom-tables/payments/rows?where=` + url.QueryEscape(`{"status":"open"}`))["items"].([]any)
	require.Len(t, rows, 1)
	require.Equal(t, "P-2", rows[0].(map[string]any)["data"].(map[string]any)["ref"])
	require.Len(t, get("/documents")["items"], 1)
	require.EqualValues(t, 1, get("/documents/" + doc.ID)["version"])
	req := b.request(t, "GET", api+"/documents/"+doc.ID+"/content?version=1", mgmt, "")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	content, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "a,b\n1,2\n", string(content))
	get("/webhooks/" + delivery["webhook_id"].(string))
	get("/agents")
	get("/agents?status=completed")
	get("/external-forms")
	get("/external-forms/" + form)
	get("/external-forms/" + form + "/submissions")
	code, p, _ := b.call(t, "GET", api+"/agents/agt-none/trace", mgmt, "")
	require.Equal(t, http.StatusNotFound, code, "forwarded: the runtime's 404 for an unknown agent run, %v", p)
	require.NotEqual(t, "the console does not reach GET /agents/agt-none/trace", p["detail"])

	// Redeliver: a second attempt, recorded.
	did := delivery["delivery_id"].(string)
	code, p, _ = b.call(t, "POST", api+"/deliveries/"+did+"/redeliver", mgmt, "")
	require.Equal(t, http.StatusAccepted, code, p)
	for i := 0; i < 50 && len(get("/deliveries/" + did)["attempt_list"].([]any)) < 2; i++ {
		_, err := b.eng.Work(ctx)
		require.NoError(t, err)
	}
	d := get("/deliveries/" + did)
	require.Len(t, d["attempt_list"], 2)
	require.Equal(t, "succeeded", d["status"])

	// What the pages do not need stays outside the window.
	for _, tc := range []struct{ method, path string }{
		{"DELETE", "/documents/" + doc.ID}, {"POST", "/documents"}, {"PATCH", "/custom-tables/payments/rows"},
		{"POST", "/custom-tables"}, {"PUT", "/workflows/" + wf}, {"POST", "/agents/execute"}, {"DELETE", "/webhooks/" + delivery["webhook_id"].(string)},
		{"PATCH", "/webhooks/" + delivery["webhook_id"].(string)}, {"PUT", "/external-forms/" + form}, {"GET", "/documents/" + doc.ID + "/content/x"},
	} {
		code, p, _ = b.call(t, tc.method, api+tc.path, mgmt, `{}`)
		require.Equal(t, http.StatusNotFound, code, "%s %s: %v", tc.method, tc.path, p)
		require.Contains(t, p["detail"], "the console does not reach", "%s %s", tc.method, tc.path)
	}

	// The modules are served as JavaScript; any other path under /console is the page.
	for path, want := range map[string]string{"/console/workflows.js": "text/javascript", "/console/webhooks/wh-1": "text/html", "/console/tables/payments?where=%7B%7D": "text/html"} {
		resp, err := http.Get(b.gw.URL + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Type"), want, path)
	}
	resp, err = http.Get(b.gw.URL + "/console/nothing.js")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestConsoleServesDeepLinks: every console path answers the page (a reload or a shared
// link lands where it points), its modules come as scripts the browser will run as
// modules, and an unknown script is 404, never the page.
func TestConsoleServesDeepLinks(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(b.gw.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(body)
	}
	for _, path := range []string{"/console", "/console/", "/console/runs", "/console/runs/r-123?tab=steps", "/console/tasks", "/console/workflows/wf-1"} {
		resp, body := get(path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
		require.Contains(t, body, `<script type="module" src="/console/app.js"></script>`, path)
	}
	for _, name := range []string{"app", "ui", "pages", "runs", "run", "tasks", "pagekit", "workflows", "tables", "documents", "webhooks", "agents", "forms"} {
		resp, body := get("/console/" + name + ".js")
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		require.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"), name)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), name)
		require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"), name)
		require.NotContains(t, body, "<!doctype", name)
		require.NotContains(t, body, "https://", name)
	}
	for _, path := range []string{"/console/nope.js", "/console/runs/app.js", "/console/../sdk.js", "/console/App.js"} {
		resp, body := get(path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, body, "<!doctype", path)
	}
}
