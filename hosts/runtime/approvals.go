package runtime

import (
	"context"
	"net/http"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// ApprovalDecisionBody is the body of POST /approvals/{runId}/{stepId}.
type ApprovalDecisionBody struct {
	Approved bool   `json:"approved" doc:"true resumes the run; false ends it as rejected (rows already written stay)."`
	Comment  string `json:"comment,omitempty" maxLength:"4000" doc:"Set in the run's context as __comment."`
}

var approvalNotFound = failure{notFound: "run not found",
	conflict: "the run is not waiting for a decision at this step (or it was decided already)"}

func (s *Server) registerApprovals() {
	o := op("get-pending-approval", http.MethodGet, "/approvals/{runId}", "The approval a run is paused at", "Approvals")
	o.Description = "The pending approval of a paused run: approval_id, approver_role, comment, request_payload, " +
		"expires_at. 404 when the run has none pending (or is another organization's)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{notFound: "no pending approval for this run"}, s.getPendingApproval)

	o = op("get-approval", http.MethodGet, "/approvals/by-id/{approvalId}", "One approval by its id", "Approvals")
	o.Description = "Any approval of the organization (pending or decided) by approval_id; 404 for another organization's."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{notFound: "approval not found"}, s.getApproval)

	o = op("list-approvals", http.MethodGet, "/approvals", "The organization's approvals, newest first", "Approvals")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listApprovals)

	o = op("decide-approval", http.MethodPost, "/approvals/{runId}/{stepId}", "Decide the approval a run is paused at", "Approvals")
	o.Description = "Records the decision (the decider is actor api, or actor user with the person's email when the " +
		"gateway vouches for a signed-in person with X-Svc-Identity), sets __approved, __comment and " +
		"__approval_decisions[stepId] in the run's context, emits pbot_approval_decided and resumes the run: " +
		"approved, it continues; rejected, it ends as rejected. stepId is the zero-based step index. 409 when the " +
		"run is not paused at that step or the approval was decided; 410 approval_expired at or after its expires_at."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusGone}
	register(s, o, approvalNotFound, s.decideApproval)
}

func (s *Server) getPendingApproval(ctx context.Context, in *RunPath) (*answer[*svctype.Approval], error) {
	a, err := s.eng.HITL.PendingApproval(ctx, in.OrgID, in.RunID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Approval]{Body: a}, nil
}

type getApprovalInput struct {
	OrgParam
	ApprovalID string `path:"approvalId" maxLength:"100"`
}

func (s *Server) getApproval(ctx context.Context, in *getApprovalInput) (*answer[*svctype.Approval], error) {
	a, err := s.eng.HITL.Approval(ctx, in.OrgID, in.ApprovalID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Approval]{Body: a}, nil
}

type listApprovalsInput struct {
	OrgParam
	Status svctype.ApprovalStatus `query:"status" doc:"Only approvals in this status."`
	Role   string                 `query:"role" maxLength:"100" doc:"Only approvals for this approver_role."`
	Paging
}

func (s *Server) listApprovals(ctx context.Context, in *listApprovalsInput) (*answer[List[svctype.Approval]], error) {
	page, err := s.eng.HITL.ListApprovals(ctx, in.OrgID, engine.ApprovalFilter{Status: in.Status, Role: in.Role, ListOptions: in.options()})
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.Approval]]{Body: listOf(page, same[svctype.Approval])}, nil
}

type decideApprovalInput struct {
	RunPath
	StepID int `path:"stepId" minimum:"0" doc:"The zero-based index of the approval step."`
	IdentityHeader
	Body ApprovalDecisionBody
}

func (s *Server) decideApproval(ctx context.Context, in *decideApprovalInput) (*answer[*svctype.Approval], error) {
	by := engine.Actor{Type: "api"}
	if who := s.person(in.OrgID, in.Identity); who != "" {
		by = engine.Actor{Type: "user", ID: who}
	}
	a, err := s.eng.HITL.DecideApproval(ctx, in.OrgID, in.RunID, in.StepID, engine.ApprovalDecision{
		Approved: in.Body.Approved, Comment: in.Body.Comment, By: by})
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Approval]{Body: a}, nil
}
