package runtime_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/runtime"
)

// tenancyScope is what an operation is, as its route declares it.
type tenancyScope int

const (
	// byID: the route names a resource ({id}, {runId}, {name}); another org's resource is 404.
	byID tenancyScope = iota + 1
	// listing: a GET of a collection; another org's resources never appear in it.
	listing
	// creation: a POST to a collection; names are per org, so B may reuse A's names.
	creation
	// public: no X-Org-Id at all.
	public
	// own: a route about the caller's organization itself (no resource id): B gets 2xx
	// about B, nothing of A.
	own
)

// tenancyCall says how to call one operation as org B against org A's fixture. Every
// operation the router registers must have an entry: a new route fails
// TestTenancyFromRouteList until someone decides how to prove it keeps orgs apart.
type tenancyCall struct {
	scope tenancyScope
	// body builds the request body (nil: none).
	body func(fx tenancyFixture) any
	// headers are sent with the request ("Name: value"), after the JSON Content-Type.
	headers []string
	// query builds the query string (without "?"; nil: none).
	query func(fx tenancyFixture) string
	// param overrides fx.pathValue for this operation's path parameters.
	param func(fx tenancyFixture, name string) (string, bool)
	// status is what a public route answers (default 200).
	status int
}

var tenancyCalls = map[string]tenancyCall{
	"health": {scope: public},
	// The probes name no organization and answer nothing about one.
	"liveness":  {scope: public},
	"readiness": {scope: public},
	// The definition's JSON Schema: the same document for everyone, no tenant data.
	"get-workflow-schema": {scope: public},

	"create-workflow": {scope: creation, body: func(fx tenancyFixture) any {
		return workflowBody(fx.workflow.Name, `{"actions":[]}`)
	}},
	"list-workflows":  {scope: listing},
	"get-workflow":    {scope: byID},
	"update-workflow": {scope: byID, body: func(tenancyFixture) any { return workflowBody("taken-over", `{"actions":[]}`) }},
	"delete-workflow": {scope: byID},
	"execute-workflow": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"input": map[string]any{"email": "b@example.com"}}
	}},

	"list-runs":          {scope: listing},
	"get-run-status":     {scope: byID},
	"get-run-evidence":   {scope: byID},
	"get-run-context":    {scope: byID},
	"list-run-events":    {scope: byID},
	"cancel-run":         {scope: byID, body: func(tenancyFixture) any { return map[string]string{"reason": "org B says so"} }},
	"retry-run":          {scope: byID, body: func(tenancyFixture) any { return map[string]string{"reason": "org B says so"} }},
	"get-run-retry-plan": {scope: byID},
	"create-run-operation": {scope: creation, status: http.StatusAccepted, body: func(tenancyFixture) any {
		return map[string]any{"action": "cancel", "filter": map[string]any{}, "reason": "org B says so"}
	}},
	"get-run-operation":   {scope: byID},
	"list-run-operations": {scope: listing},

	"create-custom-table": {scope: creation, body: func(fx tenancyFixture) any {
		return map[string]any{"name": fx.table, "fields": map[string]string{"other": "text"}}
	}},
	"list-custom-tables":     {scope: listing},
	"read-custom-table-rows": {scope: byID},
	"add-custom-table-index": {scope: byID, body: func(tenancyFixture) any { return map[string]any{"columns": []string{"status"}} }},
	"update-custom-table-rows": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"where": map[string]any{}, "set": map[string]any{"status": "hijacked"}}
	}},

	"create-action": {scope: creation, body: func(fx tenancyFixture) any {
		return map[string]any{"action_name": fx.action, "kind": "llm", "template": "org B's {{input.x}}"}
	}},
	"list-actions":  {scope: listing},
	"get-action":    {scope: byID},
	"delete-action": {scope: byID},
	"replace-action": {scope: byID, body: func(fx tenancyFixture) any {
		return map[string]any{"action_name": fx.action, "kind": "http", "url": "https://mallory.example.com/"}
	}},

	"upload-document": {scope: creation, headers: []string{multipartHeader}, body: func(fx tenancyFixture) any {
		return tenancyUpload(fx.document.Name)
	}},
	"list-documents":          {scope: listing},
	"get-document":            {scope: byID},
	"get-document-content":    {scope: byID},
	"delete-document":         {scope: byID},
	"create-document-version": {scope: byID, headers: []string{multipartHeader}, body: func(tenancyFixture) any { return tenancyUpload("") }},

	"set-org-config": {scope: creation, body: func(fx tenancyFixture) any {
		return map[string]string{"key": fx.orgConfigKey, "value": "b-own-value-0123456789"}
	}},
	"list-org-config":   {scope: listing},
	"delete-org-config": {scope: byID},

	// B has no oauth:google app of its own: A's is not used for B's flow.
	"authorize-oauth": {scope: byID, query: func(fx tenancyFixture) string { return "account=" + fx.oauthAccount }},
	// The callback takes no org: it finishes the flow B started, for B, with B's app.
	"oauth-callback": {scope: public, query: func(fx tenancyFixture) string {
		return "state=" + url.QueryEscape(fx.oauthStateB) + "&code=" + url.QueryEscape(fx.oauthCodeB)
	}},
	"create-oauth-connection": {scope: creation, body: func(fx tenancyFixture) any {
		return map[string]any{"provider": "google", "account": fx.oauthAccount, "access_token": "b-own-token-0123456789"}
	}},
	"list-oauth-connections":  {scope: listing},
	"delete-oauth-connection": {scope: byID},

	"create-webhook": {scope: creation, body: func(tenancyFixture) any {
		return map[string]any{"event": "document.uploaded", "url": "https://93.184.215.14/b-own-hook", "secret": "b-own-secret-0123"}
	}},
	"list-webhooks":  {scope: listing},
	"get-webhook":    {scope: byID},
	"delete-webhook": {scope: byID},
	"update-webhook": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"url": "https://93.184.215.14/mallory", "secret": "mallory-secret-0123", "disabled": true}
	}},
	"get-pending-approval": {scope: byID},
	"list-approvals":       {scope: listing},
	"get-approval":         {scope: byID},

	"create-project": {scope: creation, body: func(tenancyFixture) any { return map[string]any{"name": "a-studio"} }},
	"list-projects":  {scope: listing},
	"create-process": {scope: creation, body: func(fx tenancyFixture) any {
		return map[string]any{"project_id": fx.projectB, "name": "a-process"}
	}},
	"get-process":     {scope: byID},
	"compose-bundle":  {scope: byID, body: func(tenancyFixture) any { return map[string]any{"dsl": json.RawMessage(studioDSL)} }},
	"get-bundle":      {scope: byID},
	"publish-bundle":  {scope: byID, body: func(tenancyFixture) any { return map[string]any{"publish_note": "org B publishes"} }},
	"execute-process": {scope: byID, body: func(tenancyFixture) any { return map[string]any{"input": map[string]any{}} }},
	"generate-workflow": {scope: creation, status: http.StatusAccepted, body: func(tenancyFixture) any {
		return map[string]any{"prompt": "org B's process"}
	}},
	"get-generation-status": {scope: byID},
	"get-generation":        {scope: byID},
	// B has no model key: B's own configuration answers, whatever A has.
	"create-process-from-prompt": {scope: creation, status: http.StatusConflict, body: func(fx tenancyFixture) any {
		return map[string]any{"project_id": fx.projectB, "prompt": "org B's process"}
	}},
	"create-workflow-from-ai": {scope: creation, status: http.StatusGone, body: func(tenancyFixture) any {
		return map[string]any{"prompt": "org B's process"}
	}},
	"decide-approval": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"approved": true, "comment": "org B approves"}
	}},
	"get-org-features": {scope: own},
	"set-org-features": {scope: own, body: func(tenancyFixture) any { return map[string]any{"agent_forms": false} }},
	// B has the feature and no model key: the fallback form, B's own.
	"generate-form": {scope: own, body: func(tenancyFixture) any {
		return map[string]any{"intent": "org B's survey", "expected_keys": []string{"answer"}}
	}},
	"list-pending-forms": {scope: listing},
	"get-form-pause":     {scope: byID},
	"submit-form": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"data": map[string]any{"answer": "org B's"}}
	}},
	"create-external-form": {scope: creation, body: func(tenancyFixture) any {
		return map[string]any{"name": "b-intake", "schema": json.RawMessage(contactSchema)}
	}},
	"list-external-forms":   {scope: listing},
	"get-external-form":     {scope: byID},
	"delete-external-form":  {scope: byID},
	"list-form-submissions": {scope: byID},
	"replace-external-form": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"name": "taken-over", "is_public": true, "schema": json.RawMessage(contactSchema)}
	}},
	// Public by design: A's public form is served to anyone, without its trigger.
	"get-public-form": {scope: public},
	// A submission to A's form that is not public is refused and starts nothing.
	"submit-public-form": {scope: public, status: http.StatusNotFound,
		param: func(fx tenancyFixture, name string) (string, bool) { return fx.privateForm, name == "formId" },
		body:  func(tenancyFixture) any { return map[string]any{"email": "mallory@example.com"} }},
	"list-webhook-deliveries": {scope: byID},
	"get-delivery":            {scope: byID},
	"redeliver":               {scope: byID},

	"execute-agent": {scope: creation, status: http.StatusAccepted, query: func(tenancyFixture) string { return "async=true" },
		body: func(tenancyFixture) any { return map[string]any{"objective": "org B's own objective"} }},
	"list-agents":      {scope: listing},
	"get-agent-status": {scope: byID},
	"get-agent-trace":  {scope: byID},
	"resume-agent": {scope: byID, body: func(tenancyFixture) any {
		return map[string]any{"human_input": "org B answers", "approved": true}
	}},
}

