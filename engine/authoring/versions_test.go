package authoring_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// emailSchema is an external form with one required email.
const emailSchema = `{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [
	{"key": "email", "type": "email", "label": "Email", "required": true}]}]}`

// editedDefinition is what an edit outside the studio puts: one step instead of the
// bundle's two.
const editedDefinition = `{"actions": [{"type": "custom-table", "properties": {"table": "onboarding_log", "operation": "write", "keys": ["email"], "values": ["edited"]}}]}`

// ranVersion runs the engine's work and returns the version and step count a run ran.
func ranVersion(t *testing.T, b *enginetest.Bundle, org, runID string) (int, int) {
	t.Helper()
	_, err := b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err := b.Eng.RunStatus(b.Ctx, org, runID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, doc.Status, "run %s: %s", runID, doc.Reason)
	return doc.WorkflowVersion, len(doc.Steps)
}

// TestProcessRunsItsPublishedVersion: the process records the workflow version its
// publication put, and execute and an external form naming the process run that version:
// an edit of the workflow outside the studio (PUT /workflows/{id}) changes nothing until a
// bundle is published again.
func TestProcessRunsItsPublishedVersion(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		proc, bnd := studio(t, b, "o1")
		_, err := b.Eng.Publish(b.Ctx, "o1", bnd.ID, "")
		require.NoError(t, err)
		b2, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: json.RawMessage(onboardingDSL)})
		require.NoError(t, err)
		pub, err := b.Eng.Publish(b.Ctx, "o1", b2.ID, "")
		require.NoError(t, err)
		require.Equal(t, 2, pub.Workflow.Version)
		require.Equal(t, 2, pub.Process.WorkflowVersion, "the process records the version it published")
		require.Equal(t, 2, pub.Bundle.WorkflowVersion, "and so does the bundle")

		edited, err := b.Eng.UpdateWorkflow(b.Ctx, "o1", pub.Workflow.ID, engine.WorkflowInput{Name: "Onboarding", Definition: json.RawMessage(editedDefinition)})
		require.NoError(t, err)
		require.Equal(t, 3, edited.Version)

		run, err := b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{"email": "ada@example.com", "name": "Ada"}`))
		require.NoError(t, err)
		require.Equal(t, 2, run.WorkflowVersion)
		version, steps := ranVersion(t, b, "o1", run.ID)
		require.Equal(t, 2, version, "execute runs the published version, not the edit")
		require.Equal(t, 2, steps)

		f, err := b.Eng.CreateExternalForm(b.Ctx, "o1", engine.ExternalFormInput{Name: "Join", IsPublic: true,
			TriggerProcessID: proc.ID, Schema: json.RawMessage(emailSchema)})
		require.NoError(t, err)
		sub, err := b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"email": "grace@example.com"}})
		require.NoError(t, err)
		version, steps = ranVersion(t, b, "o1", sub.Submission.TriggeredRunID)
		require.Equal(t, 2, version, "a form naming the process runs the published version too")
		require.Equal(t, 2, steps)

		// The workflow's own route runs its latest version.
		direct := b.Execute(t, "o1", pub.Workflow.ID, `{"email": "lin@example.com"}`)
		require.Equal(t, 3, direct.WorkflowVersion)

		// Publishing again puts a new version (4), which the process runs from then on.
		b3, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: json.RawMessage(onboardingDSL)})
		require.NoError(t, err)
		pub3, err := b.Eng.Publish(b.Ctx, "o1", b3.ID, "")
		require.NoError(t, err)
		require.Equal(t, 4, pub3.Workflow.Version)
		run, err = b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{"email": "ada@example.com"}`))
		require.NoError(t, err)
		version, _ = ranVersion(t, b, "o1", run.ID)
		require.Equal(t, 4, version)
		sub, err = b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"email": "grace@example.com"}})
		require.NoError(t, err)
		version, _ = ranVersion(t, b, "o1", sub.Submission.TriggeredRunID)
		require.Equal(t, 4, version)
	})
}

