package main

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeHoldsAtTheEdges walks issue 31's HTTP points through svcflow serve (runtime and
// worker in one process, embedded SQLite), each with what the service recorded after it:
// an Idempotency-Key reused with another body, a form that expects a key the engine owns, a
// process that runs its published version, the delete of a process's workflow, a failing
// batched foreach element, a CSV field with a bare quote, a cancelled run's paused step, and
// form generation without a model key.
func TestServeHoldsAtTheEdges(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db", "--runtime-addr", "127.0.0.1:0")
	const org = "acme"
	call := func(method, path string, body any, header ...string) (int, map[string]any) {
		t.Helper()
		var b []byte
		switch v := body.(type) {
		case nil:
		case string:
			b = []byte(v)
		default:
			var err error
			b, err = json.Marshal(v)
			require.NoError(t, err)
		}
		req, err := http.NewRequest(method, p.base+path, bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("X-Org-Id", org)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if len(raw) > 0 {
			require.NoError(t, json.Unmarshal(raw, &m), string(raw))
		}
		return resp.StatusCode, m
	}
	must := func(want int, method, path string, body any, header ...string) map[string]any {
		t.Helper()
		code, m := call(method, path, body, header...)
		require.Equal(t, want, code, "%s %s: %v", method, path, m)
		return m
	}
	refused := func(want int, wantCode, method, path string, body any, header ...string) map[string]any {
		t.Helper()
		m := must(want, method, path, body, header...)
		require.Equal(t, wantCode, m["code"], "%s %s: %v", method, path, m)
		return m
	}
	workflow := func(name, definition string) string {
		t.Helper()
		return must(http.StatusCreated, "POST", "/workflows", `{"name": "`+name+`", "definition": `+definition+`}`)["id"].(string)
	}
	runsOf := func(workflowID string) []any {
		t.Helper()
		return must(http.StatusOK, "GET", "/runs?workflow_id="+workflowID, nil)["items"].([]any)
	}

	t.Run("an Idempotency-Key reused with another body", func(t *testing.T) {
		id := workflow("signup", `{"actions": []}`)
		key := []string{"Idempotency-Key", "signup-42"}
		first := must(http.StatusAccepted, "POST", "/workflows/"+id+"/execute", `{"input": {"email": "ada@example.com"}}`, key...)
		same := must(http.StatusAccepted, "POST", "/workflows/"+id+"/execute", `{"input": {"email":"ada@example.com"}}`, key...)
		require.Equal(t, first["id"], same["id"], "the same body (written otherwise) answers the first run")
		refused(http.StatusUnprocessableEntity, "idempotency_key_reused", "POST", "/workflows/"+id+"/execute",
			`{"input": {"email": "grace@example.com"}}`, key...)
		require.Len(t, runsOf(id), 1, "a reused key starts nothing")
	})

	t.Run("a form may not expect a key the engine owns", func(t *testing.T) {
		for _, key := range []string{"input", "__approved"} {
			m := refused(http.StatusUnprocessableEntity, "validation_failed", "POST", "/workflows",
				`{"name": "owned-`+key+`", "definition": {"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["`+key+`", "name"]}}]}}`)
			require.Contains(t, mustJSON(t, m), "/properties/expected_keys/0", "the refusal points at %s", key)
		}
		require.NotContains(t, mustJSON(t, must(http.StatusOK, "GET", "/workflows", nil)), "owned-", "nothing created")
	})

	t.Run("a process runs its published version, and owns its workflow", func(t *testing.T) {
		const bundle = `{"svc_workflow_definition": {"actions": [{"type": "save-customer", "properties": {}}]},
		  "actions_to_register": [{"action_name": "save-customer", "kind": "custom-table",
		    "properties": {"table": "studio_customers", "operation": "upsert", "keys": ["email"], "values": ["{{input.email}}"]}}],
		  "custom_tables_to_create": [{"name": "studio_customers", "fields": {"email": "text"}}]}`
		prj := must(http.StatusCreated, "POST", "/process-studio/projects", map[string]any{"name": "Customers"})
		proc := must(http.StatusCreated, "POST", "/process-studio/processes", map[string]any{"project_id": prj["id"], "name": "Onboarding"})
		procID := proc["id"].(string)
		bnd := must(http.StatusCreated, "POST", "/process-studio/processes/"+procID+"/compose-from-workflow-dsl", `{"dsl": `+bundle+`}`)
		pub := must(http.StatusOK, "POST", "/process-studio/bundles/"+bnd["id"].(string)+"/publish", map[string]any{})
		workflowID := pub["workflow_id"].(string)
		published := int(must(http.StatusOK, "GET", "/workflows/"+workflowID, nil)["version"].(float64))

		edited := must(http.StatusOK, "PUT", "/workflows/"+workflowID,
			`{"name": "Onboarding", "definition": {"actions": [{"type": "save-customer", "properties": {}}, {"type": "save-customer", "properties": {}}]}}`)
		require.Equal(t, float64(published+1), edited["version"])
		run := must(http.StatusAccepted, "POST", "/process-studio/processes/"+procID+"/execute", `{"input": {"email": "ada@example.com"}}`)
		st := waitStatus(t, call, run["id"].(string), "completed")
		require.Equal(t, float64(published), st["workflow_version"], "the published version, not the edit")
		require.Len(t, st["steps"], 1)

		m := refused(http.StatusConflict, "workflow_owned_by_process", "DELETE", "/workflows/"+workflowID, nil)
		require.Contains(t, m["detail"], procID)
		must(http.StatusOK, "GET", "/workflows/"+workflowID, nil)
		must(http.StatusAccepted, "POST", "/process-studio/processes/"+procID+"/execute", `{"input": {"email": "grace@example.com"}}`)
	})

	t.Run("a failing batched element keeps the ones before it", func(t *testing.T) {
		must(http.StatusCreated, "POST", "/custom-tables", `{"name": "notes", "fields": {"v": "text", "run": "text"}}`)
		id := workflow("notes", `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "@input.items", "steps": [
		  {"type": "custom-table", "properties": {"table": "@item.t", "operation": "write", "fields": {"v": "@item.v", "run": "{{__run_id}}"}}}]}}]}`)
		run := must(http.StatusAccepted, "POST", "/workflows/"+id+"/execute",
			`{"input": {"items": [{"t": "notes", "v": "1"}, {"t": "notes", "v": "2"}, {"t": "nope", "v": "3"}, {"t": "notes", "v": "4"}]}}`)
		runID := run["id"].(string)
		waitStatus(t, call, runID, "failed")
		rows := must(http.StatusOK, "GET", "/custom-tables/notes/rows", nil)["items"].([]any)
		var got []any
		for _, r := range rows {
			got = append(got, r.(map[string]any)["data"].(map[string]any)["v"])
		}
		require.ElementsMatch(t, []any{"1", "2"}, got, "elements 1 and 2 committed, once each")
		ev := must(http.StatusOK, "GET", "/runs/"+runID+"/evidence", nil)
		require.Len(t, ev["effects"], 2, "the failed run's evidence shows the two writes: %v", ev["effects"])
	})

	t.Run("a CSV field with a bare quote", func(t *testing.T) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, err := mw.CreateFormFile("file", "screens.csv")
		require.NoError(t, err)
		_, _ = fw.Write([]byte("sku,desc\nA1,55\" screen\nA2,plain\n"))
		require.NoError(t, mw.Close())
		req, err := http.NewRequest("POST", p.base+"/documents", &body)
		require.NoError(t, err)
		req.Header.Set("X-Org-Id", org)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, doc)
		must(http.StatusCreated, "POST", "/custom-tables", `{"name": "screens", "fields": {"sku": "text", "desc": "text"}}`)
		id := workflow("screens", `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": "doc:`+doc["id"].(string)+`", "steps": [
		  {"type": "custom-table", "properties": {"table": "screens", "operation": "write", "fields": {"sku": "@item.sku", "desc": "@item.desc"}}}]}}]}`)
		run := must(http.StatusAccepted, "POST", "/workflows/"+id+"/execute", `{}`)
		waitStatus(t, call, run["id"].(string), "completed")
		rows := must(http.StatusOK, "GET", "/custom-tables/screens/rows", nil)["items"].([]any)
		var descs []any
		for _, r := range rows {
			descs = append(descs, r.(map[string]any)["data"].(map[string]any)["desc"])
		}
		require.ElementsMatch(t, []any{`55" screen`, "plain"}, descs, "the bare quote read as a character")
	})

	t.Run("a cancelled run's paused step", func(t *testing.T) {
		id := workflow("pay", `{"actions": [{"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "Pay?"}}]}`)
		run := must(http.StatusAccepted, "POST", "/workflows/"+id+"/execute", `{"input": {"amount": 42}}`)
		runID := run["id"].(string)
		waitStatus(t, call, runID, "paused")
		must(http.StatusOK, "POST", "/runs/"+runID+"/cancel", `{"reason": "not needed"}`)
		st := must(http.StatusOK, "GET", "/runs/"+runID+"/status", nil)
		require.Equal(t, "cancelled", st["status"])
		require.Equal(t, "cancelled", st["steps"].([]any)[0].(map[string]any)["status"], "the paused step closes with its run")
	})

	t.Run("form generation without a model key", func(t *testing.T) {
		must(http.StatusOK, "PUT", "/org-features", `{"agent_forms": true}`)
		g := must(http.StatusOK, "POST", "/forms/generate", `{"intent": "collect a supplier's details", "expected_keys": ["company", "email"]}`)
		require.Equal(t, "fallback", g["source"])
		require.EqualValues(t, 1, g["attempts"], "the fallback form is the one attempt")
		require.EqualValues(t, 0, g["model_calls"])
	})
}