// tenancyUpload is a multipart upload body (boundary as in multipartHeader).
func tenancyUpload(name string) []byte {
	var buf strings.Builder
	buf.WriteString("--svcflow-test-boundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.csv\"\r\n" +
		"Content-Type: text/csv\r\n\r\nemail\nmallory@example.com\n\r\n")
	if name != "" {
		buf.WriteString("--svcflow-test-boundary\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n" + name + "\r\n")
	}
	buf.WriteString("--svcflow-test-boundary--\r\n")
	return []byte(buf.String())
}

// tenancyFixture is what org A owns (and org B owns of its own, so B's lists are not
// trivially empty).
type tenancyFixture struct {
	workflow workflowDoc
	finished runRef // completed; wrote a row into table
	running  runRef // not yet worked
	table    string
	document documentDoc
	action   string
	// orgConfigKey holds orgConfigValue in A's org config.
	orgConfigKey string
	// oauthAccount is A's google account (connection oauthConnection, access token
	// oauthToken); oauthStateB and oauthCodeB are the callback of a flow B started.
	oauthAccount, oauthConnection, oauthToken string
	oauthStateB, oauthCodeB                   string
	// webhook is A's registration (target webhookURL, secret webhookSecret); delivery one of
	// its deliveries (of A's documents uploaded after it).
	webhook  string
	delivery string
	// publicForm is A's public external form (two submissions), privateForm one that is not
	// public.
	publicForm, privateForm string
	// agentRun is A's agent run (its objective holds agentObjective).
	agentRun string
	// approval is A's pending approval.
	approval string
	// process is A's studio process (bundle one published, bundle a draft after it);
	// projectB is B's project.
	process, bundle, projectB string
	// generation is A's workflow drafting request.
	generation string
	// runOperation is A's run operation (cancel, matching no run).
	runOperation string
}

