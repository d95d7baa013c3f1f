package runtime_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/identity"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/testlog"
)

type (
	externalFormDoc struct {
		ID                string          `json:"id"`
		Name              string          `json:"name"`
		IsPublic          bool            `json:"is_public"`
		TriggerWorkflowID string          `json:"trigger_workflow_id"`
		Schema            json.RawMessage `json:"schema"`
		Settings          map[string]any  `json:"settings"`
	}
	submitDoc struct {
		SubmissionID           string  `json:"submission_id"`
		TriggeredRunID         *string `json:"triggered_run_id"`
		TriggeredExecutionType *string `json:"triggered_execution_type"`
		SuccessMessage         string  `json:"success_message"`
	}
	submissionDoc struct {
		SubmissionID   string         `json:"submission_id"`
		Payload        map[string]any `json:"payload"`
		TriggeredRunID string         `json:"triggered_run_id"`
		SubmittedBy    string         `json:"submitted_by"`
	}
)

const contactSchema = `{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [
	{"key": "email", "type": "email", "label": "Email", "required": true},
	{"key": "name", "type": "text", "label": "Name"}]}]}`

func formBody(workflowID string, public bool) map[string]any {
	return map[string]any{
		"name": "Contact us", "description": "We answer within a day", "is_public": public,
		"trigger_workflow_id": workflowID, "schema": json.RawMessage(contactSchema),
		"settings": map[string]any{"successMessage": "Thanks!", "branding": map[string]any{
			"name": "Acme", "logoUrl": "https://acme.example/logo.png", "accent": "#0a7d5a", "hidePoweredBy": true}},
	}
}

func (b *bundle) createForm(t testing.TB, org string, body map[string]any) externalFormDoc {
	t.Helper()
	return ok[externalFormDoc](t, b.do(t, http.MethodPost, "/external-forms", org, body), http.StatusCreated)
}

func signedIdentity(t testing.TB, key []byte, who, org string) string {
	t.Helper()
	tok, err := identity.Sign(key, identity.Identity{Subject: who, OrgID: org, Expires: time.Now().Add(time.Minute)})
	require.NoError(t, err)
	return identity.Header + ": " + tok
}

func TestExternalFormRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contact")
	f := b.createForm(t, orgA, formBody(wf.ID, true))
	require.True(t, strings.HasPrefix(f.ID, "frm-"), f.ID)
	require.Equal(t, wf.ID, f.TriggerWorkflowID)
	require.Equal(t, "Thanks!", f.Settings["successMessage"])
	require.Equal(t, false, f.Settings["requireAuth"], "shown when false too")

	got := ok[externalFormDoc](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID, orgA, nil), http.StatusOK)
	require.Equal(t, f, got)
	l := ok[list[externalFormDoc]](t, b.do(t, http.MethodGet, "/external-forms", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 1)

	body := formBody(wf.ID, false)
	body["name"] = "Contact"
	up := ok[externalFormDoc](t, b.do(t, http.MethodPut, "/external-forms/"+f.ID, orgA, body), http.StatusOK)
	require.Equal(t, "Contact", up.Name)
	require.False(t, up.IsPublic)

	// Bad input: 422 by pointer, nothing written.
	bad := formBody(wf.ID, true)
	bad["trigger_process_id"] = "prc-1"
	p := problem(t, b.do(t, http.MethodPost, "/external-forms", orgA, bad), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/trigger_workflow_id", "/trigger_process_id"}, pointers(p))
	bad = formBody(wf.ID, true)
	bad["schema"] = json.RawMessage(`{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "Email", "type": "email", "label": "E"}]}]}`)
	bad["settings"] = map[string]any{"branding": map[string]any{"logoUrl": "http://acme.example/l.png", "accent": "blue"}}
	p = problem(t, b.do(t, http.MethodPut, "/external-forms/"+f.ID, orgA, bad), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/schema/pages/0/fields/0/key", "/settings/branding/logoUrl", "/settings/branding/accent"}, pointers(p))
	require.Equal(t, up, ok[externalFormDoc](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID, orgA, nil), http.StatusOK),
		"a refused PUT changes nothing")
	l = ok[list[externalFormDoc]](t, b.do(t, http.MethodGet, "/external-forms", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 1)

	problem(t, b.do(t, http.MethodGet, "/external-forms/"+f.ID, orgB, nil), http.StatusNotFound, "not_found")
	// Another organization cannot make A's workflow the trigger of its form.
	p = problem(t, b.do(t, http.MethodPost, "/external-forms", orgB, formBody(wf.ID, true)), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/trigger_workflow_id"}, pointers(p))
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/external-forms/"+f.ID, orgA, nil).Code)
	problem(t, b.do(t, http.MethodGet, "/external-forms/"+f.ID, orgA, nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgA, nil), http.StatusNotFound, "not_found")
}

func TestPublicFormRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contact")
	f := b.createForm(t, orgA, formBody(wf.ID, true))
	private := b.createForm(t, orgA, formBody(wf.ID, false))

	// The public definition: no X-Org-Id, no trigger.
	rec := b.do(t, http.MethodGet, "/forms/public/"+f.ID, "", nil)
	pub := ok[map[string]any](t, rec, http.StatusOK)
	require.Equal(t, "Contact us", pub["name"])
	require.Equal(t, true, pub["open"])
	require.NotContains(t, rec.Body.String(), wf.ID)
	require.NotContains(t, rec.Body.String(), "trigger")
	problem(t, b.do(t, http.MethodGet, "/forms/public/"+private.ID, "", nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodGet, "/forms/public/frm-garbage", "", nil), http.StatusNotFound, "not_found")

	// A submission starts the trigger with the flat payload.
	res := ok[submitDoc](t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{
		"email": "ada@example.com", "name": "Ada"}), http.StatusCreated)
	require.True(t, strings.HasPrefix(res.SubmissionID, "sub_"))
	require.NotNil(t, res.TriggeredRunID)
	require.Equal(t, "workflow_run", *res.TriggeredExecutionType)
	require.Equal(t, "Thanks!", res.SuccessMessage)
	b.work(t)
	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+*res.TriggeredRunID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", status["status"])
	rows := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/contacts/rows", orgA, nil), http.StatusOK)
	require.Len(t, rows.Items, 1)
	require.Equal(t, "Ada", rows.Items[0].Data["name"])

	// Refusals change nothing.
	p := problem(t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": "nope", "age": 3}),
		http.StatusUnprocessableEntity, "validation_failed")
	require.ElementsMatch(t, []string{"/email", "/age"}, pointers(p))
	problem(t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", `{"email": `), http.StatusBadRequest, "malformed_json")
	huge := `{"email": "ada@example.com", "name": "` + strings.Repeat("x", 256<<10) + `"}`
	problem(t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", huge), http.StatusRequestEntityTooLarge, "body_too_large")
	problem(t, b.do(t, http.MethodPost, "/forms/public/"+private.ID+"/submit", "", map[string]any{"email": "ada@example.com"}),
		http.StatusNotFound, "not_found")

	expired := formBody(wf.ID, true)
	expired["expires_at"] = time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	ef := b.createForm(t, orgA, expired)
	require.Equal(t, false, ok[map[string]any](t, b.do(t, http.MethodGet, "/forms/public/"+ef.ID, "", nil), http.StatusOK)["open"])
	problem(t, b.do(t, http.MethodPost, "/forms/public/"+ef.ID+"/submit", "", map[string]any{"email": "ada@example.com"}),
		http.StatusGone, "form_expired")

	subs := ok[list[submissionDoc]](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgA, nil), http.StatusOK)
	require.Len(t, subs.Items, 1)
	require.Equal(t, map[string]any{"email": "ada@example.com", "name": "Ada"}, subs.Items[0].Payload)
	require.Equal(t, *res.TriggeredRunID, subs.Items[0].TriggeredRunID)
	require.Empty(t, subs.Items[0].SubmittedBy)
	problem(t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgB, nil), http.StatusNotFound, "not_found")
	runs := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs", orgA, nil), http.StatusOK)
	require.Len(t, runs.Items, 1, "only the accepted submission started a run")
}

func TestPublicFormSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contact")
	body := formBody(wf.ID, true)
	body["settings"] = map[string]any{"requireAuth": true}
	f := b.createForm(t, orgA, body)
	submit := func(headers ...string) *submitDoc {
		t.Helper()
		rec := b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": "ada@example.com"}, headers...)
		if rec.Code == http.StatusCreated {
			d := ok[submitDoc](t, rec, http.StatusCreated)
			return &d
		}
		problem(t, rec, http.StatusUnauthorized, "form_signin_required")
		return nil
	}
	require.Nil(t, submit(), "no identity")
	require.Nil(t, submit(identity.Header+": grace@acme.example"), "a bare claim is not an identity")
	require.Nil(t, submit(signedIdentity(t, []byte("a-key-that-is-not-the-gateways-000"), "grace@acme.example", orgA)), "signed by someone else")
	require.Nil(t, submit(signedIdentity(t, testIdentityKey, "grace@acme.example", orgB)), "another organization's session")
	tok, err := identity.Sign(testIdentityKey, identity.Identity{Subject: "grace@acme.example", OrgID: orgA, Expires: time.Now().Add(-time.Second)})
	require.NoError(t, err)
	require.Nil(t, submit(identity.Header+": "+tok), "expired")
	require.Empty(t, ok[list[submissionDoc]](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgA, nil), http.StatusOK).Items)

	res := submit(signedIdentity(t, testIdentityKey, "grace@acme.example", orgA))
	require.NotNil(t, res)
	subs := ok[list[submissionDoc]](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgA, nil), http.StatusOK)
	require.Equal(t, "grace@acme.example", subs.Items[0].SubmittedBy)
	v := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+*res.TriggeredRunID+"/context/__submitted_by", orgA, nil), http.StatusOK)
	require.Equal(t, "grace@acme.example", v["value"])
}

