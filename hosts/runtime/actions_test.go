package runtime_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// actionDoc is an action as a client reads it.
type actionDoc struct {
	ActionName     string            `json:"action_name"`
	Kind           string            `json:"kind"`
	Description    string            `json:"description"`
	URL            string            `json:"url"`
	HTTPMethod     string            `json:"http_method"`
	Headers        map[string]string `json:"headers"`
	TimeoutSeconds int               `json:"timeout_seconds"`
	Datasource     string            `json:"datasource"`
	Query          string            `json:"query"`
	Template       string            `json:"template"`
	MaxTokens      int               `json:"max_tokens"`
	Properties     map[string]any    `json:"properties"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

// readmeActions are the examples of README.md's "Actions" section, one per kind, as written there.
var readmeActions = []string{
	`{"action_name": "notify-crm", "kind": "http", "description": "Create or update a contact in the CRM",
	  "url": "https://crm.example.com/api/contacts", "http_method": "POST",
	  "headers": {"Authorization": "orgconfig:api:crm_token", "X-Source": "svcflow"}, "timeout_seconds": 10}`,
	`{"action_name": "invoice-lookup", "kind": "db", "description": "Read one invoice from the ERP",
	  "datasource": "orgconfig:db:erp", "query": "SELECT id, amount, status FROM invoices WHERE id = $1"}`,
	`{"action_name": "summarise-ticket", "kind": "llm", "description": "Summarise a support ticket",
	  "template": "Summarise this support ticket in two sentences: {{text}}", "model": "gpt-4o-mini", "max_tokens": 300}`,
	`{"action_name": "log-note", "kind": "custom-table", "description": "Append a note",
	  "properties": {"table": "notes", "operation": "write", "fields": {"text": "@input.text"}}}`,
	`{"action_name": "month-end-recon", "kind": "nway_match", "description": "Match bank lines against ERP invoices",
	  "properties": {"sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}],
	    "matchOn": ["invoice"], "tolerances": {"amount": {"type": "currency", "value": 0.01}}, "exceptionTable": "exceptions"}}`,
}

func TestActionsRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Every README example registers; the answer is the registration as stored.
	for _, body := range readmeActions {
		a := ok[actionDoc](t, b.do(t, http.MethodPost, "/actions", orgA, body), http.StatusCreated)
		require.NotEmpty(t, a.ActionName)
		require.False(t, a.CreatedAt.IsZero())
		require.Equal(t, a.CreatedAt, a.UpdatedAt)
	}
	got := ok[actionDoc](t, b.do(t, http.MethodGet, "/actions/notify-crm", orgA, nil), http.StatusOK)
	require.Equal(t, "http", got.Kind)
	require.Equal(t, "orgconfig:api:crm_token", got.Headers["Authorization"])
	require.Equal(t, 10, got.TimeoutSeconds)
	got = ok[actionDoc](t, b.do(t, http.MethodGet, "/actions/month-end-recon", orgA, nil), http.StatusOK)
	require.Equal(t, "exceptions", got.Properties["exceptionTable"])

	// A default is filled and shown.
	created := ok[actionDoc](t, b.do(t, http.MethodPost, "/actions", orgA, map[string]any{
		"action_name": "ping", "kind": "http", "url": "https://status.example.com/ping",
	}), http.StatusCreated)
	require.Equal(t, "POST", created.HTTPMethod)

	// A taken name is 409 and changes nothing.
	problem(t, b.do(t, http.MethodPost, "/actions", orgA, map[string]any{
		"action_name": "ping", "kind": "llm", "template": "x",
	}), http.StatusConflict, "conflict")
	require.Equal(t, "http", ok[actionDoc](t, b.do(t, http.MethodGet, "/actions/ping", orgA, nil), http.StatusOK).Kind)

	// Paged by name.
	var names []string
	q := url.Values{"limit": {"4"}}
	for range 10 {
		page := ok[list[actionDoc]](t, b.do(t, http.MethodGet, "/actions?"+q.Encode(), orgA, nil), http.StatusOK)
		for _, a := range page.Items {
			names = append(names, a.ActionName)
		}
		if page.NextCursor == "" {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	require.Equal(t, []string{"invoice-lookup", "log-note", "month-end-recon", "notify-crm", "ping", "summarise-ticket"}, names)

	// PUT replaces the whole registration.
	b.clk.Advance(time.Millisecond) // updated_at moves past created_at
	repl := ok[actionDoc](t, b.do(t, http.MethodPut, "/actions/ping", orgA, map[string]any{
		"kind": "http", "url": "https://status.example.com/v2/ping", "http_method": "GET",
	}), http.StatusOK)
	require.Equal(t, "ping", repl.ActionName, "the path names the action")
	require.Equal(t, "GET", repl.HTTPMethod)
	require.Equal(t, created.CreatedAt, repl.CreatedAt)
	require.True(t, repl.UpdatedAt.After(created.UpdatedAt))
	repl = ok[actionDoc](t, b.do(t, http.MethodPut, "/actions/ping", orgA, map[string]any{
		"action_name": "ping", "kind": "llm", "template": "Ping {{input.host}}",
	}), http.StatusOK)
	require.Equal(t, "llm", repl.Kind)
	require.Empty(t, repl.URL, "fields left out are gone")
	require.Equal(t, repl, ok[actionDoc](t, b.do(t, http.MethodGet, "/actions/ping", orgA, nil), http.StatusOK))

	p := problem(t, b.do(t, http.MethodPut, "/actions/ping", orgA, map[string]any{
		"action_name": "pong", "kind": "llm", "template": "x",
	}), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/action_name"}, pointers(p))
	problem(t, b.do(t, http.MethodPut, "/actions/missing", orgA, map[string]any{"kind": "llm", "template": "x"}),
		http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodGet, "/actions/missing", orgA, nil), http.StatusNotFound, "not_found")

	// DELETE: 204, then 404; the name is free again.
	rec := b.do(t, http.MethodDelete, "/actions/ping", orgA, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Empty(t, rec.Body.String())
	problem(t, b.do(t, http.MethodDelete, "/actions/ping", orgA, nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodGet, "/actions/ping", orgA, nil), http.StatusNotFound, "not_found")
	ok[actionDoc](t, b.do(t, http.MethodPost, "/actions", orgA, map[string]any{
		"action_name": "ping", "kind": "llm", "template": "x",
	}), http.StatusCreated)

	// Another organization sees none of it.
	problem(t, b.do(t, http.MethodGet, "/actions/notify-crm", orgB, nil), http.StatusNotFound, "not_found")
	require.Empty(t, ok[list[actionDoc]](t, b.do(t, http.MethodGet, "/actions", orgB, nil), http.StatusOK).Items)
	problem(t, b.do(t, http.MethodGet, "/actions", "", nil), http.StatusUnauthorized, "missing_org")
}

// TestActionsValidation: every refused registration is 422 with the field named by a
// JSON pointer into the body, whether the schema (Huma) or the engine refuses it.
func TestActionsValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"no kind", `{"action_name": "a"}`, []string{"/kind"}},
		{"unknown kind", `{"action_name": "a", "kind": "smtp"}`, []string{"/kind"}},
		{"no name", `{"kind": "llm", "template": "x"}`, []string{"/action_name"}},
		{"bad name", `{"action_name": "a b", "kind": "llm", "template": "x"}`, []string{"/action_name"}},
		{"name of a primitive", `{"action_name": "loop", "kind": "llm", "template": "x"}`, []string{"/action_name"}},
		{"unknown field", `{"action_name": "a", "kind": "llm", "template": "x", "temperature": 2}`, []string{"/temperature"}},
		{"http without url", `{"action_name": "a", "kind": "http"}`, []string{"/url"}},
		{"http ftp url", `{"action_name": "a", "kind": "http", "url": "ftp://example.com"}`, []string{"/url"}},
		{"http method", `{"action_name": "a", "kind": "http", "url": "https://x.example", "http_method": "FETCH"}`, []string{"/http_method"}},
		{"http timeout", `{"action_name": "a", "kind": "http", "url": "https://x.example", "timeout_seconds": 301}`, []string{"/timeout_seconds"}},
		{"http header value", `{"action_name": "a", "kind": "http", "url": "https://x.example", "headers": {"X-A": "a\r\nX-B: b"}}`, []string{"/headers/X-A"}},
		{"http with a datasource", `{"action_name": "a", "kind": "http", "url": "https://x.example", "datasource": "orgconfig:db:x"}`, []string{"/datasource"}},
		{"db literal datasource", `{"action_name": "a", "kind": "db", "datasource": "postgres://u:p@h/d", "query": "SELECT 1"}`, []string{"/datasource"}},
		{"db without query", `{"action_name": "a", "kind": "db", "datasource": "orgconfig:db:erp"}`, []string{"/query"}},
		{"llm max_tokens", `{"action_name": "a", "kind": "llm", "template": "x", "max_tokens": 100001}`, []string{"/max_tokens"}},
		{"llm without template", `{"action_name": "a", "kind": "llm"}`, []string{"/template"}},
		{"custom-table without table", `{"action_name": "a", "kind": "custom-table", "properties": {"operation": "read"}}`, []string{"/properties/table"}},
		{"nway_match without matchOn", `{"action_name": "a", "kind": "nway_match", "properties": {"sets": [{"key": "a", "records": "@input.a"}, {"key": "b", "records": "@input.b"}]}}`, []string{"/properties/matchOn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := problem(t, b.do(t, http.MethodPost, "/actions", orgA, tt.body), http.StatusUnprocessableEntity, "validation_failed")
			require.Equal(t, tt.want, pointers(p), "%+v", p.Errors)
		})
	}
	require.Empty(t, ok[list[json.RawMessage]](t, b.do(t, http.MethodGet, "/actions", orgA, nil), http.StatusOK).Items)
}
