package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
	for _, path := range []string{"/console", "/console/app.js", "/console/runs/" + runID} {
		resp, err := http.Get(b.gw.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NotContains(t, strings.ReplaceAll(string(body), "http://www.w3.org", ""), "http://", path)
		require.NotContains(t, string(body), "https://", path)
	}
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
	for _, name := range []string{"app", "ui", "pages", "runs", "run", "tasks"} {
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
