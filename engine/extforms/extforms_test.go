package extforms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/extforms"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// intakeSchema is a form_schema_v1 with a required email, an optional amount and a choice.
const intakeSchema = `{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [
	{"key": "email", "type": "email", "label": "Email", "required": true},
	{"key": "amount", "type": "money", "label": "Amount", "min": 0, "unit": "EUR"},
	{"key": "kind", "type": "select", "label": "Kind", "options": [{"label": "Refund", "value": "refund"}, {"label": "Other", "value": "other"}]}
]}]}`

// intakeFlow writes each submission into the intake table.
const intakeFlow = `{"actions": [{"type": "custom-table", "properties": {"table": "intake", "operation": "write",
	"fields": {"email": "@input.email", "kind": "@input.kind", "who": "@__submitted_by"}}}]}`

func intakeSetup(t *testing.T, b *enginetest.Bundle, org string) string {
	t.Helper()
	_, err := b.Eng.CreateTable(b.Ctx, org, "intake", map[string]string{"email": "text", "kind": "text", "who": "text"})
	require.NoError(t, err)
	return b.Workflow(t, org, "intake", intakeFlow).ID
}

func intakeForm(wf string) engine.ExternalFormInput {
	return engine.ExternalFormInput{Name: "Refund request", Description: "Tell us", IsPublic: true,
		TriggerWorkflowID: wf, Schema: json.RawMessage(intakeSchema),
		Settings: svctype.ExternalFormSettings{SuccessMessage: "Thanks", Branding: &svctype.ExternalFormBrand{
			Name: "Acme", LogoURL: "https://acme.example/logo.png", Accent: "#0a7d5a"}}}
}

// orgEvents returns the names and payloads of org's events that belong to no run.
func orgEvents(t *testing.T, b *enginetest.Bundle, org string) ([]string, []map[string]any) {
	t.Helper()
	page, err := b.St.ListRunEvents(b.Ctx, org, "", svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	var names []string
	var payloads []map[string]any
	for _, e := range page.Items {
		var p map[string]any
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		names, payloads = append(names, e.Event), append(payloads, p)
	}
	return names, payloads
}

func TestExternalFormLifecycle(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := intakeSetup(t, b, "acme.eu:1")
		f, err := b.Eng.CreateExternalForm(b.Ctx, "acme.eu:1", intakeForm(wf))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(f.ID, "frm-"), f.ID)
		org, ok := engine.ExternalFormOrg(f.ID)
		require.True(t, ok)
		require.Equal(t, "acme.eu:1", org, "the id names its organization")
		require.Contains(t, string(f.Schema), `"form_schema_v1"`)

		got, err := b.Eng.GetExternalForm(b.Ctx, "acme.eu:1", f.ID)
		require.NoError(t, err)
		require.Equal(t, "Acme", got.Settings.Branding.Name)
		require.Equal(t, wf, got.TriggerWorkflowID)
		_, err = b.Eng.GetExternalForm(b.Ctx, "other", f.ID)
		require.ErrorIs(t, err, engine.ErrNotFound, "another organization's form")
		other, err := b.Eng.ListExternalForms(b.Ctx, "other", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, other.Items)

		// A PUT replaces every field; the event names the parts that changed.
		in := intakeForm(wf)
		in.Name, in.IsPublic = "Refunds", false
		in.Settings.Branding.Accent = "#fff"
		in.Settings.RequireAuth = true
		up, err := b.Eng.ReplaceExternalForm(b.Ctx, "acme.eu:1", f.ID, in)
		require.NoError(t, err)
		require.Equal(t, f.CreatedAt, up.CreatedAt)
		require.False(t, up.IsPublic)
		// The same form again changes nothing and emits nothing.
		_, err = b.Eng.ReplaceExternalForm(b.Ctx, "acme.eu:1", f.ID, in)
		require.NoError(t, err)
		_, err = b.Eng.ReplaceExternalForm(b.Ctx, "other", f.ID, in)
		require.ErrorIs(t, err, engine.ErrNotFound)

		require.NoError(t, b.Eng.DeleteExternalForm(b.Ctx, "acme.eu:1", f.ID))
		require.ErrorIs(t, b.Eng.DeleteExternalForm(b.Ctx, "acme.eu:1", f.ID), engine.ErrNotFound)
		_, err = b.Eng.GetExternalForm(b.Ctx, "acme.eu:1", f.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)

		names, payloads := orgEvents(t, b, "acme.eu:1")
		require.Equal(t, []string{engine.EventExternalFormCreated, engine.EventExternalFormUpdated, engine.EventExternalFormDeleted}, names)
		require.Equal(t, map[string]any{"form_id": f.ID, "form_name": "Refund request", "is_public": true,
			"created_at": f.CreatedAt.Format(time.RFC3339Nano)}, payloads[0])
		require.Equal(t, []any{"name", "is_public", "settings.requireAuth", "settings.branding"}, payloads[1]["changes"])
		require.Equal(t, "Refunds", payloads[2]["form_name"])
	})
}