const agentObjective = "a-private-objective-5e19"

// studioDSL is a bundle of one approval step.
const studioDSL = `{"svc_workflow_definition": {"actions": [{"type": "PbotApproval", "properties": {"approver_role": "ops"}}]}}`

const (
	webhookURL    = "https://93.184.215.14/a-hooks-7f3e"
	webhookSecret = "a-webhook-secret-2b6d"
)

const orgConfigValue = "a-plaintext-secret-7c41"

func (fx tenancyFixture) pathValue(name string) (string, bool) {
	switch name {
	case "id":
		return fx.workflow.ID, true
	case "runId":
		return fx.running.ID, true
	case "stepId":
		return "0", true
	case "key":
		return "input", true // every run has it
	case "name":
		return fx.table, true
	case "documentId":
		return fx.document.ID, true
	case "actionName":
		return fx.action, true
	case "configKey":
		return fx.orgConfigKey, true
	case "provider":
		return "google", true
	case "connectionId":
		return fx.oauthConnection, true
	case "webhookId":
		return fx.webhook, true
	case "deliveryId":
		return fx.delivery, true
	case "formId":
		return fx.publicForm, true
	case "agentId":
		return fx.agentRun, true
	case "approvalId":
		return fx.approval, true
	case "processId":
		return fx.process, true
	case "bundleId":
		return fx.bundle, true
	case "generationId":
		return fx.generation, true
	case "operationId":
		return fx.runOperation, true
	}
	return "", false
}

