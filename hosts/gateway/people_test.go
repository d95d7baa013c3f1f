package gateway_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/internal/testlog"
)

// tryStart asks for a code for email with credential cred and reports the answer and
// whether a message reached email (every code asked for mailed first).
func (b *sdkBundle) tryStart(t *testing.T, path, cred, email string) (int, map[string]any, bool) {
	t.Helper()
	before := b.mail.countTo(email)
	code, p, _ := b.call(t, "POST", path, cred, `{"email": "`+email+`"}`)
	b.srv.WaitMails()
	return code, p, b.mail.countTo(email) > before
}

// TestWhoMaySignIn: by default only the people an organization added may sign in to its
// SDK; a listed domain admits its people; "anyone" admits every mailbox as a guest, who
// works no task. A refused person gets the answer a person who may sign in gets, and no
// mail; their code never works. Narrowing the policy or removing a person ends their
// sessions at their next request.
func TestWhoMaySignIn(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	mgmtB, _, _ := b.signup(t, "other@platform.example", "cust-b")

	code, pol, _ := b.call(t, "GET", "/gateway/orgs/cust-a/sign-in", mgmt, "")
	require.Equal(t, http.StatusOK, code, pol)
	require.Equal(t, false, pol["anyone"])
	require.Equal(t, []any{}, pol["domains"], "people only, by default")

	// A stranger: 202 "sent" like anyone else, no mail, and no code verifies.
	code, p, mailed := b.tryStart(t, "/sdk/auth/start", pk, "mallory@attacker.example")
	require.Equal(t, http.StatusAccepted, code, p)
	require.Equal(t, "sent", p["status"])
	require.False(t, mailed, "no mail to someone who may not sign in")
	for _, c := range []string{"000000", "123456"} {
		code, p, _ = b.call(t, "POST", "/sdk/auth/verify", pk, `{"email": "mallory@attacker.example", "code": "`+c+`"}`)
		require.Equal(t, http.StatusUnauthorized, code)
		require.Equal(t, "code_invalid", p["code"], "the answer of a wrong code")
	}

	// A person the organization added signs in, as a member with their roles.
	b.addPerson(t, mgmt, "cust-a", "ann@example.com", "finance")
	code, _, mailed = b.tryStart(t, "/sdk/auth/start", pk, "ann@example.com")
	require.Equal(t, http.StatusAccepted, code)
	require.True(t, mailed)
	ann := b.signIn(t, pk, "ann@example.com")
	code, p, _ = b.call(t, "GET", "/sdk/session", ann, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, map[string]any{"approver_roles": []any{"finance"}, "member": true}, p["permissions"])

	// Domains: lower-cased, checked; their people are members without roles.
	for _, bad := range []string{`"@corp.example"`, `"*.corp.example"`, `"https://corp.example"`, `"corp"`, `""`} {
		code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", mgmt, `{"domains": [`+bad+`]}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, bad)
		require.Equal(t, "/domains/0", p["errors"].([]any)[0].(map[string]any)["pointer"], bad)
	}
	code, pol, _ = b.call(t, "GET", "/gateway/orgs/cust-a/sign-in", mgmt, "")
	require.Equal(t, []any{}, pol["domains"], "a refused policy changed nothing")
	code, pol, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", mgmt, `{"domains": ["Corp.Example", "corp.example"]}`)
	require.Equal(t, http.StatusOK, code, pol)
	require.Equal(t, []any{"corp.example"}, pol["domains"])
	dave := b.signIn(t, pk, "dave@corp.example")
	code, p, _ = b.call(t, "GET", "/sdk/session", dave, "")
	require.Equal(t, map[string]any{"approver_roles": []any{}, "member": true}, p["permissions"])
	_, _, mailed = b.tryStart(t, "/sdk/auth/start", pk, "eve@corp.example.attacker.example")
	require.False(t, mailed, "a domain is matched whole")

	// Anyone: a stranger signs in as a guest, who sees no task and works none.
	code, pol, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", mgmt, `{"anyone": true, "domains": ["corp.example"]}`)
	require.Equal(t, http.StatusOK, code, pol)
	code, wf, _ := b.call(t, "POST", "/workflows", live, `{"name": "kyc", "definition": {"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["iban"]}},
		{"type": "PbotApproval", "properties": {"approver_role": "finance"}}]}}`)
	require.Equal(t, http.StatusCreated, code, wf)
	code, run, _ := b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", live, `{"input": {}}`)
	require.Equal(t, http.StatusAccepted, code, run)
	runID := run["id"].(string)
	_, err := b.eng.Work(context.Background())
	require.NoError(t, err)
	mallory := b.signIn(t, pk, "mallory@attacker.example")
	code, p, _ = b.call(t, "GET", "/sdk/session", mallory, "")
	require.Equal(t, map[string]any{"approver_roles": []any{}, "member": false}, p["permissions"])
	code, p, _ = b.call(t, "GET", "/sdk/tasks", mallory, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Empty(t, p["items"], "a guest has no tasks")
	code, p, _ = b.call(t, "GET", "/sdk/tasks", dave, "")
	require.Len(t, p["items"], 1, "a member of a listed domain takes the unassigned form")
	code, p, _ = b.call(t, "POST", "/sdk/forms/run/"+runID+"/0/submit", mallory, `{"data": {"iban": "ATTACKER"}}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "not_a_member", p["code"])
	code, p, _ = b.call(t, "POST", "/sdk/tasks/anything/decide", mallory, `{"approved": true}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "not_a_member", p["code"])
	code, p, _ = b.call(t, "GET", "/runs/"+runID+"/status", live, "")
	require.Equal(t, "paused", p["status"], "nothing changed in the run")

	// Narrowing the policy ends the guest's session; removing a person ends theirs.
	code, _, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", mgmt, `{}`)
	require.Equal(t, http.StatusOK, code)
	code, p, _ = b.call(t, "GET", "/sdk/session", mallory, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "session_ended", p["code"])
	code, p, _ = b.call(t, "GET", "/sdk/session", dave, "")
	require.Equal(t, "session_ended", p["code"], "the domain is no longer listed")
	code, _, _ = b.call(t, "DELETE", "/gateway/orgs/cust-a/users/ann@example.com", mgmt, "")
	require.Equal(t, http.StatusNoContent, code)
	code, p, _ = b.call(t, "GET", "/sdk/tasks", ann, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "session_ended", p["code"])

	// Only the organization's own account sets it, with its management token.
	code, _, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", mgmtB, `{"anyone": true}`)
	require.Equal(t, http.StatusNotFound, code, "another account's organization")
	code, _, _ = b.call(t, "GET", "/gateway/orgs/cust-a/sign-in", mgmtB, "")
	require.Equal(t, http.StatusNotFound, code)
	code, p, _ = b.call(t, "PUT", "/gateway/orgs/cust-a/sign-in", live, `{"anyone": true}`)
	require.Equal(t, http.StatusForbidden, code, p)
	code, pol, _ = b.call(t, "GET", "/gateway/orgs/cust-a/sign-in", mgmt, "")
	require.Equal(t, false, pol["anyone"])
}

// TestFormPauseTasksByAssigneeRole: a form pause naming an assignee_role is listed for and
// taken by the people holding that role only; anyone else's submit is 403 and changes
// nothing; another organization's is 404. What was submitted is read by members, never
// with the publishable key alone.
func TestFormPauseTasksByAssigneeRole(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	mgmtB, _, pkB := b.signup(t, "other@platform.example", "cust-b")
	b.addPerson(t, mgmt, "cust-a", "ann@example.com", "finance")
	b.addPerson(t, mgmt, "cust-a", "bob@example.com")
	b.addPerson(t, mgmtB, "cust-b", "ann@example.com", "finance")

	start := func(name, def string) string {
		t.Helper()
		code, wf, _ := b.call(t, "POST", "/workflows", live, `{"name": "`+name+`", "definition": `+def+`}`)
		require.Equal(t, http.StatusCreated, code, wf)
		code, run, _ := b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", live, `{"input": {}}`)
		require.Equal(t, http.StatusAccepted, code, run)
		return run["id"].(string)
	}
	assigned := start("kyc", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["iban"], "assignee_role": "finance"}}]}`)
	open := start("note", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["note"]}}]}`)
	_, err := b.eng.Work(context.Background())
	require.NoError(t, err)
	ann, bob, annB := b.signIn(t, pk, "ann@example.com"), b.signIn(t, pk, "bob@example.com"), b.signIn(t, pkB, "ann@example.com")

	forms := func(cred string) map[string]string {
		t.Helper()
		code, p, _ := b.call(t, "GET", "/sdk/tasks", cred, "")
		require.Equal(t, http.StatusOK, code, p)
		out := map[string]string{}
		for _, it := range p["items"].([]any) {
			x := it.(map[string]any)
			role, _ := x["assignee_role"].(string)
			out[x["run_id"].(string)] = role
		}
		return out
	}
	require.Equal(t, map[string]string{assigned: "finance", open: ""}, forms(ann))
	require.Equal(t, map[string]string{open: ""}, forms(bob), "not finance: the unassigned form only")
	require.Empty(t, forms(annB), "another organization's forms")

	path := "/sdk/forms/run/" + assigned + "/0"
	code, p, _ := b.call(t, "POST", path+"/submit", bob, `{"data": {"iban": "ATTACKER"}}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "not_an_assignee", p["code"])
	code, p, _ = b.call(t, "POST", path+"/submit", annB, `{"data": {"iban": "ATTACKER"}}`)
	require.Equal(t, http.StatusNotFound, code, "another organization's run: %v", p)
	code, p, _ = b.call(t, "GET", "/forms/"+assigned+"/0", live, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "open", p["status"], "a refused submit changed nothing")
	require.Nil(t, p["submission"])

	code, p, _ = b.call(t, "POST", path+"/submit", ann, `{"data": {"iban": "DE02 1203"}}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "ann@example.com", p["claimed_by"])
	code, p, _ = b.call(t, "POST", "/sdk/forms/run/"+open+"/0/submit", bob, `{"data": {"note": "fine"}}`)
	require.Equal(t, http.StatusOK, code, p)

	// Submitted data: a member reads it; the publishable key alone does not.
	code, p, _ = b.call(t, "GET", path, ann, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, map[string]any{"iban": "DE02 1203"}, p["submission"])
	require.Equal(t, "ann@example.com", p["claimed_by"])
	code, p, _ = b.call(t, "GET", path, pk, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, "submitted", p["status"])
	require.NotContains(t, p, "submission")
	require.NotContains(t, p, "claimed_by")
	code, _, _ = b.call(t, "GET", path, pkB, "")
	require.Equal(t, http.StatusNotFound, code, "another organization's publishable key")
}