func TestExternalFormValidation(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := intakeSetup(t, b, "o")
		pointers := func(in engine.ExternalFormInput) []string {
			t.Helper()
			_, err := b.Eng.CreateExternalForm(b.Ctx, "o", in)
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			var out []string
			for _, p := range ve.Problems {
				out = append(out, p.Pointer)
			}
			return out
		}
		in := intakeForm(wf)
		in.TriggerProcessID = "prc-1"
		require.Equal(t, []string{"/trigger_workflow_id", "/trigger_process_id"}, pointers(in), "both triggers")
		in = intakeForm("wfl-missing")
		require.Equal(t, []string{"/trigger_workflow_id"}, pointers(in))
		in = intakeForm("")
		in.TriggerProcessID = "prc-1"
		require.Equal(t, []string{"/trigger_process_id"}, pointers(in))
		in = intakeForm(wf)
		in.Name = " "
		in.Schema = json.RawMessage(`{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [
			{"key": "Bad Key", "type": "text", "label": "x"}, {"key": "c", "type": "select", "label": "c"}]}]}`)
		in.Settings.RedirectURL = "ftp://acme.example/done"
		in.Settings.Branding = &svctype.ExternalFormBrand{LogoURL: "http://acme.example/logo.png", Accent: "green"}
		got := pointers(in)
		require.Contains(t, got, "/name")
		require.Contains(t, got, "/schema/pages/0/fields/0/key")
		require.Contains(t, got, "/schema/pages/0/fields/1/options")
		require.Contains(t, got, "/settings/redirectUrl")
		require.Contains(t, got, "/settings/branding/logoUrl")
		require.Contains(t, got, "/settings/branding/accent")
		in = intakeForm(wf)
		in.Schema = nil
		require.Equal(t, []string{"/schema"}, pointers(in))
		in.Schema = json.RawMessage(`{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "intro", "type": "content", "label": "Hi"}]}]}`)
		require.Equal(t, []string{"/schema/pages"}, pointers(in), "nothing to fill in")

		// None of it was stored or announced.
		page, err := b.Eng.ListExternalForms(b.Ctx, "o", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
		names, _ := orgEvents(t, b, "o")
		require.Empty(t, names)

		// An older shape is stored normalised.
		in = intakeForm(wf)
		in.Schema = json.RawMessage(`{"type": "object", "properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]}`)
		f, err := b.Eng.CreateExternalForm(b.Ctx, "o", in)
		require.NoError(t, err)
		require.Contains(t, string(f.Schema), `"form_schema_v1"`)
		require.Contains(t, string(f.Schema), `"type":"email"`)
	})
}

