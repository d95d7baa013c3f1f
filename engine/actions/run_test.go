package actions_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// The secrets of these tests: none may appear anywhere but in the request to its target.
const (
	crmToken       = "crm-token-7f3a9c1e5b"
	llmAPIKeyValue = "sk-test-llm-key-4d8e2b"
)

type actionBundle = enginetest.Logged

var actionSetup = enginetest.SetupLogged

type seenRequest struct {
	Method, Path, Query, Auth, IdempotencyKey string
	Body                                      map[string]any
}

func recordingServer(t *testing.T, answer func(w http.ResponseWriter)) (*httptest.Server, func() []seenRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seenRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"),
			IdempotencyKey: r.Header.Get("Idempotency-Key")}
		_ = json.Unmarshal(raw, &s.Body)
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), seen...)
	}
}

func TestHTTPActionSendsResolvedSecretsOnlyInTheRequest(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := actionSetup(t, d, true)
			srv, seen := recordingServer(t, func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprint(w, `{"contact_id": "c-42"}`)
			})
			b.Config(t, "org-a", "api:crm", crmToken)
			b.Action(t, "org-a", svctype.Action{Name: "crm_upsert", Kind: svctype.ActionHTTP, URL: srv.URL + "/contacts/{{input.id}}",
				Headers: map[string]string{"Authorization": "Bearer orgconfig:api:crm", "X-Plain": "yes"}})
			w := b.Workflow(t, "org-a", "crm", `{"actions": [
				{"type": "crm_upsert", "properties": {"email": "@input.email", "note": "hi {{input.name}}", "__oauth_account__": "x"}, "outputKey": "crm"}]}`)
			require.Empty(t, w.Warnings, "a registered action is a known step type")
			doc := b.Execute(t, "org-a", w.ID, `{"id": "7", "email": "ada@example.com", "name": "Ada"}`)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Equal(t, map[string]any{"contact_id": "c-42"}, doc.Context["crm"])

			got := seen()
			require.Len(t, got, 1)
			require.Equal(t, seenRequest{Method: "POST", Path: "/contacts/7", Auth: "Bearer " + crmToken, IdempotencyKey: doc.ID + "/0",
				Body: map[string]any{"email": "ada@example.com", "note": "hi Ada"}}, got[0])

			ev, err := b.Eng.Evidence(b.Ctx, "org-a", doc.ID)
			require.NoError(t, err)
			kinds := map[string]svctype.Effect{}
			for _, e := range ev.Effects {
				kinds[e.Kind] = e.Effect
			}
			require.EqualValues(t, 200, kinds["http_request"].Detail["status"])
			require.Equal(t, doc.ID+"/0", kinds["call"].Detail["idempotency_key"])
			require.NotContains(t, b.Everything(t, "org-a", doc.ID), crmToken)
		})
	}
}

func TestHTTPActionPassthroughGetAndFailures(t *testing.T) {
	t.Parallel()
	b := actionSetup(t, "sqlite", true)
	srv, seen := recordingServer(t, func(w http.ResponseWriter) { _, _ = fmt.Fprint(w, "plain words") })
	b.Action(t, "o", svctype.Action{Name: "raw", Kind: svctype.ActionHTTP, URL: srv.URL + "/raw", Passthrough: true})
	b.Action(t, "o", svctype.Action{Name: "lookup", Kind: svctype.ActionHTTP, URL: srv.URL + "/find", HTTPMethod: "GET"})
	b.Action(t, "o", svctype.Action{Name: "secretless", Kind: svctype.ActionHTTP, URL: srv.URL + "/x",
		Headers: map[string]string{"Authorization": "orgconfig:api:absent"}})

	w := b.Workflow(t, "o", "pt", `{"actions": [
		{"type": "raw", "properties": {"template": "{{input.name}}", "path": "@input.name"}, "outputKey": "raw"},
		{"type": "lookup", "properties": {"q": "@input.name", "n": 2}, "outputKey": "found"}]}`)
	doc := b.Execute(t, "o", w.ID, `{"name": "Ada"}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	got := seen()
	require.Len(t, got, 2)
	// passthrough: the properties as written, nothing resolved.
	require.Equal(t, map[string]any{"template": "{{input.name}}", "path": "@input.name"}, got[0].Body)
	require.Equal(t, "GET", got[1].Method)
	require.Equal(t, "n=2&q=Ada", got[1].Query)
	require.Equal(t, map[string]any{"status": json.Number("200"), "text": "plain words"}, doc.Context["found"])

	// A missing org config key fails the step naming the key; nothing is sent.
	w = b.Workflow(t, "o", "nokey", `{"actions": [{"type": "secretless", "properties": {}}]}`)
	doc = b.Execute(t, "o", w.ID, `{}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, `"api:absent"`)
	require.Len(t, seen(), 2)
}

func TestHTTPActionRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	b := actionSetup(t, "sqlite", false)
	srv, seen := recordingServer(t, func(w http.ResponseWriter) { _, _ = fmt.Fprint(w, `{}`) })
	for i, u := range []string{srv.URL, "http://localhost:1/x", "http://169.254.169.254/latest/meta-data"} {
		name := fmt.Sprintf("inside-%d", i)
		b.Action(t, "o", svctype.Action{Name: name, Kind: svctype.ActionHTTP, URL: u})
		w := b.Workflow(t, "o", name, `{"actions": [{"type": "`+name+`", "properties": {}}]}`)
		doc := b.Execute(t, "o", w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, doc.Status, u)
		require.Contains(t, doc.Reason, "target_not_allowed", u)
	}
	require.Empty(t, seen())
}

func TestDBActionBindsParameters(t *testing.T) {
	t.Parallel()
	b := actionSetup(t, "sqlite", true)
	path := filepath.Join(t.TempDir(), "crm.db")
	crm, err := store.Open(b.Ctx, "sqlite:"+path) // any SQLite file; only its own table matters
	require.NoError(t, err)
	require.NoError(t, crm.Close())
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	b.Config(t, "o", "db:crm", "sqlite:"+path)
	b.Action(t, "o", svctype.Action{Name: "ddl", Kind: svctype.ActionDB, Datasource: "orgconfig:db:crm",
		Query: "CREATE TABLE IF NOT EXISTS customers (name TEXT, tier INTEGER)"})
	b.Action(t, "o", svctype.Action{Name: "add", Kind: svctype.ActionDB, Datasource: "orgconfig:db:crm",
		Query: "INSERT INTO customers (name, tier) VALUES ($1, $2) RETURNING name"})
	b.Action(t, "o", svctype.Action{Name: "find", Kind: svctype.ActionDB, Datasource: "orgconfig:db:crm",
		Query: "SELECT name, tier FROM customers WHERE tier >= $1 ORDER BY name"})
	w := b.Workflow(t, "o", "db", `{"actions": [
		{"type": "ddl", "properties": {}},
		{"type": "add", "properties": {"params": ["@input.evil", 2]}},
		{"type": "add", "properties": {"params": ["Ada", 1]}},
		{"type": "find", "properties": {"params": [1]}, "outputKey": "rows"}]}`)
	evil := "x'); DROP TABLE customers; --"
	in, _ := json.Marshal(map[string]any{"evil": evil})
	doc := b.Execute(t, "o", w.ID, string(in))
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.Equal(t, []any{
		map[string]any{"name": "Ada", "tier": json.Number("1")},
		map[string]any{"name": evil, "tier": json.Number("2")},
	}, doc.Context["rows"])
	require.NotContains(t, b.Everything(t, "o", doc.ID), path, "the datasource is a secret too")

	// The datasource of another organization is not there for this one.
	b.Action(t, "other", svctype.Action{Name: "find", Kind: svctype.ActionDB, Datasource: "orgconfig:db:crm", Query: "SELECT 1"})
	w = b.Workflow(t, "other", "db", `{"actions": [{"type": "find", "properties": {}}]}`)
	doc = b.Execute(t, "other", w.ID, `{}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, `"db:crm"`)
}

// openAIServer answers chat completions like the real API and records the bearer key.
func openAIServer(t *testing.T, reply string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		keys = append(keys, r.Header.Get("Authorization"))
		mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		content, _ := json.Marshal(reply + " / " + req.Messages[0].Content)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": %q,
			"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": %s}}],
			"usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}`, req.Model, content)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), keys...)
	}
}

