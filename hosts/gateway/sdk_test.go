package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// mailbox is a real SMTP server (emersion/go-smtp) on loopback offering STARTTLS and AUTH
// PLAIN; it keeps what it is sent.
type mailbox struct {
	mu   sync.Mutex
	msgs []mailMsg
	addr string
	pool *x509.CertPool
}

type mailMsg struct {
	From, To string
	Data     string
	TLS      bool
	User     string
}

type mailSession struct {
	box  *mailbox
	conn *smtp.Conn
	cur  mailMsg
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "mailer" || pass != "mail-pass" {
			return errors.New("bad credentials")
		}
		s.cur.User = user
		return nil
	}), nil
}
func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error { s.cur.From = from; return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error   { s.cur.To = to; return nil }
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, s.cur.TLS = s.conn.TLSConnectionState()
	s.cur.Data = string(b)
	s.box.mu.Lock()
	s.box.msgs = append(s.box.msgs, s.cur)
	s.box.mu.Unlock()
	return nil
}
func (s *mailSession) Reset()        { s.cur = mailMsg{User: s.cur.User} }
func (s *mailSession) Logout() error { return nil }

func newMailbox(t *testing.T) *mailbox {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mail.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	box := &mailbox{pool: x509.NewCertPool()}
	box.pool.AddCert(cert)
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &mailSession{box: box, conn: c}, nil }))
	srv.Domain = "mail.test"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	box.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return box
}

var codeRe = regexp.MustCompile(`code for [^ ]+ is (\d{6})`)

// lastCode waits for the newest message to `to` and returns the code in it.
func (m *mailbox) lastCode(t *testing.T, to string) (string, mailMsg) {
	t.Helper()
	var got mailMsg
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := len(m.msgs) - 1; i >= 0; i-- {
			if m.msgs[i].To == to {
				got = m.msgs[i]
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	match := codeRe.FindStringSubmatch(strings.ReplaceAll(got.Data, "=\r\n", ""))
	require.NotNil(t, match, got.Data)
	return match[1], got
}

func (m *mailbox) count() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.msgs) }

// countTo is how many messages reached to.
func (m *mailbox) countTo(to string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, msg := range m.msgs {
		if msg.To == to {
			n++
		}
	}
	return n
}

var idKey = []byte("the-identity-key-of-these-tests-0123456789")

// sdkBundle is a runtime and a gateway sharing an identity key, a worker's engine, and a
// real SMTP server the gateway mails codes through.
type sdkBundle struct {
	*bundle
	eng  *engine.Engine
	mail *mailbox
	srv  *gateway.Server
}

func setupSDK(t *testing.T, o gateway.Options, engineOpts ...func(*engine.Config)) *sdkBundle {
	t.Helper()
	st := store.OpenTest(t, "sqlite")
	cfg := engine.Config{Store: st, Logger: testlog.Quiet()}
	for _, f := range engineOpts {
		f(&cfg)
	}
	eng, err := engine.New(cfg)
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	b := &sdkBundle{bundle: &bundle{logs: &bytes.Buffer{}, clock: &clock{t: time.Now()}}, eng: eng, mail: newMailbox(t)}
	b.rt = httptest.NewServer(runtime.New(eng, runtime.Options{Logger: testlog.Quiet(), IdentityKey: idKey}).Handler())
	t.Cleanup(b.rt.Close)
	u, err := url.Parse(b.rt.URL)
	require.NoError(t, err)
	mailer, err := gateway.NewSMTPMailer(gateway.SMTPOptions{Addr: b.mail.addr, From: "svcflow <no-reply@svcflow.test>",
		User: "mailer", Password: "mail-pass", TLS: &tls.Config{RootCAs: b.mail.pool, ServerName: "127.0.0.1"}})
	require.NoError(t, err)
	o.Store, o.RuntimeURL, o.Now, o.IdentityKey = gwstore.OpenTest(t, st), u, b.clock.now, idKey
	if o.Mailer == nil {
		o.Mailer = mailer
	}
	o.Logger = testlog.Tee(slog.NewTextHandler(&lockedWriter{w: b.logs}, nil))
	b.srv = gateway.New(o)
	b.gw = httptest.NewServer(checked(t, b.srv.Handler()))
	t.Cleanup(b.gw.Close)
	return b
}

// code is the code of the newest message to `to`, once every code asked for was mailed.
func (b *sdkBundle) code(t *testing.T, to string) (string, mailMsg) {
	t.Helper()
	b.srv.WaitMails()
	return b.mail.lastCode(t, to)
}