// TestFormSessionWorksOnItsFormOnly: a public form's sign-in admits any mailbox (the form
// is public) and gives a session that works on that form and nowhere else: not on another
// form of the organization, not on the SDK's routes. A code works only where it was asked.
func TestFormSessionWorksOnItsFormOnly(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	_, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	form := func() string {
		code, f, _ := b.call(t, "POST", "/external-forms", live, `{"name": "Vendor", "is_public": true, "settings": {"requireAuth": true},
			"schema": {"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "note", "type": "text", "label": "Note"}]}]}}`)
		require.Equal(t, http.StatusCreated, code, f)
		return f["id"].(string)
	}
	one, two := form(), form()

	code, p, mailed := b.tryStart(t, "/forms/public/"+one+"/auth/start", "", "vendor@supplier.example")
	require.Equal(t, http.StatusAccepted, code, p)
	require.True(t, mailed, "a public form's sign-in is open to anyone")
	c, _ := b.code(t, "vendor@supplier.example")
	code, p, _ = b.call(t, "POST", "/sdk/auth/verify", pk, `{"email": "vendor@supplier.example", "code": "`+c+`"}`)
	require.Equal(t, http.StatusUnauthorized, code, "a form's code is not an SDK code")
	require.Equal(t, "code_invalid", p["code"])
	code, p, _ = b.call(t, "POST", "/forms/public/"+two+"/auth/verify", "", `{"email": "vendor@supplier.example", "code": "`+c+`"}`)
	require.Equal(t, http.StatusUnauthorized, code, "nor another form's")
	code, p, _ = b.call(t, "POST", "/forms/public/"+one+"/auth/verify", "", `{"email": "vendor@supplier.example", "code": "`+c+`"}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, one, p["form_id"])
	session := p["session_token"].(string)

	code, p, _ = b.call(t, "POST", "/forms/public/"+two+"/submit", session, `{"note": "hi"}`)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "session_for_another_form", p["code"])
	for _, route := range []string{"/sdk/tasks", "/sdk/session"} {
		code, p, _ = b.call(t, "GET", route, session, "")
		require.Equal(t, http.StatusForbidden, code, route)
		require.Equal(t, "form_session_on_sdk_route", p["code"], route)
	}
	code, p, _ = b.call(t, "POST", "/forms/public/"+one+"/submit", session, `{"note": "hi"}`)
	require.Equal(t, http.StatusCreated, code, p)
	code, subs, _ := b.call(t, "GET", "/external-forms/"+two+"/submissions", live, "")
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, subs["items"], "nothing reached the other form")
}

// TestSignInWithoutAMailer: a gateway with no mail server does not answer "sent": 503
// mail_not_configured, naming the flags that fix it, on the SDK's and a hosted form's
// sign-in; nothing is kept. With --dev-show-codes (a LogMailer that shows them) it sends.
func TestSignInWithoutAMailer(t *testing.T) {
	t.Parallel()
	// What svcflow serve runs without --smtp-addr: the development mailer, codes hidden.
	b := setupSDK(t, gateway.Options{Mailer: gateway.LogMailer{Log: testlog.Quiet()}})
	mgmt, live, pk := b.signup(t, "ops@platform.example", "cust-a")
	b.addPerson(t, mgmt, "cust-a", "ann@example.com")
	code, f, _ := b.call(t, "POST", "/external-forms", live, `{"name": "Vendor", "is_public": true, "settings": {"requireAuth": true},
		"schema": {"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "note", "type": "text", "label": "Note"}]}]}}`)
	require.Equal(t, http.StatusCreated, code, f)
	for _, tc := range []struct{ path, cred string }{{"/sdk/auth/start", pk}, {"/forms/public/" + f["id"].(string) + "/auth/start", ""}} {
		code, p, _ := b.call(t, "POST", tc.path, tc.cred, `{"email": "ann@example.com"}`)
		require.Equal(t, http.StatusServiceUnavailable, code, tc.path)
		require.Equal(t, "mail_not_configured", p["code"])
		require.Contains(t, p["detail"], "--smtp-addr")
		require.Contains(t, p["detail"], "--dev-show-codes")
	}
	code, p, _ := b.call(t, "POST", "/sdk/auth/verify", pk, `{"email": "ann@example.com", "code": "000000"}`)
	require.Equal(t, http.StatusUnauthorized, code, "no code was kept: %v", p)

	// --dev-show-codes: the development mailer logs the code, and it signs in.
	var logged syncBuffer
	d := setupSDK(t, gateway.Options{Mailer: gateway.LogMailer{Log: slog.New(slog.NewTextHandler(&logged, nil)), ShowCodes: true}})
	mgmt, _, pk = d.signup(t, "ops@platform.example", "cust-a")
	d.addPerson(t, mgmt, "cust-a", "ann@example.com")
	code, p, _ = d.call(t, "POST", "/sdk/auth/start", pk, `{"email": "ann@example.com"}`)
	require.Equal(t, http.StatusAccepted, code, p)
	d.srv.WaitMails()
	m := regexp.MustCompile(`code=(\d{6})`).FindStringSubmatch(logged.String())
	require.NotNil(t, m, logged.String())
	code, p, _ = d.call(t, "POST", "/sdk/auth/verify", pk, `{"email": "ann@example.com", "code": "`+m[1]+`"}`)
	require.Equal(t, http.StatusOK, code, p)
}

// syncBuffer is a bytes.Buffer safe for a logger's writes from another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
