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

// onboardingDSL registers a custom-table action and creates the table it writes; the
// workflow upserts the new customer through the action, then asks for an approval.
const onboardingDSL = `{
  "svc_workflow_definition": {"actions": [
    {"type": "save-customer", "properties": {}},
    {"type": "custom-table", "properties": {"table": "onboarding_log", "operation": "write", "keys": ["email"], "values": ["{{input.email}}"]}}
  ]},
  "actions_to_register": [
    {"action_name": "save-customer", "kind": "custom-table", "description": "Stores a customer",
     "properties": {"table": "customers_new", "operation": "upsert", "keys": ["email"], "values": ["{{input.email}}"], "fields": {"name": "{{input.name}}"}}}
  ],
  "custom_tables_to_create": [
    {"name": "customers_new", "fields": {"email": "text", "name": "text"}},
    {"name": "onboarding_log", "fields": {"email": "text"}}
  ],
  "workflow_description": "Onboard a customer"
}`

func studio(t *testing.T, b *enginetest.Bundle, org string) (*svctype.Process, *svctype.Bundle) {
	t.Helper()
	prj, err := b.Eng.CreateProject(b.Ctx, org, "Customers", "onboarding and care")
	require.NoError(t, err)
	proc, err := b.Eng.CreateProcess(b.Ctx, org, svctype.Process{ProjectID: prj.ID, Name: "Onboarding", AuthoringMode: "process_first"})
	require.NoError(t, err)
	bnd, err := b.Eng.Compose(b.Ctx, org, proc.ID, engine.Compose{DeploymentShape: "single_workflow", Summary: "v1", DSL: json.RawMessage(onboardingDSL)})
	require.NoError(t, err)
	return proc, bnd
}

