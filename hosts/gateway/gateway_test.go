package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/identity"
	"github.com/svcflow/svcflow/hosts/license"
	"github.com/svcflow/svcflow/hosts/metrics"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type bundle struct {
	st    *store.Store   // the engine's
	gs    *gwstore.Store // the gateway's, over st's database
	gw    *httptest.Server
	rt    *httptest.Server
	logs  *bytes.Buffer
	clock *clock
	// orgSeen records the X-Org-Id of every request the runtime received (its values
	// joined with a comma: a request that carried two shows both), reached each request's
	// method and path, identitySeen its X-Svc-Identity.
	mu           sync.Mutex
	orgSeen      []string
	reached      []string
	identitySeen []string
}

// setup is a runtime behind a gateway, each a real HTTP server, over one SQLite store.
func setup(t *testing.T, o gateway.Options) *bundle {
	t.Helper()
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet()})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	b := &bundle{st: st, gs: gwstore.OpenTest(t, st), logs: &bytes.Buffer{}, clock: &clock{t: time.Now()}}
	rt := runtime.New(eng, runtime.Options{Logger: testlog.Quiet()}).Handler()
	b.rt = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.orgSeen = append(b.orgSeen, strings.Join(r.Header.Values("X-Org-Id"), ","))
		b.reached = append(b.reached, r.Method+" "+r.URL.Path)
		b.identitySeen = append(b.identitySeen, r.Header.Get(identity.Header))
		b.mu.Unlock()
		rt.ServeHTTP(w, r)
	}))
	t.Cleanup(b.rt.Close)
	u, err := url.Parse(b.rt.URL)
	require.NoError(t, err)
	o.Store, o.RuntimeURL, o.Now = b.gs, u, b.clock.now
	o.Logger = testlog.Tee(slog.NewTextHandler(b.logs, nil))
	b.gw = httptest.NewServer(checked(t, gateway.New(o).Handler()))
	t.Cleanup(b.gw.Close)
	return b
}

func (b *bundle) call(t *testing.T, method, path, token, body string, headers ...string) (int, map[string]any, http.Header) {
	t.Helper()
	req := b.request(t, method, path, token, body)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return b.send(t, req)
}

// request is a request to the gateway with token as its bearer credential and body as JSON.
func (b *bundle) request(t *testing.T, method, path, token, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, b.gw.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// send sends req and decodes a JSON answer.
func (b *bundle) send(t *testing.T, req *http.Request) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp.Header
}

// signup makes an account with an organization and a key of each kind.
func (b *bundle) signup(t *testing.T, email, org string) (mgmt, live, pk string) {
	t.Helper()
	code, acct, _ := b.call(t, "POST", "/gateway/signup", "", `{"email": "`+email+`", "name": "Platform"}`)
	require.Equal(t, http.StatusCreated, code, acct)
	mgmt = acct["management_token"].(string)
	require.True(t, strings.HasPrefix(mgmt, gateway.PrefixManagement))
	code, o, _ := b.call(t, "POST", "/gateway/orgs", mgmt, `{"id": "`+org+`", "name": "Customer"}`)
	require.Equal(t, http.StatusCreated, code, o)
	code, k, _ := b.call(t, "POST", "/gateway/orgs/"+org+"/keys", mgmt, `{"kind": "runtime"}`)
	require.Equal(t, http.StatusCreated, code, k)
	live = k["secret"].(string)
	code, k, _ = b.call(t, "POST", "/gateway/orgs/"+org+"/keys", mgmt, `{"kind": "publishable"}`)
	require.Equal(t, http.StatusCreated, code, k)
	pk = k["secret"].(string)
	return mgmt, live, pk
}