func TestPublicSubmissionStartsTheTrigger(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := intakeSetup(t, b, "acme")
		f, err := b.Eng.CreateExternalForm(b.Ctx, "acme", intakeForm(wf))
		require.NoError(t, err)

		pub, open, err := b.Eng.PublicForm(b.Ctx, f.ID)
		require.NoError(t, err)
		require.True(t, open)
		require.Equal(t, f.ID, pub.ID)

		// A payload that fails the schema is refused by pointer into the flat payload, and
		// nothing is stored.
		_, err = b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{
			"email": "not-an-address", "amount": -3, "kind": "gift", "extra": 1}})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve)
		var got []string
		for _, p := range ve.Problems {
			got = append(got, p.Pointer)
		}
		require.ElementsMatch(t, []string{"/email", "/amount", "/kind", "/extra"}, got)
		_, err = b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"kind": "refund"}})
		require.ErrorAs(t, err, &ve, "the required email is missing")
		subs, err := b.Eng.ListFormSubmissions(b.Ctx, "acme", f.ID, svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, subs.Items)
		runs, err := b.Eng.ListRuns(b.Ctx, "acme", engine.RunFilter{})
		require.NoError(t, err)
		require.Empty(t, runs.Items)

		// A person who is not signed in is not recorded when the form does not ask.
		done, err := b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{
			Payload: map[string]any{"email": "ada@example.com", "kind": "refund"}, SubmittedBy: "ignored@example.com"})
		require.NoError(t, err)
		s := done.Submission
		require.True(t, strings.HasPrefix(s.ID, "sub_"), s.ID)
		require.Equal(t, svctype.ExecutionWorkflowRun, s.TriggeredExecutionType)
		require.Empty(t, s.SubmittedBy)
		require.Equal(t, "Thanks", done.Settings.SuccessMessage)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "acme", s.TriggeredRunID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, map[string]any{"email": "ada@example.com", "kind": "refund"}, doc.Context["input"])
		require.NotContains(t, doc.Context, engine.SubmittedByKey)
		rows, err := b.Eng.ReadRows(b.Ctx, "acme", "intake", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "ada@example.com", rows[0].Data["email"])

		subs, err = b.Eng.ListFormSubmissions(b.Ctx, "acme", f.ID, svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, subs.Items, 1)
		require.JSONEq(t, `{"email": "ada@example.com", "kind": "refund"}`, string(subs.Items[0].Payload))
		require.Equal(t, s.TriggeredRunID, subs.Items[0].TriggeredRunID)
		_, err = b.Eng.ListFormSubmissions(b.Ctx, "other", f.ID, svctype.ListOptions{})
		require.ErrorIs(t, err, engine.ErrNotFound)

		names, payloads := orgEvents(t, b, "acme")
		require.Equal(t, engine.EventExternalFormSubmitted, names[len(names)-1])
		ev := payloads[len(payloads)-1]
		require.Equal(t, s.ID, ev["submission_id"])
		require.Equal(t, s.TriggeredRunID, ev["triggered_run_id"])
		require.Equal(t, true, ev["has_triggered_workflow"])
		require.NotContains(t, ev, "submitted_by")
	})
}

func TestPublicSubmissionRefusals(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := intakeSetup(t, b, "acme")
		create := func(change func(*engine.ExternalFormInput)) *svctype.ExternalForm {
			t.Helper()
			in := intakeForm(wf)
			change(&in)
			f, err := b.Eng.CreateExternalForm(b.Ctx, "acme", in)
			require.NoError(t, err)
			return f
		}
		valid := map[string]any{"email": "ada@example.com"}
		submit := func(id, by string) error {
			_, err := b.Eng.SubmitPublicForm(b.Ctx, id, engine.PublicSubmission{Payload: valid, SubmittedBy: by})
			return err
		}

		private := create(func(in *engine.ExternalFormInput) { in.IsPublic = false })
		_, _, err := b.Eng.PublicForm(b.Ctx, private.ID)
		require.ErrorIs(t, err, engine.ErrNotFound, "not public")
		require.ErrorIs(t, submit(private.ID, ""), engine.ErrNotFound)
		for _, id := range []string{"frm-nope", "frm-", "run-1", strings.Replace(private.ID, "frm-", "frm-b3RoZXI", 1),
			"frm-b3RoZXI." + strings.Repeat("0", 32)} {
			require.ErrorIs(t, submit(id, ""), engine.ErrNotFound, id)
		}

		past := time.Now().Add(-time.Minute)
		expired := create(func(in *engine.ExternalFormInput) { in.ExpiresAt = &past })
		_, open, err := b.Eng.PublicForm(b.Ctx, expired.ID)
		require.NoError(t, err)
		require.False(t, open)
		require.ErrorIs(t, submit(expired.ID, ""), engine.ErrFormExpired)

		signin := create(func(in *engine.ExternalFormInput) { in.Settings.RequireAuth = true })
		require.ErrorIs(t, submit(signin.ID, ""), engine.ErrFormSigninRequired)
		require.ErrorIs(t, submit(signin.ID, "  "), engine.ErrFormSigninRequired)

		gone := create(func(*engine.ExternalFormInput) {})
		require.NoError(t, b.Eng.DeleteWorkflow(b.Ctx, "acme", wf))
		require.ErrorIs(t, submit(gone.ID, ""), engine.ErrFormTriggerMissing)
		require.ErrorIs(t, submit(gone.ID, ""), engine.ErrConflict)

		// Nothing of any of them was stored or started.
		for _, f := range []*svctype.ExternalForm{private, expired, signin, gone} {
			subs, err := b.Eng.ListFormSubmissions(b.Ctx, "acme", f.ID, svctype.ListOptions{})
			require.NoError(t, err)
			require.Empty(t, subs.Items, f.Name)
		}
		runs, err := b.Eng.ListRuns(b.Ctx, "acme", engine.RunFilter{})
		require.NoError(t, err)
		require.Empty(t, runs.Items)
		names, _ := orgEvents(t, b, "acme")
		for _, n := range names {
			require.NotEqual(t, engine.EventExternalFormSubmitted, n)
		}
	})
}