// secrets are the strings of A that must never appear in an answer to B.
func (fx tenancyFixture) secrets() []string {
	return []string{fx.workflow.ID, fx.workflow.Name, fx.finished.ID, fx.running.ID, fx.table, "ada@example.com",
		fx.document.ID, fx.document.Name, "a-secret", fx.action, "crm.a.example.com", fx.orgConfigKey, orgConfigValue, "7c41",
		fx.oauthAccount, fx.oauthConnection, fx.oauthToken, "a-support", "app-secret-org-a",
		fx.webhook, "a-hooks-7f3e", webhookSecret, "a-auto-payload", fx.delivery, fx.privateForm, "a-private-intake",
		fx.agentRun, agentObjective}
}

func buildTenancyFixture(t *testing.T, b *bundle) tenancyFixture {
	t.Helper()
	fx := tenancyFixture{table: "contacts", action: "a-notify-crm", orgConfigKey: "api:a_private_key"}
	fx.workflow = b.createWorkflow(t, orgA, "a-onboarding")
	fx.finished = b.execute(t, orgA, fx.workflow.ID, map[string]any{"email": "ada@example.com", "name": "Ada"})
	// A run of each organization paused at an approval (worked before any webhook exists:
	// b.work sends nothing anywhere).
	for _, o := range []string{orgA, orgB} {
		aw := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", o, workflowBody(o+"-sign-off",
			`{"actions":[{"type":"PbotApproval","properties":{"approver_role":"`+o+`-role","comment":"`+o+`-approval"}}]}`)), http.StatusCreated)
		b.execute(t, o, aw.ID, nil)
		fw := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", o, workflowBody(o+"-questions",
			`{"actions":[{"type":"PbotForm","properties":{"expected_keys":["answer"]}}]}`)), http.StatusCreated)
		b.execute(t, o, fw.ID, nil)
	}
	b.work(t)
	pending := ok[struct{ Items []svctype.Approval }](t, b.do(t, http.MethodGet, "/approvals?status=pending", orgA, nil), http.StatusOK)
	require.Len(t, pending.Items, 1)
	fx.approval = pending.Items[0].ID
	// The process studio: a project of each organization; A's process has a published
	// bundle and a draft after it.
	var projectA struct{ ID string }
	for _, o := range []string{orgA, orgB} {
		p := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/process-studio/projects", o, map[string]any{"name": o + "-studio"}), http.StatusCreated)
		if o == orgA {
			projectA = p
		} else {
			fx.projectB = p.ID
		}
	}
	proc := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/process-studio/processes", orgA, map[string]any{"project_id": projectA.ID, "name": "a-process"}), http.StatusCreated)
	fx.process = proc.ID
	for i := range 2 {
		bnd := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/compose-from-workflow-dsl", orgA,
			map[string]any{"dsl": json.RawMessage(studioDSL)}), http.StatusCreated)
		fx.bundle = bnd.ID
		if i == 0 {
			ok[map[string]any](t, b.do(t, http.MethodPost, "/process-studio/bundles/"+bnd.ID+"/publish", orgA, map[string]any{}), http.StatusOK)
		}
	}
	fx.generation = ok[struct {
		ID string `json:"generation_id"`
	}](t, b.do(t, http.MethodPost, "/ai/generate-workflow", orgA, map[string]any{"prompt": "a-private-process"}), http.StatusAccepted).ID
	fx.running = b.execute(t, orgA, fx.workflow.ID, map[string]any{"email": "ada@example.com", "name": "Ada L."})
	fx.document = b.uploadDocument(t, orgA, filePart("a-ledger.csv", "text/csv", "email\nada@example.com\n"), field("tags", "a-secret"))
	for _, name := range []string{fx.action, "a-lookup"} {
		ok[map[string]any](t, b.do(t, http.MethodPost, "/actions", orgA, map[string]any{
			"action_name": name, "kind": "http", "url": "https://crm.a.example.com/contacts",
			"headers": map[string]string{"Authorization": "orgconfig:api:crm"},
		}), http.StatusCreated)
	}
	for _, k := range []string{fx.orgConfigKey, "api:a_second_key"} {
		ok[map[string]any](t, b.do(t, http.MethodPost, "/org-config", orgA, map[string]string{"key": k, "value": orgConfigValue}), http.StatusCreated)
	}
	fx.oauthAccount, fx.oauthToken = "a-sales", "a-access-token-5d2e"
	b.oauthApp(t, orgA, "google")
	fx.oauthConnection = ok[connectionDoc](t, b.do(t, http.MethodPost, "/oauth/connections", orgA, map[string]any{
		"provider": "google", "account": fx.oauthAccount, "access_token": fx.oauthToken,
	}), http.StatusCreated).ID
	state, code := b.startOAuth(t, orgA, "google", "a-support")
	ok[connectionDoc](t, b.do(t, http.MethodGet, callbackPath(state, code), "", nil), http.StatusOK)
	for i, event := range []string{"document.uploaded", "workflow.completed"} {
		w := ok[webhookDoc](t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{
			"event": event, "url": webhookURL, "secret": webhookSecret, "auto_payload": map[string]any{"tag": "a-auto-payload"},
		}), http.StatusCreated)
		if i == 0 {
			fx.webhook = w.ID
		}
	}
	for _, name := range []string{"a-later-1.csv", "a-later-2.csv"} {
		b.uploadDocument(t, orgA, filePart(name, "text/csv", "email\nada@example.com\n"))
	}
	deliveries, err := b.eng.ListDeliveries(context.Background(), orgA, fx.webhook, svctype.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Len(t, deliveries.Items, 2, "A's webhook has its deliveries")
	fx.delivery = deliveries.Items[0].ID

	fx.publicForm = b.createForm(t, orgA, formBody(fx.workflow.ID, true)).ID
	ar, err := b.eng.ExecuteAgent(t.Context(), orgA, engine.AgentInput{Objective: agentObjective})
	require.NoError(t, err)
	fx.agentRun = ar.ID
	_, err = b.eng.ExecuteAgent(t.Context(), orgB, engine.AgentInput{Objective: "org B's agent"})
	require.NoError(t, err)
	private := formBody(fx.workflow.ID, false)
	private["name"] = "a-private-intake"
	fx.privateForm = b.createForm(t, orgA, private).ID
	for _, name := range []string{"Ada", "Ada L."} {
		ok[map[string]any](t, b.do(t, http.MethodPost, "/forms/public/"+fx.publicForm+"/submit", "",
			map[string]any{"email": "ada@example.com", "name": name}), http.StatusCreated)
	}

	// B's own things.
	ok[map[string]any](t, b.do(t, http.MethodPost, "/custom-tables", orgB, map[string]any{
		"name": "b_table", "fields": map[string]string{"x": "text"},
	}), http.StatusCreated)
	bw := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgB, workflowBody("b-flow", `{"actions":[]}`)), http.StatusCreated)
	b.execute(t, orgB, bw.ID, nil)
	b.uploadDocument(t, orgB, filePart("b-notes.csv", "text/csv", "x\n1\n"))
	ok[map[string]any](t, b.do(t, http.MethodPost, "/actions", orgB, map[string]any{
		"action_name": "b-summarise", "kind": "llm", "template": "Summarise {{input.text}}",
	}), http.StatusCreated)
	ok[map[string]any](t, b.do(t, http.MethodPost, "/org-config", orgB, map[string]string{"key": "api:b_key", "value": "b-value"}), http.StatusCreated)
	for _, o := range []string{orgA, orgB} {
		ok[map[string]any](t, b.do(t, http.MethodPut, "/org-features", o, map[string]any{"agent_forms": true}), http.StatusOK)
	}
	b.oauthApp(t, orgB, "slack")
	ok[connectionDoc](t, b.do(t, http.MethodPost, "/oauth/connections", orgB, map[string]any{
		"provider": "slack", "account": "b-workspace", "access_token": "xoxb-b-own",
	}), http.StatusCreated)
	fx.oauthStateB, fx.oauthCodeB = b.startOAuth(t, orgB, "slack", "b-other")
	ok[webhookDoc](t, b.do(t, http.MethodPost, "/webhooks", orgB, map[string]any{
		"event": "workflow.failed", "url": "https://93.184.215.14/b-hook",
	}), http.StatusCreated)
	b.createForm(t, orgB, formBody("", true))
	for _, o := range []string{orgB, orgA} {
		rop := ok[map[string]any](t, b.do(t, http.MethodPost, "/run-operations", o, map[string]any{
			"action": "cancel", "filter": map[string]any{"workflow_id": "no-such-workflow"}, "reason": o + "'s own"}), http.StatusAccepted)
		fx.runOperation = rop["id"].(string)
	}
	return fx
}

