package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Form pauses: one row per PbotForm pause.

type formPauseModel struct {
	bun.BaseModel `bun:"table:form_pauses,alias:fp"`

	OrgID             string          `bun:"org_id,pk"`
	ID                string          `bun:"id,pk"`
	RunID             string          `bun:"run_id,notnull"`
	WorkflowID        string          `bun:"workflow_id,notnull"`
	StepIndex         int             `bun:"step_index,notnull"`
	Status            string          `bun:"status,notnull"`
	ExpectedKeys      json.RawMessage `bun:"expected_keys,type:text"`
	AssigneeRole      string          `bun:"assignee_role,notnull"`
	Schema            json.RawMessage `bun:"schema,type:text"`
	ReminderIntervals json.RawMessage `bun:"reminder_intervals,type:text"`
	ExpiresAt         *time.Time      `bun:"expires_at"`
	SubmissionID      string          `bun:"submission_id,notnull"`
	Submission        json.RawMessage `bun:"submission,type:text"`
	SubmittedAt       *time.Time      `bun:"submitted_at"`
	ClaimedBy         string          `bun:"claimed_by,notnull"`
	CreatedAt         time.Time       `bun:"created_at,notnull"`
	UpdatedAt         time.Time       `bun:"updated_at,notnull"`
}

func formPauseToModel(p *svctype.FormPause) (*formPauseModel, error) {
	keys, err := json.Marshal(p.ExpectedKeys)
	if err != nil {
		return nil, err
	}
	var reminders json.RawMessage
	if len(p.ReminderIntervals) > 0 {
		if reminders, err = json.Marshal(p.ReminderIntervals); err != nil {
			return nil, err
		}
	}
	return &formPauseModel{OrgID: p.OrgID, ID: p.ID, RunID: p.RunID, WorkflowID: p.WorkflowID, StepIndex: p.StepIndex,
		Status: string(p.Status), ExpectedKeys: keys, AssigneeRole: p.AssigneeRole, Schema: nonEmpty(p.Schema), ReminderIntervals: reminders,
		ExpiresAt: dbTimePtr(p.ExpiresAt), SubmissionID: p.SubmissionID, Submission: nonEmpty(p.Submission),
		SubmittedAt: dbTimePtr(p.SubmittedAt), ClaimedBy: p.ClaimedBy, CreatedAt: dbTime(p.CreatedAt), UpdatedAt: dbTime(p.UpdatedAt)}, nil
}

func (m *formPauseModel) toFormPause() (svctype.FormPause, error) {
	p := svctype.FormPause{OrgID: m.OrgID, ID: m.ID, RunID: m.RunID, WorkflowID: m.WorkflowID, StepIndex: m.StepIndex,
		Status: svctype.FormPauseStatus(m.Status), AssigneeRole: m.AssigneeRole, Schema: m.Schema, ExpiresAt: utcPtr(m.ExpiresAt),
		SubmissionID: m.SubmissionID, Submission: m.Submission, SubmittedAt: utcPtr(m.SubmittedAt), ClaimedBy: m.ClaimedBy,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	if len(m.ExpectedKeys) > 0 {
		if err := json.Unmarshal(m.ExpectedKeys, &p.ExpectedKeys); err != nil {
			return p, err
		}
	}
	if len(m.ReminderIntervals) > 0 {
		if err := json.Unmarshal(m.ReminderIntervals, &p.ReminderIntervals); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (q *querier) CreateFormPause(ctx context.Context, p *svctype.FormPause) error {
	m, err := formPauseToModel(p)
	if err != nil {
		return wrap("create form pause", err)
	}
	_, err = q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create form pause", err)
}

func (q *querier) GetFormPause(ctx context.Context, orgID, id string) (*svctype.FormPause, error) {
	var m formPauseModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get form pause", err)
	}
	p, err := m.toFormPause()
	return &p, err
}

// FormPauseAt returns the run's latest pause at step (ErrNotFound when it has none).
func (q *querier) FormPauseAt(ctx context.Context, orgID, runID string, step int) (*svctype.FormPause, error) {
	var m formPauseModel
	err := q.w.NewSelect().Model(&m).Where("org_id = ? AND run_id = ? AND step_index = ?", orgID, runID, step).
		OrderExpr("created_at DESC, id DESC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, wrap("form pause at step", err)
	}
	p, err := m.toFormPause()
	return &p, err
}

// CloseFormPause writes p's status, submission and times if the stored pause is still open:
// ErrConflict when it was closed meanwhile (of two racing submits, one wins).
func (q *querier) CloseFormPause(ctx context.Context, p *svctype.FormPause) error {
	const op = "close form pause"
	m, err := formPauseToModel(p)
	if err != nil {
		return wrap(op, err)
	}
	res, err := q.w.NewUpdate().Model(m).
		Column("status", "submission_id", "submission", "submitted_at", "claimed_by", "updated_at").
		Where("org_id = ? AND id = ? AND status = ?", p.OrgID, p.ID, string(svctype.FormPauseOpen)).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
}

// ListFormPauses pages an organization's pauses newest first (those in status, when set).
func (q *querier) ListFormPauses(ctx context.Context, orgID string, status svctype.FormPauseStatus, opts svctype.ListOptions) (svctype.Page[svctype.FormPause], error) {
	sel := q.r.NewSelect().Model((*formPauseModel)(nil)).Where("org_id = ?", orgID)
	if status != "" {
		sel = sel.Where("status = ?", string(status))
	}
	return pageByCreated(ctx, "list form pauses", sel, true, opts,
		func(m *formPauseModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*formPauseModel).toFormPause)
}