func TestGatewayProxiesWithTheKeysOrganization(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	_, liveB, _ := b.signup(t, "other@platform.example", "cust-b")

	// A workflow created through the gateway belongs to the key's organization, whatever
	// X-Org-Id the client sends.
	code, w, _ := b.call(t, "POST", "/workflows", live, `{"name": "w", "definition": {"actions": []}}`, "X-Org-Id: cust-b")
	require.Equal(t, http.StatusCreated, code, w)
	code, list, _ := b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, list["items"], 1)
	code, list, _ = b.call(t, "GET", "/workflows", liveB, "")
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, list["items"], "the other organization sees nothing")
	code, _, _ = b.call(t, "GET", "/workflows/"+w["id"].(string), liveB, "")
	require.Equal(t, http.StatusNotFound, code)
	b.mu.Lock()
	require.Equal(t, []string{"cust-a", "cust-a", "cust-b", "cust-b"}, b.orgSeen, "the client's X-Org-Id never reaches the runtime")
	b.mu.Unlock()

	// Credentials of the wrong kind, each with its code.
	for _, tc := range []struct {
		token, path string
		status      int
		code        string
	}{
		{"", "/workflows", 401, "unauthorized"},
		{"svc_live_0000000000000000", "/workflows", 401, "unknown_key"},
		{pk, "/workflows", 403, "publishable_key"},
		{mgmt, "/workflows", 403, "management_token_on_runtime_route"},
		{live, "/gateway/account", 403, "key_on_management_route"},
		{"svc_mgmt_0000", "/gateway/account", 401, "unknown_token"},
	} {
		code, p, _ := b.call(t, "GET", tc.path, tc.token, "")
		require.Equal(t, tc.status, code, "%s %v", tc.path, p)
		require.Equal(t, tc.code, p["code"], "%s", tc.path)
	}

	// Revoked at once; rotated with a grace, then without.
	code, keys, _ := b.call(t, "GET", "/gateway/orgs/cust-a/keys", mgmt, "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, keys["items"], 2)
	for _, k := range keys["items"].([]any) {
		require.NotContains(t, k, "secret", "a key is shown once")
	}
	liveID := ""
	for _, k := range keys["items"].([]any) {
		if k.(map[string]any)["kind"] == "runtime" {
			liveID = k.(map[string]any)["id"].(string)
		}
	}
	code, rotated, _ := b.call(t, "POST", "/gateway/orgs/cust-a/keys/"+liveID+"/rotate", mgmt, `{"grace_seconds": 60}`)
	require.Equal(t, http.StatusCreated, code, rotated)
	next := rotated["secret"].(string)
	code, _, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code, "the old key works during its grace")
	code, _, _ = b.call(t, "GET", "/workflows", next, "")
	require.Equal(t, http.StatusOK, code)
	b.clock.add(61 * time.Second)
	code, p, _ := b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "key_expired", p["code"])
	code, _, _ = b.call(t, "DELETE", "/gateway/orgs/cust-a/keys/"+rotated["id"].(string), mgmt, "")
	require.Equal(t, http.StatusNoContent, code)
	code, p, _ = b.call(t, "GET", "/workflows", next, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "key_revoked", p["code"])

	// An account sees and manages only its own organizations.
	code, orgs, _ := b.call(t, "GET", "/gateway/orgs", mgmt, "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, orgs["items"], 1)
	code, _, _ = b.call(t, "POST", "/gateway/orgs/cust-b/keys", mgmt, `{"kind": "runtime"}`)
	require.Equal(t, http.StatusNotFound, code, "another account's organization")
	code, _, _ = b.call(t, "POST", "/gateway/orgs", mgmt, `{"id": "cust-b", "name": "mine now"}`)
	require.Equal(t, http.StatusConflict, code, "an organization id is global")
	code, renamed, _ := b.call(t, "PUT", "/gateway/orgs/cust-a", mgmt, `{"name": "Customer A"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "Customer A", renamed["name"])

	// A regenerated management token replaces the old one at once.
	code, regen, _ := b.call(t, "POST", "/gateway/account/regenerate-token", mgmt, "")
	require.Equal(t, http.StatusOK, code)
	code, _, _ = b.call(t, "GET", "/gateway/account", mgmt, "")
	require.Equal(t, http.StatusUnauthorized, code)
	code, acct, _ := b.call(t, "GET", "/gateway/account", regen["management_token"].(string), "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ops@platform.example", acct["email"])

	// No key or token in the gateway's log.
	for _, secret := range []string{mgmt, live, pk, next, regen["management_token"].(string)} {
		require.NotContains(t, b.logs.String(), secret)
	}
	code, health, _ := b.call(t, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, code, health)
	require.Equal(t, "ok", health["runtime"])
}

func TestGatewayRateLimitsEachKey(t *testing.T) {
	t.Parallel()
	reg := metrics.New(nil, nil, gateway.Metrics()...)
	b := setup(t, gateway.Options{Rate: 1, Burst: 3, Meter: reg})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	_, other, _ := b.signup(t, "other@platform.example", "cust-b")
	for i := range 3 {
		code, _, _ := b.call(t, "GET", "/workflows", live, "")
		require.Equal(t, http.StatusOK, code, "request %d within the burst", i)
	}
	require.NotContains(t, scrapeText(t, reg), "svcflow_gateway_rate_limited_total 1")
	code, p, h := b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "rate_limited", p["code"])
	require.Equal(t, "1", h.Get("Retry-After"))
	require.Contains(t, scrapeText(t, reg), "\nsvcflow_gateway_rate_limited_total 1\n", "the 429 is counted")
	code, _, _ = b.call(t, "GET", "/workflows", other, "")
	require.Equal(t, http.StatusOK, code, "another key has its own bucket")
	b.clock.add(time.Second)
	code, _, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code, "refilled")
}

func TestSignupRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	code, p, _ := b.call(t, "POST", "/gateway/signup", "", `{"email": "not an email", "name": "x"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, "validation_failed", p["code"])
	b.signup(t, "ops@platform.example", "cust-a")
	code, p, _ = b.call(t, "POST", "/gateway/signup", "", `{"email": "ops@platform.example", "name": "again"}`)
	require.Equal(t, http.StatusConflict, code, p)
}

func TestGatewayCountsUsage(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{Rate: 1, Burst: 3})
	mgmt, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	code, w, _ := b.call(t, "POST", "/workflows", live, `{"name": "w", "definition": {"actions": []}}`)
	require.Equal(t, http.StatusCreated, code)
	code, _, _ = b.call(t, "POST", "/workflows/"+w["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusAccepted, code)
	code, _, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code)
	code, _, _ = b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusTooManyRequests, code)

	code, usage, _ := b.call(t, "GET", "/gateway/orgs/cust-a/usage", mgmt, "")
	require.Equal(t, http.StatusOK, code, usage)
	day := b.clock.now().UTC().Format(time.DateOnly)
	byClass := map[string]map[string]any{}
	for _, it := range usage["items"].([]any) {
		row := it.(map[string]any)
		require.Equal(t, day, row["day"])
		byClass[row["route_class"].(string)] = row
	}
	require.Equal(t, 2.0, byClass["workflows"]["requests"])
	require.Equal(t, 1.0, byClass["workflows"]["rate_limited"])
	require.Equal(t, 1.0, byClass["execute"]["requests"])
	require.Equal(t, 1.0, byClass["execute"]["runs_started"])

	mgmtB, _, _ := b.signup(t, "other@platform.example", "cust-b")
	code, _, _ = b.call(t, "GET", "/gateway/orgs/cust-a/usage", mgmtB, "")
	require.Equal(t, http.StatusNotFound, code, "another account's organization")
}

