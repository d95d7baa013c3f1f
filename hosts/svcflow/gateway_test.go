package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
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
		return gatewayCall(t, base, method, path, auth, body)
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
		return gatewayCall(t, base, method, path, auth, body)
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

// gatewayCall sends a JSON request with a bearer credential and decodes the answer.
func gatewayCall(t *testing.T, base, method, path, auth, body string) (int, map[string]any) {
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

// smtpSink is a real SMTP server on loopback (no TLS: the binary takes plain SMTP when
// STARTTLS is not offered) that keeps each message's recipient and body.
type smtpSink struct {
	mu   sync.Mutex
	msgs map[string]string   // the last message to each recipient
	all  map[string][]string // every message to each recipient, in order
}

type sinkSession struct {
	sink *smtpSink
	to   string
}

func (s *sinkSession) Mail(string, *smtp.MailOptions) error      { return nil }
func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error { s.to = to; return nil }
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.sink.mu.Lock()
	s.sink.msgs[s.to] = string(b)
	s.sink.all[s.to] = append(s.sink.all[s.to], string(b))
	s.sink.mu.Unlock()
	return err
}
func (s *sinkSession) Reset()        {}
func (s *sinkSession) Logout() error { return nil }

func startSMTPSink(t *testing.T) (*smtpSink, string) {
	t.Helper()
	sink := &smtpSink{msgs: map[string]string{}, all: map[string][]string{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{sink: sink}, nil }))
	srv.Domain = "sink.test"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sink, ln.Addr().String()
}

// TestServeSignsInByMail: svcflow serve with --smtp-addr mails a sign-in code; the session
// it gives submits a public form that requires sign-in, through serve's own gateway (the
// runtime and the gateway share the key serve made for the process).
func TestServeSignsInByMail(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	sink, addr := startSMTPSink(t)
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db", "--runtime-addr", "127.0.0.1:0",
		"--smtp-addr", addr, "--smtp-from", "no-reply@svcflow.test")
	_, acct := gatewayCall(t, p.gateway, "POST", "/gateway/signup", "", `{"email": "ops@platform.example", "name": "P"}`)
	mgmt := acct["management_token"].(string)
	code, _ := gatewayCall(t, p.gateway, "POST", "/gateway/orgs", mgmt, `{"id": "cust-a", "name": "A"}`)
	require.Equal(t, http.StatusCreated, code)
	_, live := gatewayCall(t, p.gateway, "POST", "/gateway/orgs/cust-a/keys", mgmt, `{"kind": "runtime"}`)
	_, pk := gatewayCall(t, p.gateway, "POST", "/gateway/orgs/cust-a/keys", mgmt, `{"kind": "publishable"}`)

	// The publishable key is public: a stranger who asks gets "sent" and no mail, and a
	// paused run's form is not theirs to list or submit.
	code, started := gatewayCall(t, p.gateway, "POST", "/sdk/auth/start", pk["secret"].(string), `{"email": "mallory@attacker.example"}`)
	require.Equal(t, http.StatusAccepted, code, started)
	require.Equal(t, "sent", started["status"])
	code, started = gatewayCall(t, p.gateway, "PUT", "/gateway/orgs/cust-a/users/ann@example.com", mgmt, `{"approver_roles": ["finance"]}`)
	require.Equal(t, http.StatusOK, code, started)
	code, started = gatewayCall(t, p.gateway, "POST", "/sdk/auth/start", pk["secret"].(string), `{"email": "ann@example.com"}`)
	require.Equal(t, http.StatusAccepted, code, started)
	var msg string
	require.Eventually(t, func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		msg = sink.msgs["ann@example.com"]
		return msg != ""
	}, 5*time.Second, 10*time.Millisecond)
	m := regexp.MustCompile(`is (\d{6})`).FindStringSubmatch(msg)
	require.NotNil(t, m, msg)
	code, signed := gatewayCall(t, p.gateway, "POST", "/sdk/auth/verify", pk["secret"].(string), `{"email": "ann@example.com", "code": "`+m[1]+`"}`)
	require.Equal(t, http.StatusOK, code, signed)
	session := signed["session_token"].(string)

	code, f := gatewayCall(t, p.gateway, "POST", "/external-forms", live["secret"].(string), `{"name": "Contact", "is_public": true,
		"settings": {"requireAuth": true}, "schema": {"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "note", "type": "text", "label": "Note"}]}]}}`)
	require.Equal(t, http.StatusCreated, code, f)
	code, res := gatewayCall(t, p.gateway, "POST", "/forms/public/"+f["id"].(string)+"/submit", "", `{"note": "hi"}`)
	require.Equal(t, http.StatusUnauthorized, code, res)
	code, res = gatewayCall(t, p.gateway, "POST", "/forms/public/"+f["id"].(string)+"/submit", session, `{"note": "hi"}`)
	require.Equal(t, http.StatusCreated, code, res)
	_, subs := gatewayCall(t, p.gateway, "GET", "/external-forms/"+f["id"].(string)+"/submissions", live["secret"].(string), "")
	require.Equal(t, "ann@example.com", subs["items"].([]any)[0].(map[string]any)["submitted_by"])
	require.NotContains(t, p.logs.String(), m[1], "the code is never logged")
	require.NotContains(t, p.logs.String(), session)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	require.Empty(t, sink.all["mallory@attacker.example"], "no mail to whom the organization does not let sign in (asked before ann's, which came)")
}

// TestServeWithoutAMailServer: svcflow serve without --smtp-addr answers a sign-in with 503
// mail_not_configured naming the flags, not "sent"; with --dev-show-codes it logs the code,
// which signs the person in.
func TestServeWithoutAMailServer(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, showCodes := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"serve", "--db", "sqlite:" + dir + "/svcflow.db", "--runtime-addr", "127.0.0.1:0"}
		if showCodes {
			args = append(args, "--dev-show-codes")
		}
		p := startProcessEnv(t, bin, dir, envWithout(), args...)
		_, acct := gatewayCall(t, p.gateway, "POST", "/gateway/signup", "", `{"email": "ops@platform.example", "name": "P"}`)
		mgmt := acct["management_token"].(string)
		gatewayCall(t, p.gateway, "POST", "/gateway/orgs", mgmt, `{"id": "cust-a", "name": "A"}`)
		gatewayCall(t, p.gateway, "PUT", "/gateway/orgs/cust-a/users/ann@example.com", mgmt, `{"approver_roles": []}`)
		_, pk := gatewayCall(t, p.gateway, "POST", "/gateway/orgs/cust-a/keys", mgmt, `{"kind": "publishable"}`)
		code, res := gatewayCall(t, p.gateway, "POST", "/sdk/auth/start", pk["secret"].(string), `{"email": "ann@example.com"}`)
		if !showCodes {
			require.Equal(t, http.StatusServiceUnavailable, code, res)
			require.Equal(t, "mail_not_configured", res["code"])
			require.Contains(t, res["detail"], "--smtp-addr")
			require.Contains(t, res["detail"], "--dev-show-codes")
			continue
		}
		require.Equal(t, http.StatusAccepted, code, res)
		var m []string
		require.Eventually(t, func() bool {
			m = regexp.MustCompile(`code=(\d{6})`).FindStringSubmatch(p.logs.String())
			return m != nil
		}, 5*time.Second, 10*time.Millisecond)
		code, res = gatewayCall(t, p.gateway, "POST", "/sdk/auth/verify", pk["secret"].(string), `{"email": "ann@example.com", "code": "`+m[1]+`"}`)
		require.Equal(t, http.StatusOK, code, res)
	}
}
