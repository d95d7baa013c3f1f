package runtime_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

func TestFormRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("questions",
		`{"actions":[{"type":"PbotForm","properties":{"expected_keys":["company","email"],"ttl_seconds":3600,
		  "schema":{"version":"form_schema_v1","pages":[{"id":"p","fields":[{"key":"email","type":"email","label":"Email"}]}]}}}]}`)), http.StatusCreated)
	run := b.execute(t, orgA, w.ID, nil)
	b.work(t)

	p := ok[svctype.FormPause](t, b.do(t, http.MethodGet, "/forms/"+run.ID+"/0", orgA, nil), http.StatusOK)
	require.Equal(t, svctype.FormPauseOpen, p.Status)
	require.NotNil(t, p.ExpiresAt)
	require.Contains(t, string(p.Schema), `"company"`, "expected keys are fields")
	require.Len(t, ok[list[svctype.FormPause]](t, b.do(t, http.MethodGet, "/forms/pending", orgA, nil), http.StatusOK).Items, 1)
	require.Empty(t, ok[list[svctype.FormPause]](t, b.do(t, http.MethodGet, "/forms/pending", orgB, nil), http.StatusOK).Items)
	problem(t, b.do(t, http.MethodGet, "/forms/"+run.ID+"/0", orgB, nil), http.StatusNotFound, "not_found")

	pr := problem(t, b.do(t, http.MethodPost, "/forms/"+run.ID+"/0/submit", orgA, map[string]any{"data": map[string]any{"email": "ada@example.com"}}),
		http.StatusUnprocessableEntity, "validation_failed")
	require.Contains(t, pr.Detail+pr.Errors[0].Message, "company")
	problem(t, b.do(t, http.MethodPost, "/forms/"+run.ID+"/0/submit", orgA, map[string]any{"data": map[string]any{"email": "not an email", "company": "ACME"}}),
		http.StatusUnprocessableEntity, "validation_failed")

	// Concurrent submits over HTTP: exactly one 200, the rest 409.
	codes := make([]int, 6)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i] = b.do(t, http.MethodPost, "/forms/"+run.ID+"/0/submit", orgA,
				map[string]any{"data": map[string]any{"email": "ada@example.com", "company": "ACME"}}).Code
		})
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		if c == http.StatusOK {
			won++
		} else {
			require.Equal(t, http.StatusConflict, c)
		}
	}
	require.Equal(t, 1, won)
	b.work(t)
	st := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", st["status"])
	require.Equal(t, "ACME", st["context"].(map[string]any)["company"])
	done := ok[svctype.FormPause](t, b.do(t, http.MethodGet, "/forms/"+run.ID+"/0", orgA, nil), http.StatusOK)
	require.Equal(t, svctype.FormPauseSubmitted, done.Status)
	require.JSONEq(t, `{"email": "ada@example.com", "company": "ACME"}`, string(done.Submission))
}

func TestGenerateFormRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := map[string]any{"intent": "collect a supplier's details", "expected_keys": []string{"company", "email"}}
	problem(t, b.do(t, http.MethodPost, "/forms/generate", orgA, body), http.StatusForbidden, "agent_forms_disabled")
	f := ok[map[string]any](t, b.do(t, http.MethodPut, "/org-features", orgA, map[string]any{"agent_forms": true}), http.StatusOK)
	require.Equal(t, true, f["agent_forms"])
	require.Equal(t, false, ok[map[string]any](t, b.do(t, http.MethodGet, "/org-features", orgB, nil), http.StatusOK)["agent_forms"])
	// No api:llm_api_key: one text field per expected key.
	g := ok[map[string]any](t, b.do(t, http.MethodPost, "/forms/generate", orgA, body), http.StatusOK)
	require.Equal(t, "fallback", g["source"])
	require.Contains(t, g, "schema")
	require.EqualValues(t, 1, g["attempts"], "the spec's attempts are 1 or 2: the fallback is the one attempt")
	require.EqualValues(t, 0, g["model_calls"], "no model was called")
	problem(t, b.do(t, http.MethodPost, "/forms/generate", orgA, map[string]any{"intent": "x", "expected_keys": []string{"Bad Key"}}),
		http.StatusUnprocessableEntity, "validation_failed")
	// create stores the schema as an external form; its fields are checked first.
	p := problem(t, b.do(t, http.MethodPost, "/forms/generate", orgA, map[string]any{"intent": "x", "expected_keys": []string{"a"},
		"create": map[string]any{"name": "f", "trigger_workflow_id": "wfl-nope"}}), http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/create/trigger_workflow_id"}, pointers(p))
	require.Empty(t, ok[list[externalFormDoc]](t, b.do(t, http.MethodGet, "/external-forms", orgA, nil), http.StatusOK).Items)
	g = ok[map[string]any](t, b.do(t, http.MethodPost, "/forms/generate", orgA, map[string]any{"intent": "x", "expected_keys": []string{"a"},
		"create": map[string]any{"name": "f", "is_public": true}}), http.StatusOK)
	form, _ := g["form"].(map[string]any)
	require.NotNil(t, form, "%v", g)
	id, _ := form["id"].(string)
	pub := ok[map[string]any](t, b.do(t, http.MethodGet, "/forms/public/"+id, "", nil), http.StatusOK)
	require.Equal(t, g["schema"], pub["schema"])
}
