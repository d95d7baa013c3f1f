package runtime_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/oauthtools/oauthtest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testclock"
	"github.com/svcflow/svcflow/internal/testlog"
)

// bundle is one runtime over a fresh in-memory database.
type bundle struct {
	eng  *engine.Engine
	st   *store.Store
	srv  *runtime.Server
	h    http.Handler
	api  huma.API
	logs *bytes.Buffer
	// oauth stands in for the OAuth providers and their APIs.
	oauth *oauthtest.Provider
	// clk is the engine's and the store's clock: it runs with the wall clock until moved.
	// Its timers (a ?wait= deadline) fire only when it is moved.
	clk *testclock.Clock
}

func setup(t testing.TB) *bundle {
	t.Helper()
	clk := testclock.Running()
	st := store.OpenTest(t, "sqlite", store.WithNow(clk.Now))
	quiet := testlog.Quiet()
	fake := oauthtest.New(t)
	eng, err := engine.New(engine.Config{Store: st, Logger: quiet, Keyring: testKeyring(t), OAuth: testOAuth(fake), Now: clk.Now, After: clk.After})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	logs := &bytes.Buffer{}
	srv := runtime.New(eng, runtime.Options{Logger: testlog.Tee(slog.NewTextHandler(logs, nil)), Version: "test", IdentityKey: testIdentityKey})
	return &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API(), logs: logs, oauth: fake, clk: clk}
}

// testIdentityKey is the key the test gateway signs identities with.
var testIdentityKey = []byte("test-gateway-identity-key-0123456789")

func init() { testlog.Secret(string(testIdentityKey)) } // no log line of the suite may hold it

// testKeyring is a keyring of one new master key.
func testKeyring(t testing.TB) *secrets.Keyring {
	t.Helper()
	key, err := secrets.GenerateKey()
	require.NoError(t, err)
	kr, err := secrets.NewKeyring(key)
	require.NoError(t, err)
	return kr
}

// do sends one request in memory. body: nil (none), string or []byte (sent as is), or any
// other value (JSON-encoded). org "" sends no X-Org-Id. headers are "Name: value".
func (b *bundle) do(t testing.TB, method, path, org string, body any, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var raw []byte
	switch v := body.(type) {
	case nil:
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		var err error
		raw, err = json.Marshal(v)
		require.NoError(t, err)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, bytes.NewReader(raw))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if org != "" {
		req.Header.Set("X-Org-Id", org)
	}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		require.True(t, ok, "header %q", h)
		if n, many := strings.CutSuffix(name, "+"); many { // doOrgs: several lines of one header
			for _, v := range strings.Split(strings.TrimSpace(value), "\x00") {
				req.Header.Add(strings.TrimSpace(n), v)
			}
			continue
		}
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	checkContract(t, req, raw, rec)
	return rec
}

// doOrgs is do with one X-Org-Id header line for each of orgs.
func (b *bundle) doOrgs(t testing.TB, method, path string, orgs []string, body any, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	return b.do(t, method, path, "", body, append(headers, "X-Org-Id+: "+strings.Join(orgs, "\x00"))...)
}

// ok asserts status and decodes the JSON answer.
func ok[T any](t testing.TB, rec *httptest.ResponseRecorder, status int) T {
	t.Helper()
	require.Equal(t, status, rec.Code, "body: %s", rec.Body.String())
	var v T
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), "body: %s", rec.Body.String())
	return v
}

// problem asserts a problem+json answer with status and code.
func problem(t testing.TB, rec *httptest.ResponseRecorder, status int, code string) runtime.Problem {
	t.Helper()
	require.Equal(t, status, rec.Code, "body: %s", rec.Body.String())
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), "body: %s", rec.Body.String())
	var p runtime.Problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p), "body: %s", rec.Body.String())
	require.Equal(t, code, p.Code, "body: %s", rec.Body.String())
	require.Equal(t, status, p.Status)
	require.NotEmpty(t, p.Title)
	return p
}

func pointers(p runtime.Problem) []string {
	out := make([]string, 0, len(p.Errors))
	for _, d := range p.Errors {
		out = append(out, d.Pointer)
	}
	return out
}

// Wire shapes as a client reads them.
type (
	workflowDoc struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Version    int             `json:"version"`
		Definition json.RawMessage `json:"definition"`
		Warnings   []string        `json:"warnings"`
	}
	runRef struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	list[T any] struct {
		Items      []T    `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	idOnly struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	eventDoc struct {
		Event   string         `json:"event"`
		Payload map[string]any `json:"payload"`
	}
	rowDoc struct {
		ID   string         `json:"id"`
		Data map[string]any `json:"data"`
	}
)

const (
	orgA = "org-a"
	orgB = "org-b"
)

// upsertDefinition upserts {email, name} of the input into table contacts.
const upsertDefinition = `{"actions":[{"type":"custom-table","outputKey":"saved","properties":{
	"table":"contacts","operation":"upsert","keys":["email"],"values":["@input.email"],
	"fields":{"name":"@input.name","status":"new"}}}]}`

func workflowBody(name, definition string) map[string]any {
	return map[string]any{"name": name, "definition": json.RawMessage(definition)}
}

// createWorkflow creates the contacts table (once per org) and a workflow upserting into it.
func (b *bundle) createWorkflow(t testing.TB, org, name string) workflowDoc {
	t.Helper()
	rec := b.do(t, http.MethodPost, "/custom-tables", org, map[string]any{
		"name": "contacts", "fields": map[string]string{"email": "text", "name": "text", "status": "text"},
	})
	require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, rec.Code, rec.Body.String())
	return ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", org, workflowBody(name, upsertDefinition)), http.StatusCreated)
}

func (b *bundle) execute(t testing.TB, org, workflowID string, input map[string]any) runRef {
	t.Helper()
	return ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+workflowID+"/execute", org, map[string]any{"input": input}), http.StatusAccepted)
}

func (b *bundle) work(t testing.TB) {
	t.Helper()
	_, err := b.eng.Work(t.Context())
	require.NoError(t, err)
}