func TestLicensingRoutes(t *testing.T) {
	t.Parallel()
	key, err := license.NewKey()
	require.NoError(t, err)
	b := setup(t, gateway.Options{LicenseKey: key.Public().(ed25519.PublicKey)})
	now := b.clock.now()
	tok, err := license.Sign(license.License{ID: "lic_1", Licensee: "ACME", Seats: 5, NotBefore: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)}, key)
	require.NoError(t, err)
	code, pk, _ := b.call(t, "GET", "/licensing/public-key", "", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, license.EncodePublic(key.Public().(ed25519.PublicKey)), pk["public_key"])
	code, v, _ := b.call(t, "POST", "/licensing/validate", "", `{"license": "`+tok+`"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, v["valid"])
	require.Equal(t, "ACME", v["license"].(map[string]any)["licensee"])
	b.clock.add(2 * time.Hour)
	_, v, _ = b.call(t, "POST", "/licensing/validate", "", `{"license": "`+tok+`"}`)
	require.Equal(t, false, v["valid"])
	require.Equal(t, "expired", v["reason"])
	tampered := tok[:len(tok)-2] + map[bool]string{true: "A", false: "B"}[tok[len(tok)-2] != 'A'] + tok[len(tok)-1:]
	_, v, _ = b.call(t, "POST", "/licensing/validate", "", `{"license": "`+tampered+`"}`)
	require.Equal(t, false, v["valid"])
	require.Contains(t, []string{"bad_signature", "malformed"}, v["reason"])

	off := setup(t, gateway.Options{})
	code, p, _ := off.call(t, "GET", "/licensing/public-key", "", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, "licensing_not_configured", p["code"])
}

// TestLicensingAcrossAKeyRotation: a gateway given the new key and the one before it
// validates licenses of both, each by its kid, and licenses of format v1, issued before
// licenses were JWTs; public-key shows the new key.
func TestLicensingAcrossAKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey := ed25519.NewKeyFromSeed([]byte("svcflow license test key seed 32"))
	newKey, err := license.NewKey()
	require.NoError(t, err)
	b := setup(t, gateway.Options{LicenseKey: newKey.Public().(ed25519.PublicKey), LicensePreviousKeys: []ed25519.PublicKey{oldKey.Public().(ed25519.PublicKey)}})
	b.clock.add(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Sub(b.clock.now())) // within the v1 license below
	now := b.clock.now()
	l := license.License{ID: "lic_1", Licensee: "ACME", Seats: 5, NotBefore: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)}
	// Format v1 with oldKey: ACME Corp, 25 seats, 2026-11-24 to 2027-11-24.
	v1 := "svcl1.eyJpZCI6ImxpY18xIiwibGljZW5zZWUiOiJBQ01FIENvcnAiLCJzZWF0cyI6MjUsImZlYXR1cmVzIjpbImFnZW50X2Zvcm1zIl0sIm5vdF9iZWZvcmUiOiIyMDI2LTExLTI0VDEyOjAwOjAwWiIsImV4cGlyZXNfYXQiOiIyMDI3LTExLTI0VDEyOjAwOjAwWiJ9.cHWhrCuJJJ7sL8A2KShLIZn5SdGc2NuGaz_LOV1o7QMLTcp8AxGndgr8I9CbYwaKs3K1p9je6kyHWOaY7LowAA"
	for _, key := range []ed25519.PrivateKey{newKey, oldKey} {
		tok, err := license.Sign(l, key)
		require.NoError(t, err)
		code, v, _ := b.call(t, "POST", "/licensing/validate", "", `{"license": "`+tok+`"}`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, true, v["valid"], v)
	}
	code, v, _ := b.call(t, "POST", "/licensing/validate", "", `{"license": "`+v1+`"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, v["valid"], v)
	require.Equal(t, "ACME Corp", v["license"].(map[string]any)["licensee"])
	code, pk, _ := b.call(t, "GET", "/licensing/public-key", "", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, license.EncodePublic(newKey.Public().(ed25519.PublicKey)), pk["public_key"])

	// Without the old key, its licenses no longer verify.
	other := setup(t, gateway.Options{LicenseKey: newKey.Public().(ed25519.PublicKey)})
	other.clock.add(now.Sub(other.clock.now()))
	tok, err := license.Sign(l, oldKey)
	require.NoError(t, err)
	for _, tok := range []string{tok, v1} {
		_, v, _ = other.call(t, "POST", "/licensing/validate", "", `{"license": "`+tok+`"}`)
		require.Equal(t, false, v["valid"])
		require.Equal(t, "bad_signature", v["reason"])
	}
}