// TestComposePublishExecute: a composed bundle is a draft; publishing registers its
// action, creates its tables and puts its workflow, at once; the process then runs it,
// and writes through what the bundle brought.
func TestComposePublishExecute(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		proc, bnd := studio(t, b, "o1")
		require.Equal(t, svctype.BundleDraft, bnd.Status)
		require.Equal(t, 1, bnd.Version)

		_, err := b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{}`))
		require.ErrorIs(t, err, engine.ErrProcessNotPublished, "nothing is published yet")
		_, err = b.Eng.GetAction(b.Ctx, "o1", "save-customer")
		require.ErrorIs(t, err, engine.ErrNotFound, "composing registers nothing")

		pub, err := b.Eng.Publish(b.Ctx, "o1", bnd.ID, "first release")
		require.NoError(t, err)
		require.Equal(t, []string{"save-customer"}, pub.Actions)
		require.ElementsMatch(t, []string{"customers_new", "onboarding_log"}, pub.TablesCreated)
		require.Equal(t, svctype.BundlePublished, pub.Bundle.Status)
		require.Equal(t, pub.Workflow.ID, pub.Process.WorkflowID)
		require.Equal(t, "/process-studio/processes/"+proc.ID+"/execute", pub.ExecutePath)
		_, err = b.Eng.Publish(b.Ctx, "o1", bnd.ID, "again")
		require.ErrorIs(t, err, engine.ErrBundlePublished)

		run, err := b.Eng.ExecuteProcess(b.Ctx, "o1", proc.ID, json.RawMessage(`{"email": "ada@example.com", "name": "Ada"}`))
		require.NoError(t, err)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status)
		rows, err := b.Eng.ReadRows(b.Ctx, "o1", "customers_new", map[string]any{"email": "ada@example.com"}, 10)
		require.NoError(t, err)
		require.Len(t, rows, 1)

		// A second bundle of the same process: version 2, an update of the same workflow;
		// the existing tables and action are kept.
		b2, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: json.RawMessage(onboardingDSL)})
		require.NoError(t, err)
		require.Equal(t, 2, b2.Version)
		pub2, err := b.Eng.Publish(b.Ctx, "o1", b2.ID, "")
		require.NoError(t, err)
		require.Equal(t, pub.Workflow.ID, pub2.Workflow.ID)
		require.Equal(t, 2, pub2.Workflow.Version)
		require.Equal(t, []string{"save-customer"}, pub2.ActionsKept)
		require.ElementsMatch(t, []string{"customers_new", "onboarding_log"}, pub2.TablesKept)

		// The publication was announced.
		evs, err := b.St.ListRunEvents(b.Ctx, "o1", "", svctype.ListOptions{Limit: 100})
		require.NoError(t, err)
		n := 0
		for _, e := range evs.Items {
			if e.Event == "workflow_creation_status" {
				var p map[string]any
				require.NoError(t, json.Unmarshal(e.Payload, &p))
				require.Equal(t, proc.ID, p["process_id"])
				require.Equal(t, "published", p["status"])
				n++
			}
		}
		require.Equal(t, 2, n)

		// Another organization sees none of it.
		_, err = b.Eng.GetProcess(b.Ctx, "o2", proc.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.Publish(b.Ctx, "o2", b2.ID, "")
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.ExecuteProcess(b.Ctx, "o2", proc.ID, nil)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

// TestComposeRefusesWhatWouldNotRun: a DSL that fails any check is refused with each
// problem located, and nothing is written.
func TestComposeRefusesWhatWouldNotRun(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		prj, err := b.Eng.CreateProject(b.Ctx, "o1", "P", "")
		require.NoError(t, err)
		proc, err := b.Eng.CreateProcess(b.Ctx, "o1", svctype.Process{ProjectID: prj.ID, Name: "X"})
		require.NoError(t, err)
		_, err = b.Eng.CreateProcess(b.Ctx, "o1", svctype.Process{ProjectID: prj.ID, Name: "X"})
		require.ErrorIs(t, err, engine.ErrConflict, "a name once per project")
		_, err = b.Eng.CreateProcess(b.Ctx, "o1", svctype.Process{ProjectID: "prj_nope", Name: "Y"})
		problems(t, err, "/project_id")
		_, err = b.Eng.CreateProcess(b.Ctx, "o1", svctype.Process{ProjectID: prj.ID, Name: "Z", AuthoringMode: "chaos"})
		problems(t, err, "/authoring_mode")

		for _, tc := range []struct {
			dsl  string
			want []string
		}{
			{`{"svc_workflow_definition": {"actions": [{"type": "no-such-step", "properties": {}}]}}`, []string{"/dsl/svc_workflow_definition/actions/0/type"}},
			{`{"svc_workflow_definition": {"actions": [{"type": "custom-table", "properties": {"table": "ghosts", "operation": "write", "keys": ["k"], "values": ["v"]}}]}}`,
				[]string{"/dsl/custom_tables_to_create"}},
			{`{"svc_workflow_definition": {"actions": []}, "actions_to_register": [{"action_name": "a", "kind": "teleport"}]}`, []string{"/dsl/actions_to_register/0/kind"}},
			{`{"svc_workflow_definition": {"actions": []}, "custom_tables_to_create": [{"name": "9bad", "fields": {"x": "text"}}]}`, []string{"/dsl/custom_tables_to_create/0/name"}},
			{`{"actions_to_register": []}`, []string{"/dsl/svc_workflow_definition"}},
			{`{"svc_workflow_definition": {"actions": []}, "surprise": 1}`, []string{"/dsl"}},
		} {
			_, err := b.Eng.Compose(b.Ctx, "o1", proc.ID, engine.Compose{DSL: json.RawMessage(tc.dsl)})
			problems(t, err, tc.want...)
		}
		_, err = b.Eng.Compose(b.Ctx, "o1", "prc_nope", engine.Compose{DSL: json.RawMessage(onboardingDSL)})
		require.ErrorIs(t, err, engine.ErrNotFound)
		tbls, err := b.Eng.ListTables(b.Ctx, "o1", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, tbls.Items, "nothing written")
	})
}

// TestPublishIsAllOrNothing: a table that exists with another column type makes the
// publication a conflict naming the column, and none of the bundle's action, other tables
// or workflow is left behind.
func TestPublishIsAllOrNothing(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		proc, bnd := studio(t, b, "o1")
		_, err := b.Eng.CreateTable(b.Ctx, "o1", "onboarding_log", map[string]string{"email": "number"})
		require.NoError(t, err)
		_, err = b.Eng.Publish(b.Ctx, "o1", bnd.ID, "")
		require.ErrorIs(t, err, engine.ErrConflict)
		require.Contains(t, err.Error(), `"email"`)
		_, err = b.Eng.GetAction(b.Ctx, "o1", "save-customer")
		require.ErrorIs(t, err, engine.ErrNotFound, "the action was not left registered")
		_, err = b.Eng.ReadRows(b.Ctx, "o1", "customers_new", nil, 1)
		require.ErrorIs(t, err, engine.ErrNotFound, "the other table was not left created")
		wfs, err := b.Eng.ListWorkflows(b.Ctx, "o1", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, wfs.Items)
		got, err := b.Eng.GetBundle(b.Ctx, "o1", bnd.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.BundleDraft, got.Status)
		p, err := b.Eng.GetProcess(b.Ctx, "o1", proc.ID)
		require.NoError(t, err)
		require.Empty(t, p.PublishedBundleID)
	})
}

func problems(t *testing.T, err error, pointers ...string) {
	t.Helper()
	var ve *engine.ValidationError
	require.True(t, errors.As(err, &ve), "want a validation error, got %v", err)
	got := map[string]bool{}
	for _, p := range ve.Problems {
		got[p.Pointer] = true
	}
	for _, p := range pointers {
		require.True(t, got[p], "no problem at %s in %v", p, ve.Problems)
	}
}
