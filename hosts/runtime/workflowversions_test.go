package runtime_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkflowVersionsOverHTTP: GET /workflows/{id}?version=N answers version N as it was
// stored, after later updates; a version the workflow never had, or another organization's
// workflow, is 404; without ?version= it is the current one.
func TestWorkflowVersionsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v1 := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("Greet", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["a"]}}]}`)), http.StatusCreated)
	ok[workflowDoc](t, b.do(t, http.MethodPut, "/workflows/"+v1.ID, orgA, workflowBody("Greet v2", `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["b"]}}]}`)), http.StatusOK)

	got := ok[workflowDoc](t, b.do(t, http.MethodGet, "/workflows/"+v1.ID+"?version=1", orgA, nil), http.StatusOK)
	require.Equal(t, 1, got.Version)
	require.Equal(t, "Greet", got.Name)
	require.JSONEq(t, string(v1.Definition), string(got.Definition))
	cur := ok[workflowDoc](t, b.do(t, http.MethodGet, "/workflows/"+v1.ID, orgA, nil), http.StatusOK)
	require.Equal(t, 2, cur.Version)
	require.Contains(t, string(cur.Definition), `"b"`)
	same := ok[workflowDoc](t, b.do(t, http.MethodGet, "/workflows/"+v1.ID+"?version=2", orgA, nil), http.StatusOK)
	require.Equal(t, cur, same)

	for _, tc := range []struct {
		path, org string
		status    int
		code      string
	}{
		{"/workflows/" + v1.ID + "?version=3", orgA, http.StatusNotFound, "not_found"},
		{"/workflows/" + v1.ID + "?version=1", orgB, http.StatusNotFound, "not_found"},
		{"/workflows/" + v1.ID + "?version=-1", orgA, http.StatusUnprocessableEntity, "validation_failed"},
		{"/workflows/" + v1.ID + "?version=x", orgA, http.StatusUnprocessableEntity, "validation_failed"},
	} {
		rec := b.do(t, http.MethodGet, tc.path, tc.org, nil)
		require.Equal(t, tc.status, rec.Code, "%s as %s: %s", tc.path, tc.org, rec.Body.String())
		require.Contains(t, rec.Body.String(), `"code":"`+tc.code+`"`, tc.path)
	}
}
