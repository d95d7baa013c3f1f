package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// External forms and their submissions. Every query names the org: the public routes take
// the org from the form id (engine.ExternalFormOrg) before they reach the store.

type externalFormModel struct {
	bun.BaseModel `bun:"table:external_forms,alias:ef"`

	OrgID             string          `bun:"org_id,pk"`
	ID                string          `bun:"id,pk"`
	Name              string          `bun:"name,notnull"`
	Description       string          `bun:"description,notnull"`
	IsPublic          bool            `bun:"is_public,notnull"`
	ExpiresAt         *time.Time      `bun:"expires_at"`
	TriggerWorkflowID string          `bun:"trigger_workflow_id,notnull"`
	TriggerProcessID  string          `bun:"trigger_process_id,notnull"`
	Schema            json.RawMessage `bun:"schema,type:text"`
	Settings          json.RawMessage `bun:"settings,type:text"`
	CreatedAt         time.Time       `bun:"created_at,notnull"`
	UpdatedAt         time.Time       `bun:"updated_at,notnull"`
}

func externalFormToModel(f *svctype.ExternalForm) (*externalFormModel, error) {
	settings, err := json.Marshal(f.Settings)
	if err != nil {
		return nil, err
	}
	return &externalFormModel{OrgID: f.OrgID, ID: f.ID, Name: f.Name, Description: f.Description, IsPublic: f.IsPublic,
		ExpiresAt: dbTimePtr(f.ExpiresAt), TriggerWorkflowID: f.TriggerWorkflowID, TriggerProcessID: f.TriggerProcessID,
		Schema: nonEmpty(f.Schema), Settings: settings, CreatedAt: dbTime(f.CreatedAt), UpdatedAt: dbTime(f.UpdatedAt)}, nil
}

func (m *externalFormModel) toExternalForm() (svctype.ExternalForm, error) {
	f := svctype.ExternalForm{OrgID: m.OrgID, ID: m.ID, Name: m.Name, Description: m.Description, IsPublic: m.IsPublic,
		ExpiresAt: utcPtr(m.ExpiresAt), TriggerWorkflowID: m.TriggerWorkflowID, TriggerProcessID: m.TriggerProcessID,
		Schema: m.Schema, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	if len(m.Settings) > 0 {
		if err := json.Unmarshal(m.Settings, &f.Settings); err != nil {
			return f, err
		}
	}
	return f, nil
}

type formSubmissionModel struct {
	bun.BaseModel `bun:"table:form_submissions,alias:fs"`

	OrgID                  string          `bun:"org_id,pk"`
	ID                     string          `bun:"id,pk"`
	FormID                 string          `bun:"form_id,notnull"`
	Payload                json.RawMessage `bun:"payload,type:text"`
	TriggeredRunID         string          `bun:"triggered_run_id,notnull"`
	TriggeredExecutionType string          `bun:"triggered_execution_type,notnull"`
	SubmittedBy            string          `bun:"submitted_by,notnull"`
	CreatedAt              time.Time       `bun:"created_at,notnull"`
}

func (m *formSubmissionModel) toFormSubmission() (svctype.FormSubmission, error) {
	return svctype.FormSubmission{OrgID: m.OrgID, ID: m.ID, FormID: m.FormID, Payload: m.Payload,
		TriggeredRunID: m.TriggeredRunID, TriggeredExecutionType: m.TriggeredExecutionType,
		SubmittedBy: m.SubmittedBy, SubmittedAt: m.CreatedAt.UTC()}, nil
}

func (q *querier) CreateExternalForm(ctx context.Context, f *svctype.ExternalForm) error {
	m, err := externalFormToModel(f)
	if err != nil {
		return wrap("create external form", err)
	}
	_, err = q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create external form", err)
}

func (q *querier) GetExternalForm(ctx context.Context, orgID, id string) (*svctype.ExternalForm, error) {
	var m externalFormModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get external form", err)
	}
	f, err := m.toExternalForm()
	return &f, wrap("get external form", err)
}

// LockExternalForm reads a form in the current transaction and, on PostgreSQL, locks its
// row until the transaction ends: shared for a submission, exclusive for a change, so a
// submission and a DELETE or PUT of its form never interleave (a submission stored after
// its form's deletion would outlive it). SQLite's one writer serialises them already.
func (q *querier) LockExternalForm(ctx context.Context, orgID, id string, exclusive bool) (*svctype.ExternalForm, error) {
	var m externalFormModel
	sel := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id)
	if q.dialect == dialectPostgres {
		sel = sel.For(map[bool]string{false: "SHARE", true: "UPDATE"}[exclusive])
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, wrap("lock external form", err)
	}
	f, err := m.toExternalForm()
	return &f, wrap("lock external form", err)
}

// ListExternalForms pages an organization's forms newest first.
func (q *querier) ListExternalForms(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.ExternalForm], error) {
	sel := q.r.NewSelect().Model((*externalFormModel)(nil)).Where("org_id = ?", orgID)
	return pageByCreated(ctx, "list external forms", sel, true, opts,
		func(m *externalFormModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*externalFormModel).toExternalForm)
}

// ReplaceExternalForm writes every field of f but CreatedAt; ErrNotFound when there is none.
func (q *querier) ReplaceExternalForm(ctx context.Context, f *svctype.ExternalForm) error {
	const op = "replace external form"
	m, err := externalFormToModel(f)
	if err != nil {
		return wrap(op, err)
	}
	res, err := q.w.NewUpdate().Model(m).ExcludeColumn("org_id", "id", "created_at").
		Where("org_id = ? AND id = ?", f.OrgID, f.ID).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// DeleteExternalForm removes a form and its submissions (the runs they started stay).
func (q *querier) DeleteExternalForm(ctx context.Context, orgID, id string) error {
	const op = "delete external form"
	res, err := q.w.NewDelete().Model((*externalFormModel)(nil)).Where("org_id = ? AND id = ?", orgID, id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	if err := checkAffected(op, res, notFound); err != nil {
		return err
	}
	_, err = q.w.NewDelete().Model((*formSubmissionModel)(nil)).Where("org_id = ? AND form_id = ?", orgID, id).Exec(ctx)
	return wrap(op, err)
}

func (q *querier) CreateFormSubmission(ctx context.Context, s *svctype.FormSubmission) error {
	m := &formSubmissionModel{OrgID: s.OrgID, ID: s.ID, FormID: s.FormID, Payload: nonEmpty(s.Payload),
		TriggeredRunID: s.TriggeredRunID, TriggeredExecutionType: s.TriggeredExecutionType,
		SubmittedBy: s.SubmittedBy, CreatedAt: dbTime(s.SubmittedAt)}
	_, err := q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create form submission", err)
}

// ListFormSubmissions pages a form's submissions newest first.
func (q *querier) ListFormSubmissions(ctx context.Context, orgID, formID string, opts svctype.ListOptions) (svctype.Page[svctype.FormSubmission], error) {
	sel := q.r.NewSelect().Model((*formSubmissionModel)(nil)).Where("org_id = ? AND form_id = ?", orgID, formID)
	return pageByCreated(ctx, "list form submissions", sel, true, opts,
		func(m *formSubmissionModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*formSubmissionModel).toFormSubmission)
}
