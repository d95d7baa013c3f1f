package engine_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

const formFlow = `{"actions": [
	{"type": "PbotForm", "properties": {"expected_keys": ["iban", "holder"],
		"schema": {"type": "object", "properties": {"iban": {"type": "string", "title": "IBAN"}}, "required": ["iban"]}}},
	{"type": "custom-table", "properties": {"table": "payees", "operation": "write", "fields": {"iban": "@iban", "holder": "@holder"}}}
]}`

func formSetup(t *testing.T, b *bundle, def string) string {
	t.Helper()
	_, err := b.eng.CreateTable(b.ctx, "o", "payees", map[string]string{"iban": "text", "holder": "text"})
	require.NoError(t, err)
	w := b.workflow(t, "o", "collect", def)
	require.Empty(t, w.Warnings)
	return w.ID
}

func TestFormPauseSubmitResumesOnce(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *bundle) {
		wf := formSetup(t, b, formFlow)
		doc := b.execute(t, "o", wf, `{}`)
		require.Equal(t, svctype.RunPaused, doc.Status)
		p, err := b.eng.FormPause(b.ctx, "o", doc.ID, 0)
		require.NoError(t, err)
		require.Equal(t, svctype.FormPauseOpen, p.Status)
		require.Equal(t, []string{"iban", "holder"}, p.ExpectedKeys)
		var schema forms.Schema
		require.NoError(t, json.Unmarshal(p.Schema, &schema))
		_, hasIBAN := schema.Field("iban")
		_, hasHolder := schema.Field("holder")
		require.True(t, hasIBAN && hasHolder, "the authored (JSON-Schema) shape normalised, the missing key added")
		pending, err := b.eng.PendingForms(b.ctx, "o", svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, pending.Items, 1)

		// A submit missing an expected key changes nothing.
		_, err = b.eng.SubmitForm(b.ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE02"}})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Contains(t, ve.Error(), "holder")
		p, err = b.eng.FormPause(b.ctx, "o", doc.ID, 0)
		require.NoError(t, err)
		require.Equal(t, svctype.FormPauseOpen, p.Status)
		_, err = b.eng.SubmitForm(b.ctx, "other-org", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "x", "holder": "y"}})
		require.ErrorIs(t, err, engine.ErrNotFound)

		sub, err := b.eng.SubmitForm(b.ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE02 1203", "holder": "Ada"}})
		require.NoError(t, err)
		require.Regexp(t, `^sub_`, sub.SubmissionID)
		_, err = b.eng.SubmitForm(b.ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "x", "holder": "y"}})
		require.ErrorIs(t, err, engine.ErrConflict, "a second submit")

		_, err = b.eng.Work(b.ctx)
		require.NoError(t, err)
		doc, err = b.eng.RunStatus(b.ctx, "o", doc.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, "Ada", doc.Context["holder"])
		rows, err := b.eng.ReadRows(b.ctx, "o", "payees", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "DE02 1203", rows[0].Data["iban"])
		evs := b.events(t, "o", doc.ID)
		require.Contains(t, evs, engine.EventFormPauseCreated)
		require.Contains(t, evs, engine.EventFormSubmitted)
	})
}

// Two (eight) submits racing: exactly one wins, the others are 409.
func TestFormSubmitsRacing(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *bundle) {
		wf := formSetup(t, b, formFlow)
		doc := b.execute(t, "o", wf, `{}`)
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Go(func() {
				_, results[i] = b.eng.SubmitForm(b.ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE", "holder": "racer"}})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range results {
			if err == nil {
				won++
				continue
			}
			require.True(t, errors.Is(err, engine.ErrConflict), "%v", err)
		}
		require.Equal(t, 1, won)
		_, err := b.eng.Work(b.ctx)
		require.NoError(t, err)
		rows, err := b.eng.ReadRows(b.ctx, "o", "payees", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1, "resumed exactly once")
	})
}