// TestPublicSubmitsRacing: many visitors at once each get their own submission and run.
func TestPublicSubmitsRacing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contact")
	f := b.createForm(t, orgA, formBody(wf.ID, true))
	const n = 12
	var wg sync.WaitGroup
	bodies := make([]string, n)
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": "visitor@example.com"})
			codes[i], bodies[i] = rec.Code, rec.Body.String()
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		require.Equal(t, http.StatusCreated, codes[i], bodies[i])
		var d submitDoc
		require.NoError(t, json.Unmarshal([]byte(bodies[i]), &d))
		seen[d.SubmissionID] = true
	}
	require.Len(t, seen, n)
	subs := ok[list[submissionDoc]](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions?limit=500", orgA, nil), http.StatusOK)
	require.Len(t, subs.Items, n)
	runs := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs?limit=500", orgA, nil), http.StatusOK)
	require.Len(t, runs.Items, n)
}

// TestExternalFormFrameAncestors: settings.frameAncestors takes origins only, each checked
// at create and replace (422 by pointer, nothing written), kept in their canonical form.
func TestExternalFormFrameAncestors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contact")
	body := formBody(wf.ID, true)
	body["settings"] = map[string]any{"frameAncestors": []string{"https://WWW.Acme.example/", "https://www.acme.example", "https://*.acme.example:8443"}}
	f := b.createForm(t, orgA, body)
	require.Equal(t, []any{"https://www.acme.example", "https://*.acme.example:8443"}, f.Settings["frameAncestors"], "lowercase, no slash, once each")
	pub := ok[map[string]any](t, b.do(t, http.MethodGet, "/forms/public/"+f.ID, "", nil), http.StatusOK)
	require.Equal(t, f.Settings["frameAncestors"], pub["settings"].(map[string]any)["frameAncestors"], "the gateway's page reads them here")

	for _, tc := range []struct {
		origins  []string
		pointers []string
	}{
		{[]string{"https://ok.example", "http://acme.example"}, []string{"/settings/frameAncestors/1"}},
		{[]string{"*"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"https://acme.example/page"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"https://acme.example; script-src *"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"https://acme.example https://evil.example"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"'self'"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"https://user@acme.example"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"https://acme.example:0"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"javascript://acme.example"}, []string{"/settings/frameAncestors/0"}},
		{[]string{"https://acme.example?x=1"}, []string{"/settings/frameAncestors/0"}},
	} {
		bad := formBody(wf.ID, true)
		bad["settings"] = map[string]any{"frameAncestors": tc.origins}
		p := problem(t, b.do(t, http.MethodPost, "/external-forms", orgA, bad), http.StatusUnprocessableEntity, "validation_failed")
		require.Equal(t, tc.pointers, pointers(p), "%v", tc.origins)
		p = problem(t, b.do(t, http.MethodPut, "/external-forms/"+f.ID, orgA, bad), http.StatusUnprocessableEntity, "validation_failed")
		require.Equal(t, tc.pointers, pointers(p), "%v", tc.origins)
	}
	many := make([]string, 21)
	for i := range many {
		many[i] = "https://a" + strings.Repeat("b", i) + ".example"
	}
	bad := formBody(wf.ID, true)
	bad["settings"] = map[string]any{"frameAncestors": many}
	p := problem(t, b.do(t, http.MethodPost, "/external-forms", orgA, bad), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/settings/frameAncestors"}, pointers(p))
	require.Equal(t, f, ok[externalFormDoc](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID, orgA, nil), http.StatusOK), "refusals change nothing")
	l := ok[list[externalFormDoc]](t, b.do(t, http.MethodGet, "/external-forms", orgA, nil), http.StatusOK)
	require.Len(t, l.Items, 1)
}