// snapshotA reads everything org A can see; a call as org B must leave it byte-identical.
func snapshotA(t *testing.T, b *bundle, fx tenancyFixture) string {
	t.Helper()
	var sb strings.Builder
	for _, path := range []string{
		"/workflows/" + fx.workflow.ID,
		"/workflows?limit=500",
		"/runs?limit=500",
		"/runs/" + fx.running.ID + "/status",
		"/runs/" + fx.running.ID + "/context/input",
		"/runs/" + fx.running.ID + "/events?limit=500",
		"/runs/" + fx.finished.ID + "/evidence",
		"/custom-tables?limit=500",
		"/custom-tables/" + fx.table + "/rows?limit=500",
		"/documents/" + fx.document.ID,
		"/documents?limit=500",
		"/documents/" + fx.document.ID + "/content",
		"/actions?limit=500",
		"/actions/" + fx.action,
		"/org-config?limit=500",
		"/oauth/connections?limit=500",
		"/webhooks?limit=500",
		"/approvals?limit=500",
		"/org-features",
		"/forms/pending?limit=500",
		"/webhooks/" + fx.webhook,
		"/webhooks/" + fx.webhook + "/deliveries?limit=500",
		"/deliveries/" + fx.delivery,
		"/external-forms?limit=500",
		"/external-forms/" + fx.publicForm,
		"/external-forms/" + fx.privateForm,
		"/external-forms/" + fx.publicForm + "/submissions?limit=500",
		"/agents?limit=500",
		"/agents/" + fx.agentRun + "/status?include_trace=true",
	} {
		rec := b.do(t, http.MethodGet, path, orgA, nil)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		sb.WriteString(path + " " + rec.Body.String() + "\n")
	}
	return sb.String()
}

