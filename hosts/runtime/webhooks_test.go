package runtime_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// webhookDoc is a registration as a client reads it; Secret catches a secret that leaks.
type webhookDoc struct {
	ID         string `json:"id"`
	Event      string `json:"event"`
	EventAlias string `json:"event_alias"`
	URL        string `json:"url"`
	HasSecret  bool   `json:"has_secret"`
	Secret     string `json:"secret"`
	Filter     *struct {
		Tags        []string `json:"tags"`
		ContentType string   `json:"content_type"`
	} `json:"filter"`
	AutoPayload         map[string]any `json:"auto_payload"`
	Disabled            bool           `json:"disabled"`
	DisabledAt          *string        `json:"disabled_at"`
	ConsecutiveFailures int            `json:"consecutive_failures"`
	CreatedAt           string         `json:"created_at"`
	UpdatedAt           string         `json:"updated_at"`
}

// Public literal addresses: the registration checks a name's addresses, and these tests do
// not depend on the machine's DNS.
const (
	hookURL  = "https://93.184.215.14/hooks/svcflow"
	hookURL2 = "https://93.184.215.14/hooks/v2"
)

func TestWebhooksRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	rec := b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{
		"event": "workflow.completed", "url": hookURL, "secret": "whsec-routes-0123",
		"auto_payload": map[string]any{"source": "svcflow"},
	})
	w := ok[webhookDoc](t, rec, http.StatusCreated)
	require.True(t, strings.HasPrefix(w.ID, "whk_"), w.ID)
	require.Equal(t, "workflow_run_completed", w.Event)
	require.Equal(t, "workflow.completed", w.EventAlias)
	require.Equal(t, hookURL, w.URL)
	require.True(t, w.HasSecret)
	require.Empty(t, w.Secret)
	require.NotContains(t, rec.Body.String(), "whsec-routes-0123")
	require.Equal(t, map[string]any{"source": "svcflow"}, w.AutoPayload)
	require.False(t, w.Disabled)
	require.Nil(t, w.DisabledAt)
	require.NotContains(t, rec.Body.String(), `"filter"`, "no filter, none shown")

	doc := ok[webhookDoc](t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{
		"event": "document.uploaded", "url": hookURL2,
		"filter": map[string]any{"tags": []string{"invoices"}, "content_type": "text/csv"},
	}), http.StatusCreated)
	require.Empty(t, doc.EventAlias)
	require.False(t, doc.HasSecret)
	require.Equal(t, []string{"invoices"}, doc.Filter.Tags)
	require.Equal(t, "text/csv", doc.Filter.ContentType)

	got := ok[webhookDoc](t, b.do(t, http.MethodGet, "/webhooks/"+w.ID, orgA, nil), http.StatusOK)
	require.Equal(t, w, got)
	l := ok[list[webhookDoc]](t, b.do(t, http.MethodGet, "/webhooks?limit=1", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 1)
	require.Equal(t, w.ID, l.Items[0].ID, "oldest first")
	require.NotEmpty(t, l.NextCursor)

	// PATCH: only what is given changes.
	upd := ok[webhookDoc](t, b.do(t, http.MethodPatch, "/webhooks/"+w.ID, orgA, map[string]any{"url": hookURL2}), http.StatusOK)
	require.Equal(t, hookURL2, upd.URL)
	require.True(t, upd.HasSecret)
	require.Equal(t, w.AutoPayload, upd.AutoPayload)
	require.Equal(t, w.Event, upd.Event)
	upd = ok[webhookDoc](t, b.do(t, http.MethodPatch, "/webhooks/"+w.ID, orgA, map[string]any{"secret": "", "auto_payload": map[string]any{}}), http.StatusOK)
	require.False(t, upd.HasSecret, `"secret": "" removes it`)
	require.Nil(t, upd.AutoPayload)
	upd = ok[webhookDoc](t, b.do(t, http.MethodPatch, "/webhooks/"+doc.ID, orgA, map[string]any{"disabled": true}), http.StatusOK)
	require.True(t, upd.Disabled)
	require.NotNil(t, upd.DisabledAt)
	upd = ok[webhookDoc](t, b.do(t, http.MethodPatch, "/webhooks/"+doc.ID, orgA, map[string]any{"disabled": false, "filter": map[string]any{}}), http.StatusOK)
	require.False(t, upd.Disabled)
	require.Nil(t, upd.Filter, "{} removes the filter")

	// Problems, located.
	p := problem(t, b.do(t, http.MethodPatch, "/webhooks/"+w.ID, orgA, map[string]any{"filter": map[string]any{"tags": []string{"x"}}}), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/filter"}, pointers(p))
	p = problem(t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{"event": "step.completed", "url": hookURL}), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/event"}, pointers(p))
	require.Contains(t, p.Errors[0].Message, "workflow.started", "the registrable events are listed")
	require.Equal(t, "body.event", p.Errors[0].Location)
	p = problem(t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{"event": "document.deleted", "url": "https://u:p@93.184.215.14/"}), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/url"}, pointers(p))
	problem(t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{"event": "document.deleted", "url": hookURL, "has_secret": true}), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{"url": hookURL}), http.StatusUnprocessableEntity, "validation_failed")
	for _, u := range []string{"http://127.0.0.1:9000/in", "http://localhost:9000/in", "http://169.254.169.254/latest/meta-data/", "https://[fd00::1]/in"} {
		p = problem(t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{"event": "document.deleted", "url": u}), http.StatusUnprocessableEntity, "target_not_allowed")
		require.Equal(t, []string{"/url"}, pointers(p), u)
		problem(t, b.do(t, http.MethodPatch, "/webhooks/"+w.ID, orgA, map[string]any{"url": u}), http.StatusUnprocessableEntity, "target_not_allowed")
	}
	problem(t, b.do(t, http.MethodPatch, "/webhooks/whk_missing", orgA, map[string]any{"disabled": true}), http.StatusNotFound, "not_found")

	// Another organization: 404, and its listing is its own.
	problem(t, b.do(t, http.MethodGet, "/webhooks/"+w.ID, orgB, nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodDelete, "/webhooks/"+w.ID, orgB, nil), http.StatusNotFound, "not_found")
	require.Empty(t, ok[list[webhookDoc]](t, b.do(t, http.MethodGet, "/webhooks", orgB, nil), http.StatusOK).Items)

	rec = b.do(t, http.MethodDelete, "/webhooks/"+w.ID, orgA, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Empty(t, rec.Body.String())
	problem(t, b.do(t, http.MethodGet, "/webhooks/"+w.ID, orgA, nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodDelete, "/webhooks/"+w.ID, orgA, nil), http.StatusNotFound, "not_found")
	l = ok[list[webhookDoc]](t, b.do(t, http.MethodGet, "/webhooks", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 1)
}

// TestWebhookSecretNeverShown: a webhook secret appears in no answer (successes and
// problems alike, whatever is wrong with the request) and in no log line.
func TestWebhookSecretNeverShown(t *testing.T) {
	t.Parallel()
	b := setupSecrets(t, true)
	const secret = "whsec-never-echo-9c9c9c9c"
	long := secret + strings.Repeat("z", 600)
	b.secret(secret)

	created := ok[webhookDoc](t, b.send(t, http.MethodPost, "/webhooks", orgA, map[string]any{
		"event": "workflow.failed", "url": hookURL, "secret": secret,
	}), http.StatusCreated)
	require.True(t, created.HasSecret)
	b.send(t, http.MethodGet, "/webhooks/"+created.ID, orgA, nil)
	b.send(t, http.MethodGet, "/webhooks", orgA, nil)
	ok[webhookDoc](t, b.send(t, http.MethodPatch, "/webhooks/"+created.ID, orgA, map[string]any{"secret": secret + "-2"}), http.StatusOK)

	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
	}{
		{"secret too long", http.MethodPost, "/webhooks", map[string]any{"event": "workflow.failed", "url": hookURL, "secret": long}, 422, "validation_failed"},
		{"secret not a string", http.MethodPost, "/webhooks", map[string]any{"event": "workflow.failed", "url": hookURL, "secret": map[string]string{"s": secret}}, 422, "validation_failed"},
		{"secret with a bad event", http.MethodPost, "/webhooks", map[string]any{"event": "nope", "url": hookURL, "secret": secret}, 422, "validation_failed"},
		{"secret with a refused target", http.MethodPost, "/webhooks", map[string]any{"event": "workflow.failed", "url": "http://127.0.0.1/", "secret": secret}, 422, "target_not_allowed"},
		{"secret under an unknown member", http.MethodPost, "/webhooks", map[string]any{"event": "workflow.failed", "url": hookURL, "token": secret}, 422, "validation_failed"},
		{"not JSON", http.MethodPost, "/webhooks", `{"event": "workflow.failed", "secret": "` + secret + `"`, 400, "malformed_json"},
		{"patch secret too long", http.MethodPatch, "/webhooks/" + created.ID, map[string]any{"secret": long}, 422, "validation_failed"},
		{"patch secret not a string", http.MethodPatch, "/webhooks/" + created.ID, map[string]any{"secret": []string{secret}}, 422, "validation_failed"},
		{"patch of another org's", http.MethodPatch, "/webhooks/" + created.ID + "x", map[string]any{"secret": secret}, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := problem(t, b.send(t, tt.method, tt.path, orgA, tt.body), tt.status, tt.code)
			for _, d := range p.Errors {
				require.Nil(t, d.Value, "no offending value is echoed")
			}
		})
	}
	got := ok[webhookDoc](t, b.send(t, http.MethodGet, "/webhooks/"+created.ID, orgA, nil), http.StatusOK)
	require.True(t, got.HasSecret)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
}
