package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/oauthtools/oauthtest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// envWithout is this process's environment without the master key variables, plus extra.
func envWithout(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envMasterKey+"=") && !strings.HasPrefix(kv, envMasterKeyFile+"=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// orgConfigClient speaks to one running runtime as org acme.
type orgConfigClient struct {
	t    *testing.T
	base string
}

func (c orgConfigClient) call(method, path, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("X-Org-Id", "acme")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, string(b)
}

// masked lists the org's config as key=masked value.
func (c orgConfigClient) masked() map[string]string {
	c.t.Helper()
	code, body := c.call("GET", "/org-config", "")
	require.Equal(c.t, 200, code, body)
	var l struct {
		Items []struct{ Key, Value string }
	}
	require.NoError(c.t, json.Unmarshal([]byte(body), &l))
	out := map[string]string{}
	for _, it := range l.Items {
		out[it.Key] = it.Value
	}
	return out
}

func requireNoSecretIn(t *testing.T, text string, secretsToHide ...string) {
	t.Helper()
	for _, s := range secretsToHide {
		require.NotContains(t, text, s)
	}
}

// TestRotateMasterKeyWhileServing starts the real service on a SQLite file without
// SVC_MASTER_KEY: it generates the key file beside the database (0600) and says so once.
// A value and an OAuth connection (a Slack token given directly) are stored, a
// slack_post_message step uses the connection (the tools' Slack API is a test double, named
// by SVC_OAUTH_API_URLS), `svcflow rotate-master-key` runs while the service keeps
// answering, and then: the key file holds only the new key, the running service still reads
// the value and seals new ones under the new key, the connection still lists and the step
// posts with the same token, the old key alone opens neither the value nor the token, and a
// restart reuses the file. No log and no answer shows a value, a token or a key.
func TestRotateMasterKeyWhileServing(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "svcflow.db")
	dsn := "sqlite:" + dbPath
	keyFile := dbPath + keyFileSuffix
	const (
		value      = "sk-live-rotate-me-8c2f19d4"
		slackToken = "xoxb-rotate-me-5e6f7a8b9c0d"
	)
	api := oauthtest.New(t)
	api.AddTokens("acme-slack-app", slackToken, "")
	env := envWithout(envOAuthAPIURLs + "=slack=" + api.APIs().Slack)

	p := startProcessEnv(t, bin, dir, env, "serve", "--db", dsn, "--runtime-addr", "127.0.0.1:0", "--workers", "1",
		"--allow-private-targets") // the test double listens on 127.0.0.1
	c := orgConfigClient{t: t, base: p.base}
	info, err := os.Stat(keyFile)
	require.NoError(t, err, "the key file is generated beside the database")
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	oldKeys, err := secrets.ReadKeyFile(keyFile)
	require.NoError(t, err)
	require.Len(t, oldKeys, 1)
	// The line comes before "runtime listening", which startProcess waited for.
	require.Equal(t, 1, strings.Count(p.logs.String(), "master key generated into key file"), p.logs.String())

	code, body := c.call("POST", "/org-config", `{"key": "api:llm_api_key", "value": "`+value+`"}`)
	require.Equal(t, 201, code, body)
	require.Contains(t, body, `"value":"••••••••19d4"`)
	code, body = c.call("POST", "/oauth/connections", `{"provider": "slack", "account": "acme-workspace", "access_token": "`+slackToken+`"}`)
	require.Equal(t, 201, code, body)
	var conn struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(body), &conn))
	code, body = c.call("POST", "/webhooks", `{"event": "workflow.completed", "url": "https://hooks.example.com/in", "secret": "whsec-rotated-4e4e"}`)
	require.Equal(t, 201, code, body)
	var hook struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(body), &hook))
	code, body = c.call("POST", "/workflows", `{"name": "post", "definition": {"actions": [
		{"type": "slack_post_message", "outputKey": "slack", "properties": {"channel": "C0123", "text": "hello"}}]}}`)
	require.Equal(t, 201, code, body)
	var wf struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(body), &wf))
	post := func() {
		t.Helper()
		code, body := c.call("POST", "/workflows/"+wf.ID+"/execute?wait=30s", `{"input": {}}`)
		require.Equal(t, 200, code, body)
		require.Contains(t, body, `"status":"completed"`)
		reqs := api.Requests()
		require.Equal(t, "/slack/api/chat.postMessage", reqs[len(reqs)-1].Path)
		require.Equal(t, slackToken, reqs[len(reqs)-1].Token, "the step posts with the connection's token")
	}
	post()

	// The service keeps answering during the rotation.
	var (
		polls, failures atomic.Int64
		wg              sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			req, _ := http.NewRequest("GET", p.base+"/org-config", nil)
			req.Header.Set("X-Org-Id", "acme")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				failures.Add(1)
			} else {
				b, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(b), "••••••••19d4") {
					failures.Add(1)
				}
			}
			if resp != nil {
				resp.Body.Close()
			}
			polls.Add(1)
		}
	}()
	rotate := exec.Command(bin, "rotate-master-key", "--db", dsn, "--grace", "300ms")
	rotate.Dir, rotate.Env = dir, env
	out, err := rotate.CombinedOutput()
	testlog.Line(string(out))
	close(stop)
	wg.Wait()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "master key rotated")
	require.Regexp(t, `re-sealed org config.* resealed=1 `, string(out))
	require.Regexp(t, `re-sealed oauth connections.* resealed=1 `, string(out))
	require.Regexp(t, `re-sealed webhook secrets.* resealed=1 `, string(out))
	require.Positive(t, polls.Load())
	require.Zero(t, failures.Load(), "every answer during the rotation was a 200 with the value masked")

	newKeys, err := secrets.ReadKeyFile(keyFile)
	require.NoError(t, err)
	require.Len(t, newKeys, 1, "the old key is gone from the file")
	require.NotEqual(t, oldKeys[0], newKeys[0])
	info, err = os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// The running service reads the value (masking needs the plaintext) and seals under the
	// new key.
	require.Equal(t, "••••••••19d4", c.masked()["api:llm_api_key"])
	code, body = c.call("POST", "/org-config", `{"key": "api:after", "value": "written-after-rotation-77"}`)
	require.Equal(t, 201, code, body)
	// The connection still lists, and its token still opens: the step posts with it.
	code, body = c.call("GET", "/oauth/connections", "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"id":"`+conn.ID+`"`)
	require.Contains(t, body, `"account":"acme-workspace"`)
	post()

	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer st.Close()
	for key, want := range map[string]string{"api:llm_api_key": value, "api:after": "written-after-rotation-77"} {
		r, err := st.GetOrgConfig(context.Background(), "acme", key)
		require.NoError(t, err)
		require.Equal(t, secrets.KeyID(newKeys[0]), r.KeyID, key)
		oldOnly, err := secrets.NewKeyring(oldKeys[0])
		require.NoError(t, err)
		_, err = oldOnly.Open("acme", key, r.Sealed)
		require.ErrorIs(t, err, secrets.ErrUnknownKey, "the old key alone no longer opens %s", key)
		newOnly, err := secrets.NewKeyring(newKeys[0])
		require.NoError(t, err)
		got, err := newOnly.Open("acme", key, r.Sealed)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	sealedConn, err := st.GetOAuthConnection(context.Background(), "acme", conn.ID)
	require.NoError(t, err)
	require.Equal(t, secrets.KeyID(newKeys[0]), sealedConn.MasterKeyID)
	oldOnly, err := secrets.NewKeyring(oldKeys[0])
	require.NoError(t, err)
	_, err = oldOnly.Open("acme", "oauth_connection:"+conn.ID, sealedConn.Sealed)
	require.ErrorIs(t, err, secrets.ErrUnknownKey, "the old key alone no longer opens the tokens")
	newOnly, err := secrets.NewKeyring(newKeys[0])
	require.NoError(t, err)
	tokens, err := newOnly.Open("acme", "oauth_connection:"+conn.ID, sealedConn.Sealed)
	require.NoError(t, err)
	require.Contains(t, string(tokens), slackToken)
	sealedHook, err := st.GetWebhook(context.Background(), "acme", hook.ID)
	require.NoError(t, err)
	require.Equal(t, secrets.KeyID(newKeys[0]), sealedHook.MasterKeyID)
	hookSecret, err := newOnly.Open("acme", "webhook:"+hook.ID, sealedHook.Sealed)
	require.NoError(t, err)
	require.Equal(t, "whsec-rotated-4e4e", string(hookSecret))

	require.NoError(t, p.stop(), p.logs.String())
	again := startProcessEnv(t, bin, dir, env, "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	require.Equal(t, "••••••••19d4", orgConfigClient{t: t, base: again.base}.masked()["api:llm_api_key"], "a restart reuses the key file")
	require.NoError(t, again.stop())
	require.Contains(t, again.logs.String(), "master key read from key file")

	// A lost key file over a database that holds values is refused, not replaced.
	require.NoError(t, os.Rename(keyFile, keyFile+".bak"))
	lost := exec.Command(bin, "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	lost.Dir, lost.Env = dir, env
	lostOut, err := lost.CombinedOutput()
	testlog.Line(string(lostOut))
	require.Error(t, err, "%s", lostOut)
	require.Contains(t, string(lostOut), "is missing")
	_, err = os.Stat(keyFile)
	require.ErrorIs(t, err, os.ErrNotExist, "no new key was generated")

	all := p.logs.String() + again.logs.String() + string(out) + string(lostOut)
	requireNoSecretIn(t, all, value, "written-after-rotation-77", slackToken, secrets.EncodeKey(oldKeys[0]), secrets.EncodeKey(newKeys[0]))
}

// TestMasterKeyFromEnvOnPostgres: without SVC_MASTER_KEY a PostgreSQL service runs with
// org config unavailable (503); with it, rotation is a rolling change of SVC_MASTER_KEY:
// processes restarted with "new,old" read everything, rotate-master-key re-seals under the
// first key, and then a process holding the new key alone reads every value while one that
// kept only the old key cannot.
func TestMasterKeyFromEnvOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := store.NewTestDSN(t, "postgres")
	bin := buildBinary(t)
	oldKey, err := secrets.GenerateKey()
	require.NoError(t, err)
	newKey, err := secrets.GenerateKey()
	require.NoError(t, err)
	oldB64, newB64 := secrets.EncodeKey(oldKey), secrets.EncodeKey(newKey)
	const value = "pg-secret-value-4e5f6a7b"
	testlog.Secret(oldB64)
	testlog.Secret(newB64)
	testlog.Secret(value)

	none := startProcessEnv(t, bin, "", envWithout(), "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	code, body := orgConfigClient{t: t, base: none.base}.call("POST", "/org-config", `{"key": "api:k", "value": "`+value+`"}`)
	require.Equal(t, 503, code, body)
	require.Contains(t, body, "master_key_missing")
	require.Contains(t, none.logs.String(), "no master key: org config is unavailable")
	require.NoError(t, none.stop())

	oldOnly := startProcessEnv(t, bin, "", envWithout(envMasterKey+"="+oldB64), "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	a := orgConfigClient{t: t, base: oldOnly.base}
	code, body = a.call("POST", "/org-config", `{"key": "api:k", "value": "`+value+`"}`)
	require.Equal(t, 201, code, body)

	both := startProcessEnv(t, bin, "", envWithout(envMasterKey+"="+newB64+","+oldB64), "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	require.Equal(t, "••••••••6a7b", orgConfigClient{t: t, base: both.base}.masked()["api:k"])

	rotate := exec.Command(bin, "rotate-master-key", "--db", dsn, "--grace", "200ms")
	rotate.Env = envWithout(envMasterKey + "=" + newB64 + "," + oldB64)
	out, err := rotate.CombinedOutput()
	testlog.Line(string(out))
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "resealed=1")

	newOnly := startProcessEnv(t, bin, "", envWithout(envMasterKey+"="+newB64), "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0")
	require.Equal(t, "••••••••6a7b", orgConfigClient{t: t, base: newOnly.base}.masked()["api:k"])
	require.Equal(t, secrets.Masked, a.masked()["api:k"], "the old key alone no longer opens the value")
	require.Eventually(t, func() bool { return strings.Contains(oldOnly.logs.String(), "org config value does not open") },
		5*time.Second, 10*time.Millisecond, "the log is read from the process as it writes it")

	for _, p := range []*process{oldOnly, both, newOnly} {
		require.NoError(t, p.stop())
		requireNoSecretIn(t, p.logs.String(), value, oldB64, newB64)
	}
	requireNoSecretIn(t, string(out), value, oldB64, newB64)
}

// A database that holds OAuth connections (and no org config) with its key file gone is
// refused: a new key would leave every token sealed under one nobody has.
func TestMissingKeyFileWithOAuthConnections(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	ctx := context.Background()
	require.NoError(t, st.InsertOAuthConnection(ctx, &svctype.OAuthConnection{
		ID: "conn_1", OrgID: "acme", Provider: "slack", Account: "ws", Sealed: []byte{1}, MasterKeyID: "k1", Source: "tokens"}))
	path := filepath.Join(t.TempDir(), "svcflow.db.masterkey")
	_, err := keyFileKeyring(ctx, path, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "holds oauth connections sealed under a master key")
	require.NoFileExists(t, path, "no new key was generated")
}

func TestKeySourceFor(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name string
		dsn  string
		env  map[string]string
		want keySource
		bad  bool
	}{
		{"sqlite file", "sqlite:./data/app.db", nil, keySource{file: "./data/app.db.masterkey"}, false},
		{"sqlite memory", "sqlite::memory:", nil, keySource{memory: true}, false},
		{"postgres", "postgres://u@h/db", nil, keySource{}, false},
		{"env wins", "sqlite:./a.db", map[string]string{envMasterKey: "k"}, keySource{env: "k"}, false},
		{"key file", "postgres://u@h/db", map[string]string{envMasterKeyFile: "/run/secrets/svc"}, keySource{file: "/run/secrets/svc"}, false},
		{"both", "sqlite:./a.db", map[string]string{envMasterKey: "k", envMasterKeyFile: "f"}, keySource{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := keySourceFor(tt.dsn, env(tt.env))
			if tt.bad {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
