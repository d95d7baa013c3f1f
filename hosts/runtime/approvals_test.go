package runtime_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

func TestApprovalRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("sign-off",
		`{"actions":[{"type":"PbotApproval","properties":{"approver_role":"finance","comment":"Pay {{input.amount}}?","request_payload":{"amount":"@input.amount"}}}]}`)), http.StatusCreated)
	run := b.execute(t, orgA, w.ID, map[string]any{"amount": 42})
	b.work(t)

	a := ok[svctype.Approval](t, b.do(t, http.MethodGet, "/approvals/"+run.ID, orgA, nil), http.StatusOK)
	require.Equal(t, "finance", a.ApproverRole)
	require.Equal(t, "Pay 42?", a.Comment)
	require.JSONEq(t, `{"amount": 42}`, string(a.RequestPayload))
	require.Equal(t, svctype.ApprovalPending, a.Status)
	pending := ok[list[svctype.Approval]](t, b.do(t, http.MethodGet, "/approvals?status=pending&role=finance", orgA, nil), http.StatusOK)
	require.Len(t, pending.Items, 1)
	require.Empty(t, ok[list[svctype.Approval]](t, b.do(t, http.MethodGet, "/approvals?role=legal", orgA, nil), http.StatusOK).Items)

	problem(t, b.do(t, http.MethodGet, "/approvals/"+run.ID, orgB, nil), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodPost, "/approvals/"+run.ID+"/0", orgB, map[string]any{"approved": true}), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodPost, "/approvals/"+run.ID+"/3", orgA, map[string]any{"approved": true}), http.StatusConflict, "conflict")
	problem(t, b.do(t, http.MethodGet, "/approvals?status=maybe", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")

	d := ok[svctype.Approval](t, b.do(t, http.MethodPost, "/approvals/"+run.ID+"/0", orgA, map[string]any{"approved": true, "comment": "fine"}), http.StatusOK)
	require.Equal(t, svctype.ApprovalApproved, d.Status)
	require.Equal(t, "api", d.DecidedBy.Type)
	problem(t, b.do(t, http.MethodPost, "/approvals/"+run.ID+"/0", orgA, map[string]any{"approved": false}), http.StatusConflict, "conflict")
	b.work(t)
	st := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", st["status"])
	require.Equal(t, true, st["context"].(map[string]any)["__approved"])
}
