package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Approvals: one row per PbotApproval pause.

type approvalModel struct {
	bun.BaseModel `bun:"table:approvals,alias:ap"`

	OrgID           string          `bun:"org_id,pk"`
	ID              string          `bun:"id,pk"`
	RunID           string          `bun:"run_id,notnull"`
	WorkflowID      string          `bun:"workflow_id,notnull"`
	StepIndex       int             `bun:"step_index,notnull"`
	ApproverRole    string          `bun:"approver_role,notnull"`
	Status          string          `bun:"status,notnull"`
	Comment         string          `bun:"comment,notnull"`
	RequestPayload  json.RawMessage `bun:"request_payload,type:text"`
	ExpiresAt       *time.Time      `bun:"expires_at"`
	Approved        *bool           `bun:"approved"`
	DecisionComment string          `bun:"decision_comment,notnull"`
	DecidedBy       json.RawMessage `bun:"decided_by,type:text"`
	DecidedAt       *time.Time      `bun:"decided_at"`
	CreatedAt       time.Time       `bun:"created_at,notnull"`
}

func approvalToModel(a *svctype.Approval) (*approvalModel, error) {
	m := &approvalModel{OrgID: a.OrgID, ID: a.ID, RunID: a.RunID, WorkflowID: a.WorkflowID, StepIndex: a.StepIndex,
		ApproverRole: a.ApproverRole, Status: string(a.Status), Comment: a.Comment, RequestPayload: nonEmpty(a.RequestPayload),
		ExpiresAt: dbTimePtr(a.ExpiresAt), Approved: a.Approved, DecisionComment: a.DecisionComment,
		DecidedAt: dbTimePtr(a.DecidedAt), CreatedAt: dbTime(a.CreatedAt)}
	if a.DecidedBy != nil {
		b, err := json.Marshal(a.DecidedBy)
		if err != nil {
			return nil, err
		}
		m.DecidedBy = b
	}
	return m, nil
}

func (m *approvalModel) toApproval() (svctype.Approval, error) {
	a := svctype.Approval{OrgID: m.OrgID, ID: m.ID, RunID: m.RunID, WorkflowID: m.WorkflowID, StepIndex: m.StepIndex,
		ApproverRole: m.ApproverRole, Status: svctype.ApprovalStatus(m.Status), Comment: m.Comment,
		RequestPayload: m.RequestPayload, ExpiresAt: utcPtr(m.ExpiresAt), Approved: m.Approved,
		DecisionComment: m.DecisionComment, DecidedAt: utcPtr(m.DecidedAt), CreatedAt: m.CreatedAt.UTC()}
	if len(m.DecidedBy) > 0 {
		a.DecidedBy = &svctype.Actor{}
		if err := json.Unmarshal(m.DecidedBy, a.DecidedBy); err != nil {
			return a, err
		}
	}
	return a, nil
}

func (q *querier) CreateApproval(ctx context.Context, a *svctype.Approval) error {
	m, err := approvalToModel(a)
	if err != nil {
		return wrap("create approval", err)
	}
	_, err = q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create approval", err)
}

// PendingApproval returns the run's pending approval; ErrNotFound when it has none.
func (q *querier) PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error) {
	var m approvalModel
	err := q.w.NewSelect().Model(&m).
		Where("org_id = ? AND run_id = ? AND status = ?", orgID, runID, string(svctype.ApprovalPending)).
		Limit(1).Scan(ctx)
	if err != nil {
		return nil, wrap("pending approval", err)
	}
	a, err := m.toApproval()
	return &a, err
}

func (q *querier) GetApproval(ctx context.Context, orgID, id string) (*svctype.Approval, error) {
	var m approvalModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get approval", err)
	}
	a, err := m.toApproval()
	return &a, err
}

// DecideApproval writes a's decision if it is still pending: ErrConflict when it was decided
// meanwhile.
func (q *querier) DecideApproval(ctx context.Context, a *svctype.Approval) error {
	const op = "decide approval"
	m, err := approvalToModel(a)
	if err != nil {
		return wrap(op, err)
	}
	res, err := q.w.NewUpdate().Model(m).Column("status", "approved", "decision_comment", "decided_by", "decided_at").
		Where("org_id = ? AND id = ? AND status = ?", a.OrgID, a.ID, string(svctype.ApprovalPending)).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
}

// ListApprovals pages an organization's approvals newest first, narrowed by status and role.
func (q *querier) ListApprovals(ctx context.Context, orgID string, f storage.ApprovalFilter) (svctype.Page[svctype.Approval], error) {
	sel := q.r.NewSelect().Model((*approvalModel)(nil)).Where("org_id = ?", orgID)
	if f.Status != "" {
		sel = sel.Where("status = ?", string(f.Status))
	}
	if f.Role != "" {
		sel = sel.Where("approver_role = ?", f.Role)
	}
	return pageByCreated(ctx, "list approvals", sel, true, f.ListOptions,
		func(m *approvalModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*approvalModel).toApproval)
}
