package runtime_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// secretBundle is a runtime whose engine and server log into one buffer, and which keeps
// every answer it gave: when the test ends, no plaintext value it was sent may appear in
// any answer (success or problem) or in the log.
type secretBundle struct {
	*bundle
	mu      sync.Mutex
	answers []string
	values  []string
}

func setupSecrets(t *testing.T, withKey bool) *secretBundle {
	t.Helper()
	st := store.OpenTest(t, "sqlite")
	logs := &lockedLog{}
	log := testlog.Tee(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := engine.Config{Store: st, Logger: log}
	if withKey {
		cfg.Keyring = testKeyring(t)
	}
	eng, err := engine.New(cfg)
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	srv := runtime.New(eng, runtime.Options{Logger: log, Version: "test"})
	sb := &secretBundle{bundle: &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API()}}
	t.Cleanup(func() {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		text := strings.Join(sb.answers, "\n") + "\n" + logs.String()
		for _, v := range sb.values {
			require.NotContains(t, text, v, "a plaintext value appears in an answer or in the log")
		}
	})
	return sb
}

// send is do, recording the answer and treating each value of a body as a secret.
func (sb *secretBundle) send(t *testing.T, method, path, org string, body any) *httptest.ResponseRecorder {
	t.Helper()
	if m, ok := body.(map[string]any); ok {
		if v, ok := m["value"].(string); ok && len(v) >= 4 {
			sb.secret(v)
		}
	}
	rec := sb.do(t, method, path, org, body)
	sb.mu.Lock()
	sb.answers = append(sb.answers, rec.Body.String())
	for k, vs := range rec.Header() {
		sb.answers = append(sb.answers, k+": "+strings.Join(vs, ","))
	}
	sb.mu.Unlock()
	return rec
}

func (sb *secretBundle) secret(v string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.values = append(sb.values, v)
}

type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type orgConfigDoc struct {
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	UpdatedAt time.Time `json:"updated_at"`
}

func setBody(key, value string) map[string]any { return map[string]any{"key": key, "value": value} }

func TestOrgConfigRoutes(t *testing.T) {
	t.Parallel()
	b := setupSecrets(t, true)
	const llm = "sk-proj-Zq81m4xY0c2Lw9aB"

	created := ok[orgConfigDoc](t, b.send(t, http.MethodPost, "/org-config", orgA, setBody("api:llm_api_key", llm)), http.StatusCreated)
	require.Equal(t, orgConfigDoc{Key: "api:llm_api_key", Value: "••••••••w9aB", UpdatedAt: created.UpdatedAt}, created)
	require.WithinDuration(t, time.Now(), created.UpdatedAt, time.Minute)

	updated := ok[orgConfigDoc](t, b.send(t, http.MethodPost, "/org-config", orgA, setBody("api:llm_api_key", llm+"-rotated")), http.StatusOK)
	require.Equal(t, "••••••••ated", updated.Value)
	require.False(t, updated.UpdatedAt.Before(created.UpdatedAt))

	for _, kv := range [][2]string{{"db:warehouse", "postgres://u:pw-9911@db/wh"}, {"webhook_url", "https://hooks.example.com/in/77aa"}, {"pin", "9876"}, {"db/main", "sqlite:/var/lib/main.db"}} {
		ok[orgConfigDoc](t, b.send(t, http.MethodPost, "/org-config", orgA, setBody(kv[0], kv[1])), http.StatusCreated)
	}
	ok[orgConfigDoc](t, b.send(t, http.MethodPost, "/org-config", orgB, setBody("api:llm_api_key", "b-own-key-0000000000")), http.StatusCreated)

	// Every key, values masked, paged like every list.
	var got []string
	path := "/org-config?limit=2"
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		l := ok[list[orgConfigDoc]](t, b.send(t, http.MethodGet, path, orgA, nil), http.StatusOK)
		require.LessOrEqual(t, len(l.Items), 2)
		for _, it := range l.Items {
			got = append(got, it.Key+"="+it.Value)
		}
		if l.NextCursor == "" {
			break
		}
		path = "/org-config?limit=2&cursor=" + url.QueryEscape(l.NextCursor)
	}
	require.Equal(t, []string{
		"api:llm_api_key=••••••••ated", "db/main=••••••••n.db", "db:warehouse=••••••••b/wh", "pin=••••••••", "webhook_url=••••••••77aa",
	}, got)

	// The plaintext is there for execution.
	v, err := b.eng.OrgConfigValue(t.Context(), orgA, "api:llm_api_key")
	require.NoError(t, err)
	require.Equal(t, llm+"-rotated", v)

	// Deleting: the key as it is, escaped, or holding a /; another org's key is 404.
	tests := []struct {
		name, path, org string
		want            int
	}{
		{"another org's key", "/org-config/db:warehouse", orgB, http.StatusNotFound},
		{"as it is", "/org-config/api:llm_api_key", orgA, http.StatusNoContent},
		{"again", "/org-config/api:llm_api_key", orgA, http.StatusNotFound},
		{"colon escaped", "/org-config/db%3Awarehouse", orgA, http.StatusNoContent},
		{"slash escaped", "/org-config/db%2Fmain", orgA, http.StatusNoContent},
		{"slash unescaped is another route", "/org-config/db/main", orgA, http.StatusNotFound},
		{"never set", "/org-config/api:nope", orgA, http.StatusNotFound},
		{"not a key at all", "/org-config/a%20b", orgA, http.StatusNotFound},
	}
	for _, tt := range tests {
		rec := b.send(t, http.MethodDelete, tt.path, tt.org, nil)
		if tt.want == http.StatusNoContent {
			require.Equal(t, tt.want, rec.Code, "%s: %s", tt.name, rec.Body.String())
			require.Empty(t, rec.Body.String())
			continue
		}
		p := problem(t, rec, tt.want, "not_found")
		require.NotContains(t, p.Detail, "warehouse", tt.name)
	}
	l := ok[list[orgConfigDoc]](t, b.send(t, http.MethodGet, "/org-config", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 2)
	_, err = b.eng.OrgConfigValue(t.Context(), orgB, "api:llm_api_key")
	require.NoError(t, err, "org B's key outlives org A's deletes")
	_, err = b.eng.OrgConfigValue(t.Context(), orgA, "db:warehouse")
	require.ErrorIs(t, err, engine.ErrNoOrgConfigKey)
}