// addPerson adds email to org's people with roles (the management token mgmt).
func (b *sdkBundle) addPerson(t *testing.T, mgmt, org, email string, roles ...string) {
	t.Helper()
	rb, err := json.Marshal(map[string]any{"approver_roles": append([]string{}, roles...)})
	require.NoError(t, err)
	code, p, _ := b.call(t, "PUT", "/gateway/orgs/"+org+"/users/"+email, mgmt, string(rb))
	require.Equal(t, http.StatusOK, code, p)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// signIn signs email in to pk's organization with the code the mail brought.
func (b *sdkBundle) signIn(t *testing.T, pk, email string) string {
	t.Helper()
	code, p, _ := b.call(t, "POST", "/sdk/auth/start", pk, `{"email": "`+email+`"}`)
	require.Equal(t, http.StatusAccepted, code, p)
	c, _ := b.code(t, email)
	code, p, _ = b.call(t, "POST", "/sdk/auth/verify", pk, `{"email": "`+email+`", "code": "`+c+`"}`)
	require.Equal(t, http.StatusOK, code, p)
	return p["session_token"].(string)
}

func TestSignInWithACodeByMail(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	code, p, _ := b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", mgmt, `{"domains": ["example.com"]}`)
	require.Equal(t, http.StatusOK, code, p)

	code, p, _ = b.call(t, "POST", "/sdk/auth/start", pk, `{"email": "Ann@Example.com"}`)
	require.Equal(t, http.StatusAccepted, code, p)
	require.Equal(t, "sent", p["status"])
	require.EqualValues(t, 600, p["expires_in_seconds"])
	c, msg := b.code(t, "ann@example.com")
	require.True(t, msg.TLS, "STARTTLS was taken")
	require.Equal(t, "mailer", msg.User, "SMTP AUTH over TLS")
	require.Equal(t, "no-reply@svcflow.test", msg.From)
	require.Regexp(t, `^\d{6}$`, c)

	verify := func(email, c string) (int, map[string]any) {
		code, p, _ := b.call(t, "POST", "/sdk/auth/verify", pk, `{"email": "`+email+`", "code": "`+c+`"}`)
		return code, p
	}
	wrong := "000000"
	if c == wrong {
		wrong = "111111"
	}
	code, p = verify("ann@example.com", wrong)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "code_invalid", p["code"])
	code, p = verify("bob@example.com", c)
	require.Equal(t, http.StatusUnauthorized, code, "a code is for its email only")
	code, p = verify("ann@example.com", c)
	require.Equal(t, http.StatusOK, code, p)
	session := p["session_token"].(string)
	require.True(t, strings.HasPrefix(session, gateway.PrefixSession))
	require.Equal(t, "ann@example.com", p["email"])
	require.Equal(t, map[string]any{"approver_roles": []any{}, "member": true}, p["permissions"], "of a listed domain")
	exp, err := time.Parse(time.RFC3339, p["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, b.clock.now().Add(gateway.DefaultSessionTTL), exp, 2*time.Second)
	code, p = verify("ann@example.com", c)
	require.Equal(t, http.StatusUnauthorized, code, "single use")

	code, p, _ = b.call(t, "GET", "/sdk/session", session, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "ann@example.com", p["email"])
	require.Equal(t, "cust-a", p["org_id"])
	require.Equal(t, false, p["anonymous"])
	code, p, _ = b.call(t, "GET", "/sdk/session", pk, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, p["anonymous"])

	// Five tries, then even the right code is refused.
	b.call(t, "POST", "/sdk/auth/start", pk, `{"email": "cara@example.com"}`)
	c, _ = b.code(t, "cara@example.com")
	for range gateway.CodeAttempts {
		code, _ := verify("cara@example.com", wrong)
		require.Equal(t, http.StatusUnauthorized, code)
	}
	code, _ = verify("cara@example.com", c)
	require.Equal(t, http.StatusUnauthorized, code, "out of tries")

	// Ten minutes, then the code is spent.
	b.call(t, "POST", "/sdk/auth/start", pk, `{"email": "dan@example.com"}`)
	c, _ = b.code(t, "dan@example.com")
	b.clock.add(gateway.CodeTTL + time.Second)
	code, _ = verify("dan@example.com", c)
	require.Equal(t, http.StatusUnauthorized, code, "expired")

	// A person may ask for only so many codes.
	for i := range 6 {
		code, _, h := b.call(t, "POST", "/sdk/auth/start", pk, `{"email": "eve@example.com"}`)
		if i < 5 {
			require.Equal(t, http.StatusAccepted, code)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, code)
		require.NotEmpty(t, h.Get("Retry-After"))
	}

	// Credentials of the wrong kind, each its own answer; a bad email changes nothing.
	b.srv.WaitMails()
	sent := b.mail.count()
	for _, tc := range []struct {
		cred   string
		status int
		code   string
	}{
		{"", http.StatusUnauthorized, "unauthorized"},
		{live, http.StatusForbidden, "runtime_key_on_sdk_route"},
		{mgmt, http.StatusForbidden, "management_token_on_sdk_route"},
		{"svc_pk_" + strings.Repeat("0", 48), http.StatusUnauthorized, "unknown_key"},
		{gateway.PrefixSession + strings.Repeat("0", 48), http.StatusUnauthorized, "unknown_session"},
	} {
		code, p, _ := b.call(t, "POST", "/sdk/auth/start", tc.cred, `{"email": "fay@example.com"}`)
		require.Equal(t, tc.status, code, tc.code)
		require.Equal(t, tc.code, p["code"])
	}
	code, p, _ = b.call(t, "POST", "/sdk/auth/start", pk, `{"email": "not an email"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Equal(t, "validation failed: email: not an email address", p["detail"])
	// An empty email: the answer says which field and why, not a bare "validation failed".
	for _, body := range []string{`{"email": ""}`, `{"email": "  "}`} {
		code, p, _ = b.call(t, "POST", "/sdk/auth/start", pk, body)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Equal(t, "validation_failed", p["code"])
		require.Equal(t, "validation failed: email: required, the address the sign-in code is sent to", p["detail"], body)
		e := p["errors"].([]any)[0].(map[string]any)
		require.Equal(t, "/email", e["pointer"])
		require.Equal(t, "required, the address the sign-in code is sent to", e["message"])
	}
	b.srv.WaitMails()
	require.Equal(t, sent, b.mail.count(), "nothing was sent")

	// Signing out ends the session; revoking the publishable key ends the others.
	code, _, _ = b.call(t, "POST", "/sdk/auth/signout", session, "")
	require.Equal(t, http.StatusNoContent, code)
	code, p, _ = b.call(t, "GET", "/sdk/session", session, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "unknown_session", p["code"])
	other := b.signIn(t, pk, "gus@example.com")
	code, keys, _ := b.call(t, "GET", "/gateway/orgs/cust-a/keys", mgmt, "")
	require.Equal(t, http.StatusOK, code)
	for _, k := range keys["items"].([]any) {
		if k.(map[string]any)["kind"] == "publishable" {
			code, _, _ = b.call(t, "DELETE", "/gateway/orgs/cust-a/keys/"+k.(map[string]any)["id"].(string), mgmt, "")
			require.Equal(t, http.StatusNoContent, code)
		}
	}
	code, p, _ = b.call(t, "GET", "/sdk/session", other, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "key_revoked", p["code"])

	logs := b.logs.String()
	for _, secret := range []string{c, session, other, pk, live, mgmt} {
		require.NotContains(t, logs, secret, "no code, session or key in a log line")
	}
}

// TestSDKTasksFollowApproverRoles: a signed-in person sees and decides the approvals of
// their roles and submits form pauses as themself; an anonymous session reads but cannot
// act; another organization's task is not found.
func TestSDKTasksFollowApproverRoles(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	mgmtB, liveB, pkB := b.signup(t, "other@platform.example", "cust-b")

	start := func(key, name, def string) string {
		t.Helper()
		code, wf, _ := b.call(t, "POST", "/workflows", key, `{"name": "`+name+`", "definition": `+def+`}`)
		require.Equal(t, http.StatusCreated, code, wf)
		code, run, _ := b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", key, `{"input": {}}`)
		require.Equal(t, http.StatusAccepted, code, run)
		return run["id"].(string)
	}
	approvalRun := start(live, "sign-off", `{"actions":[{"type":"PbotApproval","properties":{"approver_role":"finance","comment":"Pay it?"}}]}`)
	legalRun := start(live, "legal-sign-off", `{"actions":[{"type":"PbotApproval","properties":{"approver_role":"legal"}}]}`)
	formRun := start(live, "questions", `{"actions":[{"type":"PbotForm","properties":{"expected_keys":["answer"]}}]}`)
	otherRun := start(liveB, "b-sign-off", `{"actions":[{"type":"PbotApproval","properties":{"approver_role":"finance"}}]}`)
	_, err := b.eng.Work(context.Background())
	require.NoError(t, err)

	code, p, _ := b.call(t, "PUT", "/gateway/orgs/cust-a/users/ann@example.com", mgmt, `{"approver_roles": ["finance", "finance", "ops"]}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, []any{"finance", "ops"}, p["approver_roles"])
	code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-b/users/ann@example.com", mgmt, `{"approver_roles": ["finance"]}`)
	require.Equal(t, http.StatusNotFound, code, "another account's organization")
	code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-b/users/ann@example.com", mgmtB, `{"approver_roles": ["finance"]}`)
	require.Equal(t, http.StatusOK, code, p)
	code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/users/ann@example.com", mgmt, `{"approver_roles": [" padded "]}`)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/users/ann@example.com", live, `{"approver_roles": []}`)
	require.Equal(t, http.StatusForbidden, code, "a runtime key does not manage people")

	b.addPerson(t, mgmt, "cust-a", "bob@example.com")
	ann := b.signIn(t, pk, "ann@example.com")
	bob := b.signIn(t, pk, "bob@example.com")
	annB := b.signIn(t, pkB, "ann@example.com")

	tasks := func(cred string) []map[string]any {
		t.Helper()
		code, p, _ := b.call(t, "GET", "/sdk/tasks", cred, "")
		require.Equal(t, http.StatusOK, code, p)
		var out []map[string]any
		for _, it := range p["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		return out
	}
	kinds := func(ts []map[string]any) map[string]string {
		m := map[string]string{}
		for _, x := range ts {
			m[x["run_id"].(string)] = x["kind"].(string)
		}
		return m
	}
	annTasks := tasks(ann)
	require.Equal(t, map[string]string{approvalRun: "approval", formRun: "form"}, kinds(annTasks), "finance, not legal; and the open form")
	require.Equal(t, map[string]string{formRun: "form"}, kinds(tasks(bob)), "no roles: forms only")
	require.Equal(t, map[string]string{otherRun: "approval"}, kinds(tasks(annB)), "each organization its own")
	code, p, _ = b.call(t, "GET", "/sdk/tasks", pk, "")
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "signin_required", p["code"])

	var taskID string
	for _, x := range annTasks {
		if x["kind"] == "approval" {
			taskID = x["task_id"].(string)
			require.Equal(t, "finance", x["approver_role"])
			require.Equal(t, "Pay it?", x["comment"])
		}
	}
	decide := func(cred, id string) (int, map[string]any) {
		code, p, _ := b.call(t, "POST", "/sdk/tasks/"+id+"/decide", cred, `{"approved": true, "comment": "ok"}`)
		return code, p
	}
	code, p = decide(bob, taskID)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "not_an_approver", p["code"])
	code, p = decide(pk, taskID)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "signin_required", p["code"])
	code, p = decide(annB, taskID)
	require.Equal(t, http.StatusNotFound, code, "another organization's approval: %v", p)
	code, p = decide(ann, taskID)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "approved", p["status"])
	require.Equal(t, map[string]any{"type": "user", "id": "ann@example.com"}, p["decided_by"])
	code, _ = decide(ann, taskID)
	require.Equal(t, http.StatusConflict, code, "decided already")

	// Roles are read on every request: a change applies to an open session at once.
	code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/users/bob@example.com", mgmt, `{"approver_roles": ["legal"]}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, map[string]string{legalRun: "approval", formRun: "form"}, kinds(tasks(bob)))

	// Form pauses: an anonymous session reads, a signed-in person submits and is recorded.
	path := "/sdk/forms/run/" + formRun + "/0"
	code, p, _ = b.call(t, "GET", path, pk, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "open", p["status"])
	code, p, _ = b.call(t, "POST", path+"/submit", pk, `{"data": {"answer": "42"}}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "signin_required", p["code"])
	require.Contains(t, p["detail"], "/sdk/auth/start", "the hint says how to sign in")
	code, p, _ = b.call(t, "POST", path+"/submit", annB, `{"data": {"answer": "42"}}`)
	require.Equal(t, http.StatusNotFound, code, "another organization's run")
	code, p, _ = b.call(t, "POST", path+"/submit", bob, `{"data": {}}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, "the runtime's validation comes through")
	code, p, _ = b.call(t, "POST", path+"/submit", bob, `{"data": {"answer": "42"}}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "bob@example.com", p["claimed_by"])
	code, _, _ = b.call(t, "POST", path+"/submit", ann, `{"data": {"answer": "43"}}`)
	require.Equal(t, http.StatusConflict, code)

	// A client cannot claim to be someone through the gateway.
	code, p, _ = b.call(t, "POST", "/approvals/"+legalRun+"/0", live, `{"approved": false}`, "X-Svc-Identity: forged")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, map[string]any{"type": "api", "id": ""}, p["decided_by"])
}

// TestPublicFormSignInThroughTheGateway: a form with requireAuth takes a submission from a
// signed-in person of its organization (recorded as submitted_by) and no one else.
func TestPublicFormSignInThroughTheGateway(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	mgmtB, _, pkB := b.signup(t, "other@platform.example", "cust-b")
	b.addPerson(t, mgmt, "cust-a", "ann@example.com")
	b.addPerson(t, mgmtB, "cust-b", "ann@example.com")
	code, f, _ := b.call(t, "POST", "/external-forms", live, `{"name": "Contact", "is_public": true, "settings": {"requireAuth": true},
		"schema": {"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "email", "type": "email", "label": "Email", "required": true}]}]}}`)
	require.Equal(t, http.StatusCreated, code, f)
	submit := "/forms/public/" + f["id"].(string) + "/submit"

	code, p, _ := b.call(t, "POST", submit, "", `{"email": "x@example.com"}`)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "form_signin_required", p["code"])
	code, p, _ = b.call(t, "POST", submit, b.signIn(t, pkB, "ann@example.com"), `{"email": "x@example.com"}`)
	require.Equal(t, http.StatusUnauthorized, code, "another organization's session")
	code, p, _ = b.call(t, "POST", submit, "", `{"email": "x@example.com"}`, "X-Svc-Identity: forged")
	require.Equal(t, http.StatusUnauthorized, code)
	code, p, _ = b.call(t, "POST", submit, gateway.PrefixSession+strings.Repeat("1", 48), `{"email": "x@example.com"}`)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "unknown_session", p["code"])

	code, p, _ = b.call(t, "POST", submit, b.signIn(t, pk, "ann@example.com"), `{"email": "x@example.com"}`)
	require.Equal(t, http.StatusCreated, code, p)
	code, subs, _ := b.call(t, "GET", "/external-forms/"+f["id"].(string)+"/submissions", live, "")
	require.Equal(t, http.StatusOK, code)
	items := subs["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, "ann@example.com", items[0].(map[string]any)["submitted_by"])
}

// TestPublicFormLimitsPerVisitor: each visitor address may read a public form 60 times and
// submit it 10 times a minute; another form and another address have their own counts.
func TestPublicFormLimitsPerVisitor(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	form := func() string {
		code, f, _ := b.call(t, "POST", "/external-forms", live, `{"name": "Contact", "is_public": true,
			"schema": {"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "note", "type": "text", "label": "Note"}]}]}}`)
		require.Equal(t, http.StatusCreated, code, f)
		return f["id"].(string)
	}
	one, two := form(), form()
	for i := range gateway.PublicReads {
		code, p, _ := b.call(t, "GET", "/forms/public/"+one, "", "")
		require.Equal(t, http.StatusOK, code, "read %d: %v", i, p)
	}
	code, p, h := b.call(t, "GET", "/forms/public/"+one, "", "")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "rate_limited", p["code"])
	require.NotEmpty(t, h.Get("Retry-After"))
	for range gateway.PublicSubmits {
		code, p, _ := b.call(t, "POST", "/forms/public/"+one+"/submit", "", `{"note": "hi"}`)
		require.Equal(t, http.StatusCreated, code, p)
	}
	code, _, h = b.call(t, "POST", "/forms/public/"+one+"/submit", "", `{"note": "hi"}`)
	require.Equal(t, http.StatusTooManyRequests, code, "the 11th submit in a minute")
	require.NotEmpty(t, h.Get("Retry-After"))
	code, _, _ = b.call(t, "GET", "/forms/public/"+two, "", "")
	require.Equal(t, http.StatusOK, code, "another form, its own count")

	// Another visitor address (127.0.0.2 is loopback too).
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp, err := other.Get(b.gw.URL + "/forms/public/" + one)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "another visitor, its own count")

	b.clock.add(time.Minute)
	code, _, _ = b.call(t, "POST", "/forms/public/"+one+"/submit", "", `{"note": "hi"}`)
	require.Equal(t, http.StatusCreated, code, "a minute later")
	code, subs, _ := b.call(t, "GET", "/external-forms/"+one+"/submissions?limit=100", live, "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, subs["items"], gateway.PublicSubmits+1, "a refused submit wrote nothing")
}
