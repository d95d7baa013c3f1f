package runtime_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A cancelled run shows the step it was paused at as cancelled (issue 31: it stayed
// processing), in its status and its evidence, with when it ended.
func TestCancelClosesThePausedStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ name, definition string }{
		{"approval", `{"actions":[{"type":"PbotApproval","properties":{"approver_role":"finance","comment":"Pay?"}}]}`},
		{"form", `{"actions":[{"type":"PbotForm","properties":{"expected_keys":["name"]}}]}`},
	} {
		wf := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("paused-"+tc.name, tc.definition)), http.StatusCreated)
		run := b.execute(t, orgA, wf.ID, map[string]any{"amount": 42})
		b.work(t)
		status := ok[statusDoc](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
		require.Equal(t, "paused", status.Status, tc.name)
		require.Equal(t, "processing", status.Steps[0].Status, tc.name)

		ok[runRef](t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/cancel", orgA, map[string]string{"reason": "not needed"}), http.StatusOK)
		status = ok[statusDoc](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
		require.Equal(t, "cancelled", status.Status, tc.name)
		require.Len(t, status.Steps, 1)
		require.Equal(t, "cancelled", status.Steps[0].Status, tc.name)
		evidence := ok[struct {
			Status string `json:"status"`
			Steps  []struct {
				Status     string  `json:"status"`
				FinishedAt *string `json:"finished_at"`
			} `json:"steps"`
		}](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/evidence", orgA, nil), http.StatusOK)
		require.Equal(t, "cancelled", evidence.Status, tc.name)
		require.Len(t, evidence.Steps, 1)
		require.Equal(t, "cancelled", evidence.Steps[0].Status, tc.name)
		require.NotNil(t, evidence.Steps[0].FinishedAt, tc.name)
	}
}