// TestPublicFormSignInAcrossAKeyRotation: a runtime given the gateway's new identity key
// and the one before it believes tokens signed with either (SVC_IDENTITY_KEY=new,old);
// one given the new key alone no longer believes the old key's.
func TestPublicFormSignInAcrossAKeyRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "contact")
	body := formBody(wf.ID, true)
	body["settings"] = map[string]any{"requireAuth": true}
	f := b.createForm(t, orgA, body)
	newKey := []byte("the-gateways-next-identity-key-0123456789")
	rotating, rotated := *b, *b
	rotating.h = runtime.New(b.eng, runtime.Options{Logger: testlog.Quiet(), IdentityKey: newKey, IdentityPreviousKeys: [][]byte{testIdentityKey}}).Handler()
	rotated.h = runtime.New(b.eng, runtime.Options{Logger: testlog.Quiet(), IdentityKey: newKey}).Handler()
	submit := func(b *bundle, who string, key []byte) int {
		t.Helper()
		return b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": who}, signedIdentity(t, key, who, orgA)).Code
	}
	require.Equal(t, http.StatusCreated, submit(&rotating, "ada@acme.example", testIdentityKey), "the old key's token")
	require.Equal(t, http.StatusCreated, submit(&rotating, "grace@acme.example", newKey), "the new key's token")
	require.Equal(t, http.StatusUnauthorized, submit(&rotated, "mallory@acme.example", testIdentityKey), "the old key dropped")
	require.Equal(t, http.StatusCreated, submit(&rotated, "alan@acme.example", newKey))
	var by []string
	for _, s := range ok[list[submissionDoc]](t, b.do(t, http.MethodGet, "/external-forms/"+f.ID+"/submissions", orgA, nil), http.StatusOK).Items {
		by = append(by, s.SubmittedBy)
	}
	require.ElementsMatch(t, []string{"ada@acme.example", "grace@acme.example", "alan@acme.example"}, by)
}