// waitStatus asks for a run's status with ?wait= until it is want (a paused or ended run
// answers at once), and returns the status document.
func waitStatus(t *testing.T, call func(method, path string, body any, header ...string) (int, map[string]any), runID, want string) map[string]any {
	t.Helper()
	var st map[string]any
	for range 20 {
		code, m := call("GET", "/runs/"+runID+"/status?wait=5s", nil)
		require.Equal(t, http.StatusOK, code, m)
		st = m
		if st["status"] == want {
			return st
		}
		if st["status"] != "running" {
			break
		}
	}
	require.Equal(t, want, st["status"], "%v", st["reason"])
	return st
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestServeLoopReadsOneDocumentVersion: a foreach over doc:<id> whose elements call
// another system (so they commit one by one and the loop resumes between them) keeps
// reading the version it started with when a new version is uploaded while it runs.
func TestServeLoopReadsOneDocumentVersion(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	firstCall := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(firstCall) })
		<-release
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(target.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db",
		"--runtime-addr", "127.0.0.1:0", "--allow-private-targets")
	upload := func(path, content string) map[string]any {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, err := mw.CreateFormFile("file", "lines.csv")
		require.NoError(t, err)
		_, _ = fw.Write([]byte(content))
		require.NoError(t, mw.Close())
		code, m := orgCall(t, p.base, "acme", "POST", path, mw.FormDataContentType(), body.Bytes())
		require.Equal(t, http.StatusCreated, code, m)
		return m
	}
	call := func(method, path, body string) map[string]any {
		t.Helper()
		code, m := orgCall(t, p.base, "acme", method, path, "application/json", []byte(body))
		require.Less(t, code, 300, "%s %s: %v", method, path, m)
		return m
	}
	doc := upload("/documents", "ref\nA1\nA2\nA3\n")
	docID := doc["id"].(string)
	call("POST", "/actions", `{"action_name": "notify", "kind": "http", "url": "`+target.URL+`/hook", "http_method": "PUT"}`)
	call("POST", "/custom-tables", `{"name": "lines", "fields": {"ref": "text"}}`)
	wf := call("POST", "/workflows", `{"name": "import", "definition": {"actions": [{"type": "loop", "properties": {"mode": "foreach",
	  "items": "doc:`+docID+`", "steps": [{"type": "notify", "properties": {}},
	  {"type": "custom-table", "properties": {"table": "lines", "operation": "write", "fields": {"ref": "@item.ref"}}}]}}]}}`)
	run := call("POST", "/workflows/"+wf["id"].(string)+"/execute", `{}`)
	<-firstCall // the loop has read its items and waits on its first element's call
	upload("/documents/"+docID+"/versions", "ref\nB1\nB2\nB3\nB4\nB5\n")
	close(release)

	runID := run["id"].(string)
	st := waitStatus(t, func(method, path string, body any, _ ...string) (int, map[string]any) {
		return orgCall(t, p.base, "acme", method, path, "application/json", nil)
	}, runID, "completed")
	require.Equal(t, "completed", st["status"])
	rows := call("GET", "/custom-tables/lines/rows", "")["items"].([]any)
	var refs []any
	for _, r := range rows {
		refs = append(refs, r.(map[string]any)["data"].(map[string]any)["ref"])
	}
	require.Equal(t, []any{"A1", "A2", "A3"}, refs, "every element from the version the loop started with")
	ev := call("GET", "/runs/"+runID+"/evidence", "")
	require.Contains(t, mustJSON(t, ev), `"items_read"`, "the evidence names what the loop read")
	require.Contains(t, mustJSON(t, ev), docID+"@1")
}
