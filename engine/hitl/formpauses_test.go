package hitl_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

const formFlow = `{"actions": [
	{"type": "PbotForm", "properties": {"expected_keys": ["iban", "holder"],
		"schema": {"type": "object", "properties": {"iban": {"type": "string", "title": "IBAN"}}, "required": ["iban"]}}},
	{"type": "custom-table", "properties": {"table": "payees", "operation": "write", "fields": {"iban": "@iban", "holder": "@holder"}}}
]}`

func formSetup(t *testing.T, b *enginetest.Bundle, def string) string {
	t.Helper()
	_, err := b.Eng.CreateTable(b.Ctx, "o", "payees", map[string]string{"iban": "text", "holder": "text"})
	require.NoError(t, err)
	w := b.Workflow(t, "o", "collect", def)
	require.Empty(t, w.Warnings)
	return w.ID
}

func TestFormPauseSubmitResumesOnce(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := formSetup(t, b, formFlow)
		doc := b.Execute(t, "o", wf, `{}`)
		require.Equal(t, svctype.RunPaused, doc.Status)
		p, err := b.Eng.FormPause(b.Ctx, "o", doc.ID, 0)
		require.NoError(t, err)
		require.Equal(t, svctype.FormPauseOpen, p.Status)
		require.Equal(t, []string{"iban", "holder"}, p.ExpectedKeys)
		var schema forms.Schema
		require.NoError(t, json.Unmarshal(p.Schema, &schema))
		_, hasIBAN := schema.Field("iban")
		_, hasHolder := schema.Field("holder")
		require.True(t, hasIBAN && hasHolder, "the authored (JSON-Schema) shape normalised, the missing key added")
		pending, err := b.Eng.PendingForms(b.Ctx, "o", svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, pending.Items, 1)

		// A submit missing an expected key changes nothing.
		_, err = b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE02"}})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Contains(t, ve.Error(), "holder")
		p, err = b.Eng.FormPause(b.Ctx, "o", doc.ID, 0)
		require.NoError(t, err)
		require.Equal(t, svctype.FormPauseOpen, p.Status)
		_, err = b.Eng.SubmitForm(b.Ctx, "other-org", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "x", "holder": "y"}})
		require.ErrorIs(t, err, engine.ErrNotFound)

		sub, err := b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE02 1203", "holder": "Ada"}})
		require.NoError(t, err)
		require.Regexp(t, `^sub_`, sub.SubmissionID)
		_, err = b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "x", "holder": "y"}})
		require.ErrorIs(t, err, engine.ErrConflict, "a second submit")

		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, "Ada", doc.Context["holder"])
		rows, err := b.Eng.ReadRows(b.Ctx, "o", "payees", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "DE02 1203", rows[0].Data["iban"])
		evs := b.Events(t, "o", doc.ID)
		require.Contains(t, evs, engine.EventFormPauseCreated)
		require.Contains(t, evs, engine.EventFormSubmitted)
	})
}

// Two (eight) submits racing: exactly one wins, the others are 409.
func TestFormSubmitsRacing(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := formSetup(t, b, formFlow)
		doc := b.Execute(t, "o", wf, `{}`)
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Go(func() {
				_, results[i] = b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE", "holder": "racer"}})
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
		_, err := b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		rows, err := b.Eng.ReadRows(b.Ctx, "o", "payees", nil, 0)
		require.NoError(t, err)
		require.Len(t, rows, 1, "resumed exactly once")
	})
}

// ttl_seconds: the worker closes the pause, emits form_expired, and the run goes on without
// submission data; a reminder fires before it.
func TestFormPauseExpiresAndReminds(t *testing.T) {
	t.Parallel()
	clk := enginetest.NewClock(time.Now())
	b := enginetest.Setup(t, "sqlite", engine.Config{Now: clk.Now})
	wf := formSetup(t, b, `{"actions": [
		{"type": "PbotForm", "properties": {"expected_keys": ["note"], "ttl_seconds": 0.4, "reminder_intervals": [0.1, 30]}},
		{"type": "custom-table", "properties": {"table": "payees", "operation": "write", "fields": {"holder": "{{note}}"}}}]}`)
	doc := b.Execute(t, "o", wf, `{}`)
	require.Equal(t, svctype.RunPaused, doc.Status)
	_, err := b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	require.NotContains(t, b.Events(t, "o", doc.ID), engine.EventFormReminder, "not before it is due")
	clk.Advance(200 * time.Millisecond)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	require.Contains(t, b.Events(t, "o", doc.ID), engine.EventFormReminder, "the first reminder fired")
	clk.Advance(300 * time.Millisecond)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.NotContains(t, doc.Context, "note")
	evs := b.Events(t, "o", doc.ID)
	require.Contains(t, evs, engine.EventFormExpired)
	reminders := 0
	for _, e := range evs {
		if e == engine.EventFormReminder {
			reminders++
		}
	}
	require.Equal(t, 1, reminders, "the 30 s reminder went with the pause")
	p, err := b.Eng.FormPause(b.Ctx, "o", doc.ID, 0)
	require.NoError(t, err)
	require.Equal(t, svctype.FormPauseExpired, p.Status)
	_, err = b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"note": "late"}})
	require.ErrorIs(t, err, engine.ErrConflict)
}