type routeOp struct {
	method, path string
	op           *huma.Operation
}

func routeOps(api huma.API) []routeOp {
	var out []routeOp
	for path, item := range api.OpenAPI().Paths {
		for method, o := range map[string]*huma.Operation{
			http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
			http.MethodPatch: item.Patch, http.MethodDelete: item.Delete, http.MethodHead: item.Head,
			http.MethodOptions: item.Options, http.MethodTrace: item.Trace,
		} {
			if o != nil {
				out = append(out, routeOp{method: method, path: path, op: o})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].op.OperationID < out[j].op.OperationID })
	return out
}

// TestTenancyFromRouteList walks the router's own operations: each one is called as org B
// against org A's resources. A route naming a resource answers 404 and changes nothing of
// A's; a listing never shows A's resources; a creation may reuse A's names without touching
// A. An operation without an entry in tenancyCalls fails the test.
func TestTenancyFromRouteList(t *testing.T) {
	t.Parallel()
	ops := routeOps(runtime.New(nil, runtime.Options{}).API())
	require.NotEmpty(t, ops)

	registered := map[string]bool{}
	for _, ro := range ops {
		registered[ro.op.OperationID] = true
	}
	for id := range tenancyCalls {
		require.True(t, registered[id], "tenancyCalls names %q, which the router no longer registers", id)
	}

	for _, ro := range ops {
		t.Run(ro.op.OperationID, func(t *testing.T) {
			t.Parallel()
			call, known := tenancyCalls[ro.op.OperationID]
			require.True(t, known, "operation %q (%s %s) has no entry in tenancyCalls: add one that proves org B cannot reach org A's data through it",
				ro.op.OperationID, ro.method, ro.path)

			var pathParams []string
			hasOrg := false
			for _, p := range ro.op.Parameters {
				switch {
				case p.In == "path":
					pathParams = append(pathParams, p.Name)
				case p.In == "header" && p.Name == runtime.OrgHeader:
					hasOrg = true
					require.True(t, p.Required, "X-Org-Id must be required")
				}
			}
			switch {
			case !hasOrg:
				require.Equal(t, public, call.scope, "%s takes no X-Org-Id: only public routes may", ro.op.OperationID)
			case call.scope == own:
				// Declared: the route is about the caller's organization itself (its
				// features, a draft computed for it); checked below like any other.
				require.Empty(t, pathParams, "%s names a resource: it cannot be the caller's own", ro.op.OperationID)
			case len(pathParams) > 0:
				require.Equal(t, byID, call.scope, "%s names a resource", ro.op.OperationID)
			case ro.method == http.MethodGet:
				require.Equal(t, listing, call.scope, "%s is a listing", ro.op.OperationID)
			default:
				require.Equal(t, creation, call.scope, "%s creates in a collection", ro.op.OperationID)
			}

			b := setup(t)
			fx := buildTenancyFixture(t, b)
			before := snapshotA(t, b, fx)

			path := ro.path
			for _, name := range pathParams {
				v, ok := fx.pathValue(name)
				if call.param != nil {
					v, ok = call.param(fx, name)
				}
				require.True(t, ok, "no fixture value for path parameter {%s} of %s", name, ro.path)
				path = strings.ReplaceAll(path, "{"+name+"}", v)
			}
			if call.query != nil {
				path += "?" + call.query(fx)
			}
			var body any
			if call.body != nil {
				body = call.body(fx)
			}
			org := orgB
			if call.scope == public {
				org = ""
			}
			rec := b.do(t, ro.method, path, org, body, call.headers...)

			switch call.scope {
			case byID:
				problem(t, rec, http.StatusNotFound, "not_found")
			case listing:
				l := ok[list[json.RawMessage]](t, rec, http.StatusOK)
				require.NotEmpty(t, l.Items, "org B's own resources should be listed")
			case creation:
				require.Equal(t, cmp.Or(call.status, http.StatusCreated), rec.Code, rec.Body.String())
			case public:
				require.Equal(t, cmp.Or(call.status, http.StatusOK), rec.Code, rec.Body.String())
			case own:
				require.Less(t, rec.Code, 300, rec.Body.String())
			}
			if call.scope != creation {
				// A creation echoes the name B chose, which happens to be A's too.
				for _, s := range fx.secrets() {
					require.NotContains(t, rec.Body.String(), s, "answer to org B reveals org A's %q", s)
				}
			}
			require.Equal(t, before, snapshotA(t, b, fx), "calling %s as org B changed what org A sees", ro.op.OperationID)

			if hasOrg {
				// Without X-Org-Id, or naming two organizations (B's and A's, in either
				// order), the route refuses before anything is read or written.
				problem(t, b.do(t, ro.method, path, "", body, call.headers...), http.StatusUnauthorized, "missing_org")
				for _, pair := range [][2]string{{orgB, orgA}, {orgA, orgB}} {
					problem(t, b.doOrgs(t, ro.method, path, pair[:], body, call.headers...), http.StatusBadRequest, "invalid_org")
				}
				problem(t, b.do(t, ro.method, path, orgB+","+orgA, body, call.headers...), http.StatusBadRequest, "invalid_org")
				require.Equal(t, before, snapshotA(t, b, fx), "a refused call to %s changed what org A sees", ro.op.OperationID)
			}
		})
	}
}
