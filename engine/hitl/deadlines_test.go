package hitl_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A deadline that passed is a deadline: a submit or a decision at or after expires_at is
// refused although the worker's timer has not closed the pause yet, and nothing changes;
// one just before it is taken. (Each dialect.)
func TestDeadlinesAreCheckedAtTheSubmit(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			clk := enginetest.NewClock(time.Now())
			b := enginetest.Setup(t, dialect, engine.Config{Now: clk.Now})
			wf := b.Workflow(t, "o", "deadlines", `{"actions": [
				{"type": "PbotForm", "properties": {"expected_keys": ["note"], "ttl_seconds": 60}},
				{"type": "PbotApproval", "properties": {"approver_role": "finance", "expires_in_seconds": 60}}]}`)
			doc := b.Execute(t, "o", wf.ID, `{}`)
			require.Equal(t, svctype.RunPaused, doc.Status)

			clk.Advance(60 * time.Second) // exactly at expires_at
			_, err := b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"note": "late"}})
			require.ErrorIs(t, err, engine.ErrFormPauseExpired)
			p, err := b.Eng.FormPause(b.Ctx, "o", doc.ID, 0)
			require.NoError(t, err)
			require.Equal(t, svctype.FormPauseOpen, p.Status, "the refusal changed nothing; the timer closes it")

			clk.Advance(-time.Millisecond) // just before
			_, err = b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"note": "in time"}})
			require.NoError(t, err)
			_, err = b.Eng.Work(b.Ctx)
			require.NoError(t, err)
			a, err := b.Eng.PendingApproval(b.Ctx, "o", doc.ID)
			require.NoError(t, err)
			require.NotNil(t, a.ExpiresAt)

			clk.Advance(60*time.Second + 2*time.Millisecond) // 2 ms past the approval's
			_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 1, engine.ApprovalDecision{Approved: true})
			require.ErrorIs(t, err, engine.ErrApprovalExpired)
			a, err = b.Eng.PendingApproval(b.Ctx, "o", doc.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.ApprovalPending, a.Status, "nothing decided")
		})
	}
}

// A reminder due at or after the pause's expiry is not scheduled: it would remind of a
// form that has closed. (Counted as the jobs the pause leaves: its expiry and the reminders
// before it.)
func TestNoReminderAtOrAfterTheExpiry(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	jobs := func() int { return store.CountAllJobs(t, b.St.(*store.Store)) }
	wf := b.Workflow(t, "o", "remind", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["note"],
		"ttl_seconds": 600, "reminder_intervals": [300, 600, 900]}}]}`)
	before := jobs()
	doc := b.Execute(t, "o", wf.ID, `{}`)
	require.Equal(t, svctype.RunPaused, doc.Status)
	p, err := b.Eng.FormPause(b.Ctx, "o", doc.ID, 0)
	require.NoError(t, err)
	require.Equal(t, []float64{300, 600, 900}, p.ReminderIntervals, "as declared")
	require.Equal(t, before+2, jobs(), "the expiry and the reminder at 300 s; none at 600 or 900 s")
}

// Keys the engine owns (input, __...) are no form's to collect: refused as expected keys
// and schema fields when the workflow is created, and in any submission.
func TestFormsCannotSetKeysTheEngineOwns(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	for _, def := range []string{
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["input", "name"]}}]}`,
		`{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["name"], "schema": {"version": "form_schema_v1",
			"pages": [{"id": "p", "fields": [{"key": "name", "type": "text", "label": "Name"}, {"key": "input", "type": "text", "label": "In"}]}]}}}]}`,
	} {
		_, err := b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "owned", Definition: json.RawMessage(def)})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, def)
		require.Contains(t, ve.Error(), "engine owns", def)
	}

	wf := b.Workflow(t, "o", "name", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["name"]}}]}`)
	doc := b.Execute(t, "o", wf.ID, `{"email": "ada@example.com"}`)
	for _, key := range []string{"input", "__approved", "__run_id"} {
		_, err := b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"name": "Ada", key: map[string]any{"email": ""}}})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, key)
		require.Equal(t, "/data/"+key, ve.Problems[0].Pointer)
	}
	_, err := b.Eng.SubmitForm(b.Ctx, "o", doc.ID, 0, engine.FormSubmission{Data: map[string]any{"name": "Ada"}})
	require.NoError(t, err)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"email": "ada@example.com"}, doc.Context["input"], "the run's input is its own")
}