func TestFormPausePropertiesAreChecked(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	_, err := b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "bad", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["Bad Key"], "ttl_seconds": -1, "reminder_intervals": [0]}}]}`)})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 3)
	_, err = b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "none", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {}}]}`)})
	require.ErrorAs(t, err, &ve)
	_, err = b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "generated", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "intent": 7, "hints": "formal"}}]}`)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []string{"/definition/actions/0/properties/intent", "/definition/actions/0/properties/hints"},
		[]string{ve.Problems[0].Pointer, ve.Problems[1].Pointer})
	// Timers past ten years would overflow a duration into the past.
	_, err = b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "forever", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "ttl_seconds": 1e12, "reminder_intervals": [60, 1e12]}}]}`)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []string{"/definition/actions/0/properties/ttl_seconds", "/definition/actions/0/properties/reminder_intervals/1"},
		[]string{ve.Problems[0].Pointer, ve.Problems[1].Pointer})
}

// Cancelling a paused run closes what it waits for: the approval or the form is cancelled
// (a decision or a submit is then 409) and its timers go.
func TestCancelClosesThePause(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	fw := b.Workflow(t, "o", "form", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "ttl_seconds": 3600, "reminder_intervals": [60]}}]}`)
	aw := b.Workflow(t, "o", "approval", `{"actions": [{"type": "PbotApproval", "properties": {"expires_in_seconds": 3600}}]}`)
	form := b.Execute(t, "o", fw.ID, `{}`)
	approval := b.Execute(t, "o", aw.ID, `{}`)
	for _, id := range []string{form.ID, approval.ID} {
		_, err := b.Eng.CancelRun(b.Ctx, "o", id, "not needed", engine.Actor{Type: "user", ID: "ada"})
		require.NoError(t, err)
	}
	p, err := b.Eng.FormPause(b.Ctx, "o", form.ID, 0)
	require.NoError(t, err)
	require.Equal(t, svctype.FormPauseCancelled, p.Status)
	_, err = b.Eng.SubmitForm(b.Ctx, "o", form.ID, 0, engine.FormSubmission{Data: map[string]any{"x": "1"}})
	require.ErrorIs(t, err, engine.ErrConflict)
	pending, err := b.Eng.ListApprovals(b.Ctx, "o", engine.ApprovalFilter{Status: svctype.ApprovalPending})
	require.NoError(t, err)
	require.Empty(t, pending.Items)
	require.Zero(t, store.CountAllJobs(t, b.St), "no timer left")
}

// A PbotForm step's assignee_role is the pause's: kept with it (each dialect), on its
// pending list, in form_pause_created and its effect; a step without one leaves it empty.
// A role the gateway could never give a person is refused when the workflow is created.
func TestFormPauseAssigneeRole(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := b.Workflow(t, "o", "kyc", `{"actions": [
			{"type": "PbotForm", "properties": {"expected_keys": ["iban"], "assignee_role": "finance"}},
			{"type": "PbotForm", "properties": {"expected_keys": ["note"]}}]}`)
		doc := b.Execute(t, "o", wf.ID, `{}`)
		p, err := b.Eng.FormPause(b.Ctx, "o", doc.ID, 0)
		require.NoError(t, err)
		require.Equal(t, "finance", p.AssigneeRole)
		pending, err := b.Eng.PendingForms(b.Ctx, "o", svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, pending.Items, 1)
		require.Equal(t, "finance", pending.Items[0].AssigneeRole)
		require.Equal(t, "finance", b.EventPayload(t, "o", doc.ID, engine.EventFormPauseCreated)["assignee_role"])

		_, err = b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"iban": "DE02"}, ClaimedBy: "ann@example.com"})
		require.NoError(t, err)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		p, err = b.Eng.FormPause(b.Ctx, "o", doc.ID, 1)
		require.NoError(t, err)
		require.Equal(t, svctype.FormPauseOpen, p.Status)
		require.Empty(t, p.AssigneeRole, "a step without a role: any person of the organization")
	})

	b := enginetest.Setup(t, "sqlite")
	for _, role := range []string{`""`, `" finance"`, `7`, `"` + strings.Repeat("r", 101) + `"`} {
		_, err := b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "bad", Definition: json.RawMessage(
			`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["x"], "assignee_role": ` + role + `}}]}`)})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, role)
		require.Equal(t, "/definition/actions/0/properties/assignee_role", ve.Problems[0].Pointer, role)
	}
}