func TestSignedInSubmissionIsRecorded(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := intakeSetup(t, b, "acme")
		in := intakeForm(wf)
		in.Settings.RequireAuth = true
		f, err := b.Eng.CreateExternalForm(b.Ctx, "acme", in)
		require.NoError(t, err)
		// A registration for the event gets a delivery of it, made in the submit's transaction.
		hook, err := b.Eng.CreateWebhook(b.Ctx, "acme", engine.WebhookInput{Event: engine.EventExternalFormSubmitted, URL: "https://93.184.215.14/intake"})
		require.NoError(t, err)
		done, err := b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{
			Payload: map[string]any{"email": "ada@example.com"}, SubmittedBy: "grace@acme.example"})
		require.NoError(t, err)
		require.Equal(t, "grace@acme.example", done.Submission.SubmittedBy)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "acme", done.Submission.TriggeredRunID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, "grace@acme.example", doc.Context[engine.SubmittedByKey], "the run records who submitted")
		rows, err := b.Eng.ReadRows(b.Ctx, "acme", "intake", nil, 0)
		require.NoError(t, err)
		require.Equal(t, "grace@acme.example", rows[0].Data["who"])
		_, payloads := orgEvents(t, b, "acme")
		require.Equal(t, "grace@acme.example", payloads[len(payloads)-1]["submitted_by"])
		ds, err := b.Eng.ListDeliveries(b.Ctx, "acme", hook.ID, svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, ds.Items, 1)
		require.Equal(t, engine.EventExternalFormSubmitted, ds.Items[0].Event)
	})
}

func TestFormWithoutTriggerOnlyStores(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		in := intakeForm("")
		f, err := b.Eng.CreateExternalForm(b.Ctx, "o", in)
		require.NoError(t, err)
		done, err := b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"email": "ada@example.com"}})
		require.NoError(t, err)
		require.Empty(t, done.Submission.TriggeredRunID)
		_, payloads := orgEvents(t, b, "o")
		ev := payloads[len(payloads)-1]
		require.Equal(t, false, ev["has_triggered_workflow"])
		require.Contains(t, ev, "triggered_run_id")
		require.Nil(t, ev["triggered_run_id"])
	})
}

// TestSubmissionAndDeleteDoNotInterleave: a DELETE of a form waits for a submission in
// flight (which holds the form's row), and then removes that submission too: none outlives
// its form. On PostgreSQL this is the row lock; on SQLite the one writer.
func TestSubmissionAndDeleteDoNotInterleave(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		f, err := b.Eng.CreateExternalForm(b.Ctx, "o", intakeForm(""))
		require.NoError(t, err)
		locked := make(chan struct{})
		deleted := make(chan error, 1)
		submitted := make(chan error, 1)
		go func() {
			submitted <- b.St.InTx(b.Ctx, func(ctx context.Context, stx engine.Tx) error {
				tx := extforms.Tx(stx)
				if _, err := tx.LockExternalForm(ctx, "o", f.ID, false); err != nil {
					return err
				}
				close(locked)
				// The submission goes on only once the delete waits for it.
				waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := store.WaitBlockedBehind(waitCtx, b.St.(*store.Store), stx); err != nil {
					return fmt.Errorf("the delete never waited for the submission: %w", err)
				}
				select {
				case err := <-deleted:
					return fmt.Errorf("the delete went through while a submission held the form (err %v)", err)
				default:
				}
				return tx.CreateFormSubmission(ctx, &svctype.FormSubmission{ID: "sub_in-flight", OrgID: "o", FormID: f.ID,
					Payload: json.RawMessage(`{}`), SubmittedAt: time.Now()})
			})
		}()
		<-locked
		go func() { deleted <- b.Eng.DeleteExternalForm(b.Ctx, "o", f.ID) }()
		require.NoError(t, <-submitted)
		require.NoError(t, <-deleted)
		left, err := b.St.ListFormSubmissions(b.Ctx, "o", f.ID, svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, left.Items, "a submission outlived its form")
	})
}

func TestExternalFormTimesAreBounded(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)} {
			in := intakeForm("")
			in.ExpiresAt = &at
			_, err := b.Eng.CreateExternalForm(b.Ctx, "o", in)
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve, at)
			require.Equal(t, "/expires_at", ve.Problems[0].Pointer)
		}
		page, err := b.Eng.ListExternalForms(b.Ctx, "o", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
	})
}