// TestOrgConfigProblemsNeverQuoteAValue: every refused request answers a problem that
// locates what is wrong without echoing the value, whichever layer refuses it (Huma's
// schema, the engine, the body limit).
func TestOrgConfigProblemsNeverQuoteAValue(t *testing.T) {
	t.Parallel()
	b := setupSecrets(t, true)
	const secret = "sk-never-echo-5a5a5a5a"
	b.secret(secret)
	b.secret("123456789")
	tests := []struct {
		name   string
		body   any
		status int
		code   string
		loc    string
	}{
		{"empty key", setBody("", secret), 422, "validation_failed", "body.key"},
		{"key with a space", setBody("api:my key", secret), 422, "validation_failed", "body.key"},
		{"key too long", setBody(strings.Repeat("k", 201), secret), 422, "validation_failed", "body.key"},
		{"empty value", setBody("api:k", ""), 422, "validation_failed", "body.value"},
		{"value over 64 KiB", setBody("api:k", secret+strings.Repeat("x", 64<<10)), 422, "validation_failed", "body.value"},
		{"value not a string", map[string]any{"key": "api:k", "value": 123456789}, 422, "validation_failed", "body.value"},
		{"value an object", map[string]any{"key": "api:k", "value": map[string]string{"token": secret}}, 422, "validation_failed", "body.value"},
		{"no value", map[string]any{"key": "api:k"}, 422, "validation_failed", "body.value"},
		{"unknown member", map[string]any{"key": "api:k", "value": secret, "note": secret}, 422, "validation_failed", ""},
		{"not JSON", `{"key": "api:k", "value": "` + secret + `"`, 400, "malformed_json", ""},
		{"over the body limit", `{"key": "api:k", "value": "` + secret + strings.Repeat("y", 11<<20) + `"}`, 413, "body_too_large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := problem(t, b.send(t, http.MethodPost, "/org-config", orgA, tt.body), tt.status, tt.code)
			if tt.loc != "" {
				var locs []string
				for _, d := range p.Errors {
					locs = append(locs, d.Location)
					require.Nil(t, d.Value, "no offending value is echoed")
				}
				require.Contains(t, locs, tt.loc)
			}
		})
	}
	l := ok[list[orgConfigDoc]](t, b.send(t, http.MethodGet, "/org-config", orgA, nil), http.StatusOK)
	require.Empty(t, l.Items, "nothing refused was stored")
}

// TestOrgConfigFailuresLogNoValue: a store failure behind POST /org-config is a 500 whose
// logged cause names no value.
func TestOrgConfigFailuresLogNoValue(t *testing.T) {
	t.Parallel()
	b := setupSecrets(t, true)
	require.NoError(t, b.st.Close())
	problem(t, b.send(t, http.MethodPost, "/org-config", orgA, setBody("api:k", "sk-during-outage-31337")), http.StatusInternalServerError, "internal")
	problem(t, b.send(t, http.MethodGet, "/org-config", orgA, nil), http.StatusInternalServerError, "internal")
}

func TestOrgConfigWithoutMasterKey(t *testing.T) {
	t.Parallel()
	b := setupSecrets(t, false)
	p := problem(t, b.send(t, http.MethodPost, "/org-config", orgA, setBody("api:k", "sk-no-master-key-0101")), http.StatusServiceUnavailable, "master_key_missing")
	require.Contains(t, p.Detail, "SVC_MASTER_KEY")
	problem(t, b.send(t, http.MethodGet, "/org-config", orgA, nil), http.StatusServiceUnavailable, "master_key_missing")
	problem(t, b.send(t, http.MethodDelete, "/org-config/api:k", orgA, nil), http.StatusNotFound, "not_found")
}