// TestProcessWorkflowIsNotDeleted: deleting the workflow a process publishes is refused
// (a WorkflowOwnedError naming the process, an ErrConflict) and nothing is deleted, so
// execute, publish and external forms keep working; a workflow of no process is deleted.
// A process whose workflow was deleted before this was refused is not published (execute
// is ErrProcessNotPublished, a form naming it is refused, a form's submission is
// ErrFormTriggerMissing) until a publication creates its workflow again.
func TestProcessWorkflowIsNotDeleted(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		proc, bnd := studio(t, b, "o1")
		pub, err := b.Eng.Publish(b.Ctx, "o1", bnd.ID, "")
		require.NoError(t, err)

		err = b.Eng.DeleteWorkflow(b.Ctx, "o1", pub.Workflow.ID)
		var owned *engine.WorkflowOwnedError
		require.True(t, errors.As(err, &owned), "%v", err)
		require.Equal(t, proc.ID, owned.ProcessID)
		require.Equal(t, "Onboarding", owned.ProcessName)
		require.ErrorIs(t, err, engine.ErrConflict)
		_, err = b.Eng.GetWorkflow(b.Ctx, "o1", pub.Workflow.ID)
		require.NoError(t, err, "nothing was deleted")
		require.ErrorIs(t, b.Eng.DeleteWorkflow(b.Ctx, "o2", pub.Workflow.ID), engine.ErrNotFound, "another organization's workflow is not found")

		run, err := b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{"email": "ada@example.com"}`))
		require.NoError(t, err)
		ranVersion(t, b, "o1", run.ID)
		f, err := b.Eng.CreateExternalForm(b.Ctx, "o1", engine.ExternalFormInput{Name: "Join", IsPublic: true,
			TriggerProcessID: proc.ID, Schema: json.RawMessage(emailSchema)})
		require.NoError(t, err)
		b2, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: json.RawMessage(onboardingDSL)})
		require.NoError(t, err)
		_, err = b.Eng.Publish(b.Ctx, "o1", b2.ID, "")
		require.NoError(t, err)

		plain := b.Workflow(t, "o1", "plain", editedDefinition)
		require.NoError(t, b.Eng.DeleteWorkflow(b.Ctx, "o1", plain.ID), "a workflow no process publishes is deleted")

		// A workflow deleted before deleting was refused (here: under the hook, in the store).
		require.NoError(t, b.St.DeleteWorkflow(b.Ctx, "o1", pub.Workflow.ID))
		_, err = b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{}`))
		require.ErrorIs(t, err, engine.ErrProcessNotPublished)
		_, err = b.Eng.CreateExternalForm(b.Ctx, "o1", engine.ExternalFormInput{Name: "Join again", IsPublic: true,
			TriggerProcessID: proc.ID, Schema: json.RawMessage(emailSchema)})
		problems(t, err, "/trigger_process_id")
		_, err = b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"email": "grace@example.com"}})
		require.ErrorIs(t, err, engine.ErrFormTriggerMissing)

		b3, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: json.RawMessage(onboardingDSL)})
		require.NoError(t, err)
		again, err := b.Eng.Publish(b.Ctx, "o1", b3.ID, "")
		require.NoError(t, err, "publishing creates the process's workflow again")
		require.NotEqual(t, pub.Workflow.ID, again.Workflow.ID)
		require.Equal(t, again.Workflow.ID, again.Process.WorkflowID)
		require.Equal(t, 1, again.Process.WorkflowVersion)
		run, err = b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{"email": "ada@example.com"}`))
		require.NoError(t, err)
		ranVersion(t, b, "o1", run.ID)
		sub, err := b.Eng.SubmitPublicForm(b.Ctx, f.ID, engine.PublicSubmission{Payload: map[string]any{"email": "grace@example.com"}})
		require.NoError(t, err)
		ranVersion(t, b, "o1", sub.Submission.TriggeredRunID)
	})
}
