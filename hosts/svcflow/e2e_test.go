package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// envE2E turns the browser test on (make e2e sets it); it needs Chromium and e2e/'s
// node_modules, which make e2e installs.
const envE2E = "SVC_E2E"

var embedPage = template.Must(template.New("embed").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Embedding site</title>
<script>window.__events = []; ['task:created', 'form:submitted', 'svc-form:submitted'].forEach(function (n) {
  document.addEventListener(n, function (e) { window.__events.push({name: n, detail: e.detail}); }); });</script>
<script src="{{.Gateway}}/sdk/v1.js"></script>
</head><body>
<h1>A customer's portal</h1>
<section id="public"><h2>Contact</h2><svc-form form-id="{{.PublicForm}}" public submit-text="Send it" done-text="Received, thank you."></svc-form></section>
<section id="data-attr"><div data-svc-form="{{.PublicForm}}" data-svc-form-public></div></section>
<section id="pause"><h2>Your answer</h2><svc-form run-id="{{.PauseRun}}" step-id="0"></svc-form></section>
<aside><svc-task-sidebar poll-seconds="1"></svc-task-sidebar></aside>
<section id="button"><svc-form-button form-id="{{.PublicForm}}" public>Contact us</svc-form-button></section>
<section id="types"><svc-form schema='{{.AllTypes}}' submit-text="Check"></svc-form></section>
{{if .Bad}}<section id="bad"><svc-form schema='{"version": "form_schema_v2", "pages": []}'></svc-form></section>{{end}}
<script>SvcSDK.init({baseUrl: {{.Gateway}}, publishableKey: {{.PK}}});</script>
</body></html>`))

// allTypesSchema holds each of the fifteen form_schema_v1 field types.
const allTypesSchema = `{"version": "form_schema_v1", "title": "Every type", "pages": [{"id": "p1", "title": "One", "fields": [
 {"key": "name", "type": "text", "label": "Name", "required": true},
 {"key": "secret", "type": "text", "label": "Secret", "masked": true},
 {"key": "notes", "type": "multiline", "label": "Notes"},
 {"key": "qty", "type": "number", "label": "Quantity", "min": 1, "max": 10, "required": true},
 {"key": "price", "type": "money", "label": "Price", "unit": "EUR"},
 {"key": "level", "type": "range", "label": "Level", "min": 0, "max": 5, "step": 1},
 {"key": "email", "type": "email", "label": "Email"},
 {"key": "day", "type": "date", "label": "Day"},
 {"key": "color", "type": "select", "label": "Colour", "options": [{"label": "Red", "value": "red"}, {"label": "Blue", "value": "blue"}]},
 {"key": "tags", "type": "select", "label": "Tags", "multiple": true, "options": [{"label": "A", "value": "a"}, {"label": "B", "value": "b"}]},
 {"key": "checks", "type": "checklist", "label": "Checks", "options": [{"label": "One", "value": "1"}, {"label": "Two", "value": "2"}]}]},
 {"id": "p2", "title": "Two", "fields": [
 {"key": "intro", "type": "content", "label": "Read this first."},
 {"key": "upload", "type": "file", "label": "Upload"},
 {"key": "sig", "type": "signature", "label": "Signature"},
 {"key": "grid", "type": "table", "label": "Grid"},
 {"key": "lookup", "type": "lookup", "label": "Customer"},
 {"key": "total", "type": "computed", "label": "Total"}]}]}`

// TestBrowserEndToEnd drives headless Chromium (e2e/run.mjs) against svcflow serve: hosted
// forms (keyboard only, dark theme, sign-in by mailed code, the per-visitor limit), and a
// page of another site embedding the SDK (a public form, data-svc-form, the task sidebar
// deciding an approval, a form pause resumed), then checks what the service recorded.
func TestBrowserEndToEnd(t *testing.T) {
	if os.Getenv(envE2E) == "" {
		t.Skip(envE2E + " is unset: make e2e runs this test")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "e2e/node_modules/playwright-core")); err != nil {
		t.Fatalf("e2e/node_modules is missing: run make e2e")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	sink, smtpAddr := startSMTPSink(t)
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db", "--runtime-addr", "127.0.0.1:0",
		"--smtp-addr", smtpAddr, "--smtp-from", "no-reply@svcflow.test", "--workers", "4", "--allow-private-targets")
	gw := p.gateway
	call := func(method, path, auth, body string) map[string]any {
		t.Helper()
		code, m := gatewayCall(t, gw, method, path, auth, body)
		require.Less(t, code, 300, "%s %s: %d %v", method, path, code, m)
		return m
	}
	mgmt := call("POST", "/gateway/signup", "", `{"email": "ops@platform.example", "name": "Platform"}`)["management_token"].(string)
	call("POST", "/gateway/orgs", mgmt, `{"id": "acme", "name": "Acme"}`)
	live := call("POST", "/gateway/orgs/acme/keys", mgmt, `{"kind": "runtime"}`)["secret"].(string)
	pk := call("POST", "/gateway/orgs/acme/keys", mgmt, `{"kind": "publishable"}`)["secret"].(string)
	call("PUT", "/gateway/orgs/acme/users/ann@example.com", mgmt, `{"approver_roles": ["finance"]}`)

	workflow := func(name, def string) string {
		return call("POST", "/workflows", live, `{"name": "`+name+`", "definition": `+def+`}`)["id"].(string)
	}
	contact := workflow("contact", `{"actions": []}`)
	pauseWF := workflow("questions", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["answer"]}}]}`)
	approvalWF := workflow("sign-off", `{"actions": [{"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "Pay the invoice?"}}]}`)
	schema := `{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [
		{"key": "email", "type": "email", "label": "Email", "required": true},
		{"key": "name", "type": "text", "label": "Name"}]}]}`
	form := func(name, settings, sch string) string {
		return call("POST", "/external-forms", live, `{"name": "`+name+`", "description": "We answer within a day", "is_public": true,
			"trigger_workflow_id": "`+contact+`", "settings": `+settings+`, "schema": `+sch+`}`)["id"].(string)
	}
	publicForm := form("Contact us", `{"successMessage": "Thanks!", "branding": {"name": "Acme", "accent": "#0a7d5a", "footer": "Acme Ltd", "hidePoweredBy": true}}`, schema)
	limitForm := form("Limited", `{}`, schema)
	authForm := form("Members only", `{"requireAuth": true}`, `{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "note", "type": "text", "label": "Note", "required": true}]}]}`)
	pauseRun := call("POST", "/workflows/"+pauseWF+"/execute", live, `{"input": {}}`)["id"].(string)
	approvalRun := call("POST", "/workflows/"+approvalWF+"/execute", live, `{"input": {}}`)["id"].(string)
	waitStatus := func(run, status string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, m := gatewayCall(t, gw, "GET", "/runs/"+run+"/status", live, "")
			return m["status"] == status
		}, 20*time.Second, 50*time.Millisecond, "run %s never %s", run, status)
	}
	waitStatus(pauseRun, "paused")
	waitStatus(approvalRun, "paused")

	codeRe := regexp.MustCompile(`is (\d{6})`)
	var framedForms [2]string // a form that lists the site in settings.frameAncestors, one that lists nobody
	site := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/thanks" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Thanks</title></head><body><h1>Thanks from the site</h1></body></html>`)
			return
		}
		if r.URL.Path == "/blank" {
			// A page of text alone: the floor the browser takes to paint anything here.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Blank</title></head><body><h1>Contact us</h1></body></html>`)
			return
		}
		if r.URL.Path == "/frames" {
			// The site frames a hosted page that lists it, one that does not, and the console.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Frames</title></head><body>
<iframe id="listed" title="listed" src="%s/forms/%s" width="600" height="500"></iframe>
<iframe id="unlisted" title="unlisted" src="%s/forms/%s" width="600" height="200"></iframe>
<iframe id="console" title="console" src="%s/console" width="600" height="200"></iframe></body></html>`,
				gw, framedForms[0], gw, framedForms[1], gw)
			return
		}
		if r.URL.Path == "/hook" {
			w.WriteHeader(http.StatusNoContent) // the webhook receiver
			return
		}
		if r.URL.Path == "/rates" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprint(w, `{"EUR/USD": 1.08}`)
			return
		}
		if r.URL.Path == "/llm/chat/completions" {
			llmReply(w, r) // the organization's model, for the agents page
			return
		}
		if r.URL.Path == "/slow" {
			time.Sleep(3 * time.Second) // a slow server: the console watches the run in flight
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprint(w, `{"ok": true}`)
			return
		}
		if r.URL.Path == "/code" {
			// The n-th message to the address (1-based), so a step never reads an old code.
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			sink.mu.Lock()
			all := sink.all[r.URL.Query().Get("email")]
			msg := ""
			if n >= 1 && n <= len(all) {
				msg = all[n-1]
			}
			sink.mu.Unlock()
			m := codeRe.FindStringSubmatch(msg)
			if m == nil {
				http.NotFound(w, r)
				return
			}
			_, _ = fmt.Fprint(w, m[1])
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = embedPage.Execute(w, map[string]any{"Gateway": gw, "PublicForm": publicForm, "PauseRun": pauseRun, "PK": pk, "Bad": r.URL.Query().Get("bad") != "",
			"AllTypes": allTypesSchema})
	}))
	site.Start()
	t.Cleanup(site.Close)
	redirectForm := form("Redirecting", `{"redirectUrl": "`+site.URL+`/thanks"}`, schema)
	framedForms[0] = form("Framed", `{"frameAncestors": ["`+site.URL+`"]}`, schema)
	framedForms[1] = form("Not framed", `{}`, schema)
	// Completed runs are delivered to the site's receiver: the console lists the deliveries.
	call("POST", "/webhooks", live, `{"event": "workflow.completed", "url": "`+site.URL+`/hook", "secret": "whsec-e2e-0123456789"}`)
	// A run the console watches: a slow call, then an approval.
	call("POST", "/actions", live, `{"action_name": "slow-call", "kind": "http", "http_method": "GET", "url": "`+site.URL+`/slow"}`)
	slowWF := workflow("slow-then-approve", `{"actions": [{"type": "slow-call", "properties": {}},
		{"type": "PbotApproval", "properties": {"approver_role": "ops", "comment": "Release it?"}}]}`)

	pages := seedConsolePages(t, gw, live, site.URL, call, waitStatus)

	artifacts := os.Getenv("SVC_E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(root, "e2e/artifacts")
	}
	cfg, _ := json.Marshal(map[string]any{"gateway": gw, "embed": site.URL + "/", "codeUrl": site.URL + "/code", "artifacts": artifacts,
		"publicForm": publicForm, "limitForm": limitForm, "authForm": authForm, "pauseWorkflow": pauseWF, "liveKey": live,
		"slowWorkflow": slowWF, "mgmt": mgmt, "redirectForm": redirectForm, "pk": pk, "pages": pages})
	cmd := exec.Command("node", filepath.Join(root, "e2e/run.mjs"))
	cmd.Env = append(os.Environ(), "SVC_E2E_CONFIG="+string(cfg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	t.Logf("browser: %s", out)
	t.Logf("screenshots in %s", artifacts)
	require.NoError(t, err, "a browser step failed: %s", out)
	var res struct {
		Steps map[string]map[string]any
	}
	require.NoError(t, json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &res))

	// What the service recorded.
	subs := call("GET", "/external-forms/"+publicForm+"/submissions", live, "")["items"].([]any)
	require.Len(t, subs, 2, "the hosted page's and the embedded form's")
	for _, s := range subs {
		require.NotNil(t, s.(map[string]any)["triggered_run_id"], "each started a run")
	}
	auth := call("GET", "/external-forms/"+authForm+"/submissions", live, "")["items"].([]any)
	require.Len(t, auth, 1)
	require.Equal(t, "ann@example.com", auth[0].(map[string]any)["submitted_by"])
	limited := call("GET", "/external-forms/"+limitForm+"/submissions?limit=100", live, "")["items"].([]any)
	require.Len(t, limited, 10, "the 11th was refused")
	waitStatus(approvalRun, "completed")
	approvals := call("GET", "/approvals?status=approved", live, "")["items"].([]any)
	require.Len(t, approvals, 3, "one from the sidebar, one on the console's run page, one in a member's console inbox")
	deciders := map[string]string{}
	for _, a := range approvals {
		a := a.(map[string]any)
		require.Equal(t, "user", a["decided_by"].(map[string]any)["type"])
		deciders[a["approver_role"].(string)] = a["decided_by"].(map[string]any)["id"].(string)
	}
	require.Equal(t, map[string]string{"finance": "ann@example.com", "ops": "ops@platform.example", "treasury": "bo@example.com"}, deciders)
	consoleRun, _ := res.Steps["console"]["runId"].(string)
	require.NotEmpty(t, consoleRun)
	waitStatus(consoleRun, "completed")
	waitStatus(pauseRun, "completed")
	pause := call("GET", "/forms/"+pauseRun+"/0", live, "")
	require.Equal(t, "ann@example.com", pause["claimed_by"])
	perf, _ := json.Marshal(res.Steps["perf"])
	t.Logf("hosted page, ms from navigation start to the form rendered and to the first contentful paint: %s", perf)
}
