package runtime_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// publishedProcess creates a process and publishes its bundle twice (workflow version 2),
// returning the process and its workflow id.
func (b *bundle) publishedProcess(t *testing.T, org string) (processDoc, string) {
	t.Helper()
	prj := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/process-studio/projects", org, map[string]any{"name": "Customers"}), http.StatusCreated)
	proc := ok[processDoc](t, b.do(t, http.MethodPost, "/process-studio/processes", org,
		map[string]any{"project_id": prj.ID, "name": "Onboarding"}), http.StatusCreated)
	var workflowID string
	for range 2 {
		bnd := ok[bundleDoc](t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/compose-from-workflow-dsl", org,
			map[string]any{"dsl": json.RawMessage(onboardingBundle)}), http.StatusCreated)
		pub := ok[struct {
			WorkflowID string `json:"workflow_id"`
		}](t, b.do(t, http.MethodPost, "/process-studio/bundles/"+bnd.ID+"/publish", org, map[string]any{}), http.StatusOK)
		workflowID = pub.WorkflowID
	}
	return proc, workflowID
}

type versionDoc struct {
	Status          string `json:"status"`
	WorkflowVersion int    `json:"workflow_version"`
	Steps           []any  `json:"steps"`
}

// TestProcessRunsPublishedVersionOverHTTP: after PUT /workflows/{workflowId} edits a published
// process's workflow (version 3), the process's execute and an external form naming the
// process still run the published version 2; GET of the process says which it runs.
func TestProcessRunsPublishedVersionOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proc, workflowID := b.publishedProcess(t, orgA)
	edited := ok[workflowDoc](t, b.do(t, http.MethodPut, "/workflows/"+workflowID, orgA,
		workflowBody("Onboarding", `{"actions": [{"type": "save-customer", "properties": {}}, {"type": "save-customer", "properties": {}}]}`)), http.StatusOK)
	require.Equal(t, 3, edited.Version)

	run := ok[runRef](t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/execute", orgA,
		map[string]any{"input": map[string]any{"email": "ada@example.com"}}), http.StatusAccepted)
	f := b.createForm(t, orgA, map[string]any{"name": "Join", "is_public": true, "trigger_process_id": proc.ID, "schema": json.RawMessage(contactSchema)})
	sub := ok[submitDoc](t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": "grace@example.com"}), http.StatusCreated)
	require.NotNil(t, sub.TriggeredRunID)
	b.work(t)
	for _, id := range []string{run.ID, *sub.TriggeredRunID} {
		st := ok[versionDoc](t, b.do(t, http.MethodGet, "/runs/"+id+"/status", orgA, nil), http.StatusOK)
		require.Equal(t, "completed", st.Status)
		require.Equal(t, 2, st.WorkflowVersion, "the published version, not the edit")
		require.Len(t, st.Steps, 1)
	}
	got := ok[struct {
		WorkflowVersion int `json:"workflow_version"`
	}](t, b.do(t, http.MethodGet, "/process-studio/processes/"+proc.ID, orgA, nil), http.StatusOK)
	require.Equal(t, 2, got.WorkflowVersion, "the process says which version it runs")
}

// TestDeleteProcessWorkflowOverHTTP: DELETE /workflows/{workflowId} of a workflow a process
// publishes is 409 workflow_owned_by_process naming the process, and nothing changes:
// execute, publish and an external form naming the process go on working.
func TestDeleteProcessWorkflowOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proc, workflowID := b.publishedProcess(t, orgA)
	p := problem(t, b.do(t, http.MethodDelete, "/workflows/"+workflowID, orgA, nil), http.StatusConflict, "workflow_owned_by_process")
	require.Contains(t, p.Detail, proc.ID)
	require.Contains(t, p.Detail, "Onboarding")
	problem(t, b.do(t, http.MethodDelete, "/workflows/"+workflowID, orgB, nil), http.StatusNotFound, "not_found")
	ok[workflowDoc](t, b.do(t, http.MethodGet, "/workflows/"+workflowID, orgA, nil), http.StatusOK)

	ok[runRef](t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/execute", orgA,
		map[string]any{"input": map[string]any{"email": "ada@example.com"}}), http.StatusAccepted)
	bnd := ok[bundleDoc](t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/compose-from-workflow-dsl", orgA,
		map[string]any{"dsl": json.RawMessage(onboardingBundle)}), http.StatusCreated)
	ok[struct{}](t, b.do(t, http.MethodPost, "/process-studio/bundles/"+bnd.ID+"/publish", orgA, map[string]any{}), http.StatusOK)
	f := b.createForm(t, orgA, map[string]any{"name": "Join", "is_public": true, "trigger_process_id": proc.ID, "schema": json.RawMessage(contactSchema)})
	ok[submitDoc](t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": "grace@example.com"}), http.StatusCreated)

	// A workflow of no process is deleted as before.
	w := b.createWorkflow(t, orgA, "plain")
	rec := b.do(t, http.MethodDelete, "/workflows/"+w.ID, orgA, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
}

// TestIdempotencyKeyReusedOverHTTP: the same Idempotency-Key with the same body (written
// otherwise) answers the first run; with another input or on another workflow it is 422
// idempotency_key_reused, located at the header, and starts nothing.
func TestIdempotencyKeyReusedOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createWorkflow(t, orgA, "signup")
	other := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("other", upsertDefinition)), http.StatusCreated)
	const key = "Idempotency-Key: signup-42"
	first := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA,
		`{"input": {"email": "ada@example.com", "name": "Ada"}}`, key), http.StatusAccepted)
	same := ok[runRef](t, b.do(t, http.MethodPost, "/workflows/"+w.ID+"/execute", orgA,
		`{"input": {"name": "Ada",   "email": "ada@example.com"}}`, key), http.StatusAccepted)
	require.Equal(t, first.ID, same.ID)

	for _, c := range []struct{ path, body string }{
		{"/workflows/" + w.ID + "/execute", `{"input": {"email": "grace@example.com", "name": "Grace"}}`},
		{"/workflows/" + w.ID + "/execute", `{}`},
		{"/workflows/" + other.ID + "/execute", `{"input": {"email": "ada@example.com", "name": "Ada"}}`},
	} {
		p := problem(t, b.do(t, http.MethodPost, c.path, orgA, c.body, key), http.StatusUnprocessableEntity, "idempotency_key_reused")
		require.Len(t, p.Errors, 1)
		require.Equal(t, "header.Idempotency-Key", p.Errors[0].Location)
	}
	runs := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs", orgA, nil), http.StatusOK)
	require.Len(t, runs.Items, 1, "a refused key starts nothing")
}