// TestSharedRateLimitHoldsAcrossGateways: two gateways on one PostgreSQL database share
// each key's bucket: together they let through no more than the bucket holds.
func TestSharedRateLimitHoldsAcrossGateways(t *testing.T) {
	t.Parallel()
	if os.Getenv(store.PostgresDSNEnv) == "" {
		t.Skip(store.PostgresDSNEnv + " is unset")
	}
	st := store.OpenTest(t, "postgres")
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	// The runtime is a stand-in answering 204 to everything: its answers are not the
	// contract, so these gateways are not checked against it.
	opts := gateway.Options{Store: gwstore.OpenTest(t, st), Runtime: noop, Rate: 0.01, Burst: 20, Shared: true}
	one, two := httptest.NewServer(gateway.New(opts).Handler()), httptest.NewServer(gateway.New(opts).Handler())
	t.Cleanup(one.Close)
	t.Cleanup(two.Close)
	b := &bundle{gw: one, clock: &clock{t: time.Now()}}
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	var mu sync.Mutex
	passed, limited := 0, 0
	var wg sync.WaitGroup
	for _, srv := range []*httptest.Server{one, two} {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					req, _ := http.NewRequest("GET", srv.URL+"/workflows", nil)
					req.Header.Set("Authorization", "Bearer "+live)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					_ = resp.Body.Close()
					mu.Lock()
					if resp.StatusCode == http.StatusNoContent {
						passed++
					} else if resp.StatusCode == http.StatusTooManyRequests {
						limited++
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	require.Equal(t, 80, passed+limited)
	require.LessOrEqual(t, passed, 20, "the two gateways together let through at most the burst")
	require.GreaterOrEqual(t, passed, 16, "less only by what a gateway leased and did not spend")
}

// scrapeText reads reg's /metrics as Prometheus would.
func scrapeText(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// TestGatewayProbes: /healthz and /readyz are the gateway's own, answered without a
// credential (a wrong one does not matter either) and never forwarded to the runtime; with a
// migration of the engine's or of the gateway's own missing /readyz answers 503
// migrations_pending, with its store gone 503 store_unavailable, and /healthz still 200.
func TestGatewayProbes(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	paths := gateway.New(gateway.Options{Store: b.gs}).API().OpenAPI().Paths
	require.Equal(t, "gateway-liveness", paths["/healthz"].Get.OperationID, "in the gateway's OpenAPI document")
	require.Equal(t, "gateway-readiness", paths["/readyz"].Get.OperationID)
	for _, token := range []string{"", "svc_live_not-a-key"} {
		code, body, _ := b.call(t, "GET", "/healthz", token, "")
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "ok", body["status"])
		code, body, _ = b.call(t, "GET", "/readyz", token, "")
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "ready", body["status"])
	}
	b.mu.Lock()
	require.Empty(t, b.orgSeen, "the probes never reach the runtime")
	b.mu.Unlock()

	// Either set of migrations missing (the engine's, the gateway's own) is migrations_pending.
	ctx := context.Background()
	for _, table := range []string{"bun_migrations", "gateway_migrations"} {
		_, err := b.st.Shared().Writer().ExecContext(ctx, "DELETE FROM "+table+" WHERE name = (SELECT max(name) FROM "+table+")")
		require.NoError(t, err)
		code, body, _ := b.call(t, "GET", "/readyz", "", "")
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Equal(t, "migrations_pending", body["code"], table)
		require.NoError(t, b.st.Migrate(ctx))
		require.NoError(t, b.gs.Migrate(ctx))
		code, body, _ = b.call(t, "GET", "/readyz", "", "")
		require.Equal(t, http.StatusOK, code, body)
	}

	require.NoError(t, b.st.Close())
	code, body, h := b.call(t, "GET", "/readyz", "", "")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Equal(t, "application/problem+json", h.Get("Content-Type"))
	require.Equal(t, "store_unavailable", body["code"])
	code, body, _ = b.call(t, "GET", "/healthz", "", "")
	require.Equal(t, http.StatusOK, code, body)
}

// TestGatewayServesDefinitionSchema: the workflow definition's JSON Schema is the gateway's
// own answer, to anyone (a wrong credential does not matter either), never forwarded, as
// application/schema+json with its ETag and caching, so an editor reads it at the address
// integrators call; the integrator's document says it takes no credential.
func TestGatewayServesDefinitionSchema(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	paths := gateway.New(gateway.Options{Store: b.gs}).API().OpenAPI().Paths
	require.Equal(t, "gateway-get-workflow-schema", paths["/schemas/workflow.json"].Get.OperationID)
	doc, err := gateway.IntegratorOpenAPI("test")
	require.NoError(t, err)
	require.NotNil(t, doc.Paths["/schemas/workflow.json"].Get.Security)
	require.Empty(t, doc.Paths["/schemas/workflow.json"].Get.Security, "the schema takes no credential")
	for _, token := range []string{"", "svc_live_not-a-key"} {
		code, body, h := b.call(t, "GET", "/schemas/workflow.json", token, "")
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "application/schema+json", h.Get("Content-Type"))
		require.Equal(t, "/schemas/workflow.json", body["$id"])
		require.Contains(t, h.Get("Cache-Control"), "max-age=")
		code, _, _ = b.call(t, "GET", "/schemas/workflow.json", token, "", "If-None-Match: "+h.Get("ETag"))
		require.Equal(t, http.StatusNotModified, code)
	}
	b.mu.Lock()
	require.Empty(t, b.orgSeen, "the schema never reaches the runtime")
	b.mu.Unlock()
}
