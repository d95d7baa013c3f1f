package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// The bundle of an onboarding process: an action that upserts the customer into a table
// the bundle creates.
const onboardingBundle = `{
  "svc_workflow_definition": {"actions": [{"type": "save-customer", "properties": {}}]},
  "actions_to_register": [{"action_name": "save-customer", "kind": "custom-table",
    "properties": {"table": "studio_customers", "operation": "upsert", "keys": ["email"], "values": ["{{input.email}}"]}}],
  "custom_tables_to_create": [{"name": "studio_customers", "fields": {"email": "text"}}],
  "workflow_description": "Onboard a customer"
}`

type processDoc struct {
	ID                string `json:"id"`
	WorkflowID        string `json:"workflow_id"`
	PublishedBundleID string `json:"published_bundle_id"`
}

type bundleDoc struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	Status  string `json:"status"`
}

// TestProcessStudioRoutes: project, process, compose, publish, execute over HTTP; the
// refusals each with a code; an external form starting the published process.
func TestProcessStudioRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prj := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/process-studio/projects", orgA, map[string]any{"name": "Customers"}), http.StatusCreated)
	problem(t, b.do(t, http.MethodPost, "/process-studio/projects", orgA, map[string]any{"name": ""}), http.StatusUnprocessableEntity, "validation_failed")
	proc := ok[processDoc](t, b.do(t, http.MethodPost, "/process-studio/processes", orgA,
		map[string]any{"project_id": prj.ID, "name": "Onboarding", "authoring_mode": "process_first"}), http.StatusCreated)
	problem(t, b.do(t, http.MethodPost, "/process-studio/processes", orgA,
		map[string]any{"project_id": prj.ID, "name": "Onboarding"}), http.StatusConflict, "conflict")

	// Not published yet.
	problem(t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/execute", orgA, map[string]any{"input": map[string]any{}}),
		http.StatusConflict, "process_not_published")

	// A DSL that would not run: 422 under /dsl, nothing written.
	bad := problem(t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/compose-from-workflow-dsl", orgA,
		map[string]any{"dsl": json.RawMessage(`{"svc_workflow_definition": {"actions": [{"type": "nowhere", "properties": {}}]}}`)}),
		http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, "/dsl/svc_workflow_definition/actions/0/type", bad.Errors[0].Pointer)

	bnd := ok[bundleDoc](t, b.do(t, http.MethodPost, "/process-studio/processes/"+proc.ID+"/compose-from-workflow-dsl", orgA,
		map[string]any{"deployment_shape": "single_workflow", "summary": "first", "dsl": json.RawMessage(onboardingBundle)}), http.StatusCreated)
	require.Equal(t, 1, bnd.Version)
	require.Equal(t, "draft", bnd.Status)

	pub := ok[struct {
		WorkflowID  string   `json:"workflow_id"`
		Actions     []string `json:"actions_registered"`
		Tables      []string `json:"tables_created"`
		ExecutePath string   `json:"execute_path"`
		Bundle      bundleDoc
	}](t, b.do(t, http.MethodPost, "/process-studio/bundles/"+bnd.ID+"/publish", orgA, map[string]any{"publish_note": "go"}), http.StatusOK)
	require.Equal(t, []string{"save-customer"}, pub.Actions)
	require.Equal(t, []string{"studio_customers"}, pub.Tables)
	require.Equal(t, "published", pub.Bundle.Status)
	require.Equal(t, "/process-studio/processes/"+proc.ID+"/execute", pub.ExecutePath)
	problem(t, b.do(t, http.MethodPost, "/process-studio/bundles/"+bnd.ID+"/publish", orgA, map[string]any{}), http.StatusConflict, "bundle_published")

	run := ok[struct{ ID, Status string }](t, b.do(t, http.MethodPost, pub.ExecutePath, orgA,
		map[string]any{"input": map[string]any{"email": "ada@example.com"}}), http.StatusAccepted)
	require.Equal(t, "running", run.Status)
	b.work(t)
	st := ok[struct{ Status string }](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", st.Status)

	// An external form may start the published process.
	problem(t, b.do(t, http.MethodPost, "/external-forms", orgA, map[string]any{"name": "Join", "is_public": true,
		"trigger_process_id": "prc_nope", "schema": json.RawMessage(contactSchema)}), http.StatusUnprocessableEntity, "validation_failed")
	f := b.createForm(t, orgA, map[string]any{"name": "Join", "is_public": true, "trigger_process_id": proc.ID, "schema": json.RawMessage(contactSchema)})
	res := ok[submitDoc](t, b.do(t, http.MethodPost, "/forms/public/"+f.ID+"/submit", "", map[string]any{"email": "grace@example.com"}), http.StatusCreated)
	require.NotNil(t, res.TriggeredRunID)
	b.work(t)
	rows := ok[struct{ Items []map[string]any }](t, b.do(t, http.MethodGet, "/custom-tables/studio_customers/rows", orgA, nil), http.StatusOK)
	require.Len(t, rows.Items, 2, "the execute and the form's run both wrote through the published action")

	// The legacy route is gone, with a pointer.
	gone := problem(t, b.do(t, http.MethodPost, "/workflows/create-from-ai", orgA, map[string]any{"prompt": "x"}), http.StatusGone, "create_from_ai_gone")
	require.Contains(t, gone.Detail, "/ai/generate-workflow")
}

