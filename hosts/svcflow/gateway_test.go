package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/svcflow/svcflow/engine/store"
)

// TestServeRunsTheGateway: svcflow serve answers on its gateway address too, which
// forwards runtime routes called with a runtime key to its own runtime, as the key's
// organization.
func TestServeRunsTheGateway(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db", "--runtime-addr", "127.0.0.1:0")
	call := func(base, method, path, auth, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	code, acct := call(p.gateway, "POST", "/gateway/signup", "", `{"email": "ops@platform.example", "name": "P"}`)
	require.Equal(t, http.StatusCreated, code, acct)
	mgmt := acct["management_token"].(string)
	code, _ = call(p.gateway, "POST", "/gateway/orgs", mgmt, `{"id": "cust-a", "name": "A"}`)
	require.Equal(t, http.StatusCreated, code)
	code, key := call(p.gateway, "POST", "/gateway/orgs/cust-a/keys", mgmt, `{"kind": "runtime"}`)
	require.Equal(t, http.StatusCreated, code)
	code, w := call(p.gateway, "POST", "/workflows", key["secret"].(string), `{"name": "via-gateway", "definition": {"actions": []}}`)
	require.Equal(t, http.StatusCreated, code, w)

	// The runtime itself holds it under the key's organization.
	req, err := http.NewRequest("GET", p.base+"/workflows/"+w["id"].(string), nil)
	require.NoError(t, err)
	req.Header.Set("X-Org-Id", "cust-a")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	code, health := call(p.gateway, "GET", "/health", "", "")
	require.Equal(t, http.StatusOK, code, health)
	require.NotContains(t, p.logs.String(), key["secret"].(string))
	require.NotContains(t, p.logs.String(), mgmt)
}

// TestRateLimitAcrossGatewayProcesses: on PostgreSQL, a key's rate limit holds across two
// gateway processes (the one of svcflow serve and a svcflow gateway beside it).
func TestRateLimitAcrossGatewayProcesses(t *testing.T) {
	t.Parallel()
	if os.Getenv(store.PostgresDSNEnv) == "" {
		t.Skip(store.PostgresDSNEnv + " is unset")
	}
	bin := buildBinary(t)
	dsn := store.NewTestDSN(t, "postgres")
	env := envWithout("SVC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	serve := startProcessEnv(t, bin, t.TempDir(), env, "serve", "--db", dsn, "--runtime-addr", "127.0.0.1:0", "--rate", "0.01", "--burst", "20")
	second := startProcessEnv(t, bin, t.TempDir(), env, "gateway", "--db", dsn, "--gateway-addr", "127.0.0.1:0",
		"--runtime-url", serve.base, "--rate", "0.01", "--burst", "20")
	call := func(base, method, path, auth, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	_, acct := call(serve.gateway, "POST", "/gateway/signup", "", `{"email": "ops@platform.example", "name": "P"}`)
	mgmt := acct["management_token"].(string)
	code, _ := call(serve.gateway, "POST", "/gateway/orgs", mgmt, `{"id": "cust-a", "name": "A"}`)
	require.Equal(t, http.StatusCreated, code)
	_, key := call(second.gateway, "POST", "/gateway/orgs/cust-a/keys", mgmt, `{"kind": "runtime"}`)
	live := key["secret"].(string)
	passed := 0
	for i := range 60 {
		base := serve.gateway
		if i%2 == 1 {
			base = second.gateway
		}
		if code, _ := call(base, "GET", "/workflows", live, ""); code == http.StatusOK {
			passed++
		} else {
			require.Equal(t, http.StatusTooManyRequests, code)
		}
	}
	require.LessOrEqual(t, passed, 20, "two gateway processes together let through at most the burst")
	require.GreaterOrEqual(t, passed, 16)
}