func TestLLMAction(t *testing.T) {
	t.Parallel()
	b := actionSetup(t, "sqlite", true)
	srv, keys := openAIServer(t, "summary")
	b.Action(t, "o", svctype.Action{Name: "summarise", Kind: svctype.ActionLLM, Template: "Summarise {{text}} for {{input.who}}", Model: "small-model", MaxTokens: 50})
	w := b.Workflow(t, "o", "llm", `{"actions": [{"type": "summarise", "properties": {"text": "@input.text"}, "outputKey": "s"}]}`)

	// Without a key the step fails and llm_key_missing says why.
	doc := b.Execute(t, "o", w.ID, `{"text": "the ledger", "who": "Ada"}`)
	require.Equal(t, svctype.RunFailed, doc.Status)
	require.Contains(t, doc.Reason, "llm_key_missing")
	page, err := b.Eng.RunEvents(b.Ctx, "o", doc.ID, svctype.ListOptions{Limit: 100})
	require.NoError(t, err)
	var missing map[string]any
	for _, e := range page.Items {
		if e.Event == engine.EventLLMKeyMissing {
			require.NoError(t, json.Unmarshal(e.Payload, &missing))
		}
	}
	require.NotNil(t, missing, "llm_key_missing emitted")
	require.Len(t, missing, 3, "the spec's run_id, event, message and nothing else: %v", missing)
	require.Equal(t, doc.ID, missing["run_id"])
	require.Equal(t, "summarise", missing["event"])
	require.Contains(t, missing["message"], engine.LLMAPIKey)
	require.Empty(t, keys())

	b.Config(t, "o", engine.LLMAPIKey, llmAPIKeyValue)
	b.Config(t, "o", engine.LLMBaseURL, srv.URL+"/v1")
	doc = b.Execute(t, "o", w.ID, `{"text": "the ledger", "who": "Ada"}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	out := doc.Context["s"].(map[string]any)
	require.Equal(t, "summary / Summarise the ledger for Ada", out["text"])
	require.Equal(t, "small-model", out["model"])
	require.Equal(t, json.Number("16"), out["usage"].(map[string]any)["total_tokens"])
	require.Equal(t, []string{"Bearer " + llmAPIKeyValue}, keys())
	// The call's tokens are counted for its organization (svcflow_model_tokens_total).
	m := b.Meter()
	require.Equal(t, 11.0, m.Value("svcflow_model_tokens_total", "o", "input"))
	require.Equal(t, 5.0, m.Value("svcflow_model_tokens_total", "o", "output"))
	require.Equal(t, 1.0, m.Value("svcflow_model_calls_total", "o", "ok"))
	require.Zero(t, m.Value("svcflow_model_tokens_total", "unknown", "input"))
	require.NotContains(t, b.Everything(t, "o", doc.ID), llmAPIKeyValue)
}

func TestStoredCustomTableAndNWayActions(t *testing.T) {
	t.Parallel()
	b := actionSetup(t, "sqlite", false)
	_, err := b.Eng.CreateTable(b.Ctx, "o", "exceptions", map[string]string{"inv": "text", "note": "text"})
	require.NoError(t, err)
	b.Action(t, "o", svctype.Action{Name: "log_exception", Kind: svctype.ActionCustomTable, Properties: map[string]any{
		"table": "exceptions", "operation": "write", "fields": map[string]any{"note": "from {{input.who}}"}}})
	b.Action(t, "o", svctype.Action{Name: "recon", Kind: svctype.ActionNWayMatch, Properties: map[string]any{
		"sets":       []any{map[string]any{"key": "bank", "records": "@input.bank"}, map[string]any{"key": "erp", "records": "@input.erp"}},
		"matchOn":    []any{"inv"},
		"tolerances": map[string]any{"amount": map[string]any{"type": "abs", "value": 0.0}},
	}})
	w := b.Workflow(t, "o", "stored", `{"actions": [
		{"type": "recon", "properties": {"bank": "@input.bank", "erp": "@input.erp"}},
		{"type": "log_exception", "properties": {"keys": ["inv"], "values": ["B"]}}]}`)
	require.Empty(t, w.Warnings)
	doc := b.Execute(t, "o", w.ID, `{"who": "Ada", "bank": [{"inv": "A", "amount": 1}, {"inv": "B", "amount": 1}], "erp": [{"inv": "A", "amount": 1}, {"inv": "B", "amount": 2}]}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	counts := doc.Context["matchGroupCounts"].(map[string]any)
	require.Equal(t, json.Number("1"), counts["full"])
	require.Equal(t, json.Number("1"), counts["variance"])
	rows, err := b.Eng.ReadRows(b.Ctx, "o", "exceptions", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, map[string]any{"inv": "B", "note": "from Ada"}, rows[0].Data)
}