// ttl_seconds: the worker closes the pause, emits form_expired, and the run goes on without
// submission data; a reminder fires before it.
func TestFormPauseExpiresAndReminds(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	wf := formSetup(t, b, `{"actions": [
		{"type": "PbotForm", "properties": {"expected_keys": ["note"], "ttl_seconds": 0.4, "reminder_intervals": [0.1, 30]}},
		{"type": "custom-table", "properties": {"table": "payees", "operation": "write", "fields": {"holder": "{{note}}"}}}]}`)
	doc := b.execute(t, "o", wf, `{}`)
	require.Equal(t, svctype.RunPaused, doc.Status)
	time.Sleep(200 * time.Millisecond)
	_, err := b.eng.Work(b.ctx)
	require.NoError(t, err)
	require.Contains(t, b.events(t, "o", doc.ID), engine.EventFormReminder, "the first reminder fired")
	time.Sleep(300 * time.Millisecond)
	_, err = b.eng.Work(b.ctx)
	require.NoError(t, err)
	doc, err = b.eng.RunStatus(b.ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.NotContains(t, doc.Context, "note")
	evs := b.events(t, "o", doc.ID)
	require.Contains(t, evs, engine.EventFormExpired)
	reminders := 0
	for _, e := range evs {
		if e == engine.EventFormReminder {
			reminders++
		}
	}
	require.Equal(t, 1, reminders, "the 30 s reminder went with the pause")
	p, err := b.eng.FormPause(b.ctx, "o", doc.ID, 0)
	require.NoError(t, err)
	require.Equal(t, svctype.FormPauseExpired, p.Status)
	_, err = b.eng.SubmitForm(b.ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"note": "late"}})
	require.ErrorIs(t, err, engine.ErrConflict)
}

func TestFormPausePropertiesAreChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	_, err := b.eng.CreateWorkflow(b.ctx, "o", engine.WorkflowInput{Name: "bad", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["Bad Key"], "ttl_seconds": -1, "reminder_intervals": [0]}}]}`)})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 3)
	_, err = b.eng.CreateWorkflow(b.ctx, "o", engine.WorkflowInput{Name: "none", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {}}]}`)})
	require.ErrorAs(t, err, &ve)
	_, err = b.eng.CreateWorkflow(b.ctx, "o", engine.WorkflowInput{Name: "generated", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "intent": 7, "hints": "formal"}}]}`)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []string{"/definition/actions/0/properties/intent", "/definition/actions/0/properties/hints"},
		[]string{ve.Problems[0].Pointer, ve.Problems[1].Pointer})
	// Timers past ten years would overflow a duration into the past.
	_, err = b.eng.CreateWorkflow(b.ctx, "o", engine.WorkflowInput{Name: "forever", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "ttl_seconds": 1e12, "reminder_intervals": [60, 1e12]}}]}`)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []string{"/definition/actions/0/properties/ttl_seconds", "/definition/actions/0/properties/reminder_intervals/1"},
		[]string{ve.Problems[0].Pointer, ve.Problems[1].Pointer})
}

// Cancelling a paused run closes what it waits for: the approval or the form is cancelled
// (a decision or a submit is then 409) and its timers go.
func TestCancelClosesThePause(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	fw := b.workflow(t, "o", "form", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "ttl_seconds": 3600, "reminder_intervals": [60]}}]}`)
	aw := b.workflow(t, "o", "approval", `{"actions": [{"type": "PbotApproval", "properties": {"expires_in_seconds": 3600}}]}`)
	form := b.execute(t, "o", fw.ID, `{}`)
	approval := b.execute(t, "o", aw.ID, `{}`)
	for _, id := range []string{form.ID, approval.ID} {
		_, err := b.eng.CancelRun(b.ctx, "o", id, "not needed", engine.Actor{Type: "user", ID: "ada"})
		require.NoError(t, err)
	}
	p, err := b.eng.FormPause(b.ctx, "o", form.ID, 0)
	require.NoError(t, err)
	require.Equal(t, svctype.FormPauseCancelled, p.Status)
	_, err = b.eng.SubmitForm(b.ctx, "o", form.ID, 0, engine.FormSubmission{Data: map[string]any{"x": "1"}})
	require.ErrorIs(t, err, engine.ErrConflict)
	pending, err := b.eng.ListApprovals(b.ctx, "o", engine.ApprovalFilter{Status: svctype.ApprovalPending})
	require.NoError(t, err)
	require.Empty(t, pending.Items)
	require.Zero(t, store.CountAllJobs(t, b.st), "no timer left")
}
