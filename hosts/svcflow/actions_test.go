package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestActionsKeepSecretsEndToEnd runs the real service with registered http, llm and db
// actions whose credentials come from org config, against real receivers, in passing and
// failing ways (a receiver that echoes the Authorization header in its 500 body, a model
// server that quotes the key in its 401, a database DSN whose password is refused). The
// secrets reach their receivers and appear nowhere else: not in any HTTP answer (status,
// context, evidence, events, lists, errors), and not in the process's log.
func TestActionsKeepSecretsEndToEnd(t *testing.T) {
	t.Parallel()
	const (
		crmSecret = "crm-secret-0d9f8e7a6b"
		llmSecret = "sk-llm-secret-5c4b3a2f1e"
		dbSecret  = "db-password-secret-9a8b7c"
	)
	var mu sync.Mutex
	var gotAuth []string
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/broken") {
			http.Error(w, "upstream failed for "+r.Header.Get("Authorization"), http.StatusInternalServerError)
			return
		}
		_, _ = fmt.Fprint(w, `{"contact": "c-1"}`)
	}))
	defer crm.Close()
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		gotAuth = append(gotAuth, auth)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("fail") != "" || strings.Contains(r.URL.Path, "/bad/") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"error": {"message": "Incorrect API key provided: %s", "type": "invalid_request_error", "code": "invalid_api_key"}}`, strings.TrimPrefix(auth, "Bearer "))
			return
		}
		_, _ = fmt.Fprint(w, `{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}],
			"usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}`)
	}))
	defer model.Close()

	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+filepath.Join(dir, "svc.db"),
		"--runtime-addr", "127.0.0.1:0", "--allow-private-targets")
	c := orgConfigClient{t: t, base: p.base}
	var answers strings.Builder
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, text := c.call(method, path, body)
		answers.WriteString(text)
		require.Equal(t, want, code, text)
		var m map[string]any
		if text != "" {
			require.NoError(t, json.Unmarshal([]byte(text), &m), text)
		}
		return m
	}
	for k, v := range map[string]string{
		"api:crm": crmSecret, "api:llm_api_key": llmSecret, "api:llm_base_url": model.URL + "/v1",
		"db:crm": "postgres://svc:" + dbSecret + "@127.0.0.1:1/crm?sslmode=disable",
	} {
		body, _ := json.Marshal(map[string]string{"key": k, "value": v})
		call("POST", "/org-config", string(body), 201)
	}
	for _, a := range []string{
		`{"action_name": "crm", "kind": "http", "url": "` + crm.URL + `/contacts", "headers": {"Authorization": "Bearer orgconfig:api:crm"}}`,
		`{"action_name": "crm_broken", "kind": "http", "url": "` + crm.URL + `/broken", "headers": {"Authorization": "Bearer orgconfig:api:crm"}}`,
		`{"action_name": "ask", "kind": "llm", "template": "Say {{word}}"}`,
		`{"action_name": "lookup", "kind": "db", "datasource": "orgconfig:db:crm", "query": "SELECT $1::int AS n"}`,
	} {
		call("POST", "/actions", a, 201)
	}
	flow := func(name, steps string) string {
		w := call("POST", "/workflows", `{"name": "`+name+`", "definition": {"actions": [`+steps+`]}}`, 201)
		require.Empty(t, w["warnings"], "registered actions are known step types")
		return w["id"].(string)
	}
	good := flow("good", `{"type": "crm", "properties": {"email": "@input.email"}, "outputKey": "crm"},
		{"type": "ask", "properties": {"word": "hello"}, "outputKey": "said"}`)
	broken := flow("broken", `{"type": "crm_broken", "properties": {}}`)
	lookup := flow("lookup", `{"type": "lookup", "properties": {"params": [1]}}`)

	runs := map[string]string{}
	for name, id := range map[string]string{"good": good, "broken": broken, "lookup": lookup} {
		doc := call("POST", "/workflows/"+id+"/execute?wait=30s", `{"input": {"email": "ada@example.com"}}`, 200)
		runs[name] = doc["id"].(string)
		if name == "good" {
			require.Equal(t, "completed", doc["status"], doc)
			ctx := doc["context"].(map[string]any)
			require.Equal(t, map[string]any{"contact": "c-1"}, ctx["crm"])
			require.Equal(t, "fine", ctx["said"].(map[string]any)["text"])
		} else {
			require.Equal(t, "failed", doc["status"], doc)
		}
	}
	// The model refuses the key (and quotes it back): the step fails without showing it.
	call("POST", "/org-config", `{"key": "api:llm_base_url", "value": "`+model.URL+`/bad/v1"}`, 200)
	doc := call("POST", "/workflows/"+good+"/execute?wait=30s", `{"input": {"email": "ada@example.com"}}`, 200)
	require.Equal(t, "failed", doc["status"], doc)
	runs["refused"] = doc["id"].(string)

	for _, id := range runs {
		call("GET", "/runs/"+id+"/status", "", 200)
		call("GET", "/runs/"+id+"/evidence", "", 200)
		call("GET", "/runs/"+id+"/events?limit=500", "", 200)
	}
	call("GET", "/org-config", "", 200)
	call("GET", "/actions", "", 200)
	call("GET", "/actions/crm", "", 200)
	require.NoError(t, p.stop())

	mu.Lock()
	require.Contains(t, gotAuth, "Bearer "+crmSecret, "the secret reached its receiver")
	require.Contains(t, gotAuth, "Bearer "+llmSecret)
	mu.Unlock()
	everything := answers.String() + p.logs.String()
	require.Contains(t, everything, "http_status", "the broken receiver's failure is reported")
	requireNoSecretIn(t, everything, crmSecret, llmSecret, dbSecret)
	// The database file holds them only sealed.
	raw, err := os.ReadFile(filepath.Join(dir, "svc.db"))
	require.NoError(t, err)
	requireNoSecretIn(t, string(raw), crmSecret, llmSecret, dbSecret)

}