// TestDraftingRoutes: a generation answers at once and is followed to its end (here
// failed: the organization has no model key); bad input is refused with codes.
func TestDraftingRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := ok[struct {
		ID      string `json:"generation_id"`
		Status  string
		Message string
	}](t, b.do(t, http.MethodPost, "/ai/generate-workflow", orgA, map[string]any{"prompt": "reconcile the bank statement",
		"llmOptions": map[string]any{"model": "gpt-4o-mini", "temperature": 0.2}}), http.StatusAccepted)
	require.Equal(t, "processing", g.Status)
	require.Contains(t, g.Message, g.ID)
	st := ok[struct{ Status string }](t, b.do(t, http.MethodGet, "/ai/generate-workflow/"+g.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "processing", st.Status)
	b.work(t)
	done := ok[struct {
		Status   string
		Attempts int
		Errors   []string
	}](t, b.do(t, http.MethodGet, "/ai/generate-workflow/"+g.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "failed", done.Status)
	require.Contains(t, done.Errors[0], engine.LLMAPIKey)
	full := ok[map[string]any](t, b.do(t, http.MethodGet, "/ai/generate-workflow/"+g.ID, orgA, nil), http.StatusOK)
	require.Equal(t, "reconcile the bank statement", full["prompt"])
	problem(t, b.do(t, http.MethodGet, "/ai/generate-workflow/"+g.ID, orgB, nil), http.StatusNotFound, "not_found")

	long := make([]byte, 20_001)
	for i := range long {
		long[i] = 'x'
	}
	problem(t, b.do(t, http.MethodPost, "/ai/generate-workflow", orgA, map[string]any{"prompt": string(long)}), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/ai/generate-workflow", orgA, map[string]any{"prompt": "x", "llmOptions": map[string]any{"temperature": 5}}),
		http.StatusUnprocessableEntity, "validation_failed")
	prj := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/process-studio/projects", orgA, map[string]any{"name": "Drafts"}), http.StatusCreated)
	problem(t, b.do(t, http.MethodPost, "/process-studio/processes/create-from-prompt", orgA, map[string]any{"project_id": prj.ID, "prompt": "x"}),
		http.StatusConflict, "model_not_configured")
	problem(t, b.do(t, http.MethodPost, "/process-studio/processes/create-from-prompt", orgA, map[string]any{"project_id": "prj_nope", "prompt": "x"}),
		http.StatusUnprocessableEntity, "validation_failed")
}

// TestLegacyCreateFromAIWhenKept: with the deployment's switch on, the legacy route drafts
// and publishes at once, in a project of its own made on first use.
func TestLegacyCreateFromAIWhenKept(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	reply := `{"workflow_name": "Log tickets", "svc_workflow_definition": {"actions": [
	  {"type": "custom-table", "properties": {"table": "legacy_log", "operation": "write", "keys": ["subject"], "values": ["{{input.subject}}"]}}]},
	  "actions_to_register": [], "custom_tables_to_create": [{"name": "legacy_log", "fields": {"subject": "text"}}],
	  "workflow_description": "logs", "external_dependency_notes": []}`
	model := agent.ModelFunc(func(context.Context, agent.Request) (*agent.Response, error) {
		return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: reply}, FinishReason: agent.FinishStop}, nil
	})
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t),
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return model, nil }})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	_, _, err = eng.SetOrgConfig(context.Background(), orgA, engine.LLMAPIKey, "sk-legacy")
	require.NoError(t, err)
	srv := runtime.New(eng, runtime.Options{Logger: testlog.Quiet(), LegacyCreateFromAI: true})
	b := &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API(), logs: &bytes.Buffer{}}

	for i := range 2 {
		res := ok[struct {
			WorkflowID string `json:"workflow_id"`
			ProcessID  string `json:"process_id"`
		}](t, b.do(t, http.MethodPost, "/workflows/create-from-ai", orgA, map[string]any{"prompt": "log each ticket", "name": fmt.Sprintf("Log %d", i)}), http.StatusCreated)
		require.NotEmpty(t, res.WorkflowID)
		run := ok[struct{ ID string }](t, b.do(t, http.MethodPost, "/workflows/"+res.WorkflowID+"/execute", orgA,
			map[string]any{"input": map[string]any{"subject": "hi"}}), http.StatusAccepted)
		require.NotEmpty(t, run.ID)
	}
	projects := ok[struct{ Items []struct{ Name string } }](t, b.do(t, http.MethodGet, "/process-studio/projects", orgA, nil), http.StatusOK)
	require.Len(t, projects.Items, 1, "one legacy project, made on first use")
	require.Equal(t, "Legacy create-from-ai", projects.Items[0].Name)
	problem(t, b.do(t, http.MethodPost, "/workflows/create-from-ai", orgB, map[string]any{"prompt": "x"}), http.StatusConflict, "model_not_configured")
}
