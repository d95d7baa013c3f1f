package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Generated form schemas: one row per PbotForm step of a workflow version whose schema the
// organization's model drafted (svctype.GeneratedFormSchema).

type generatedFormSchemaModel struct {
	bun.BaseModel `bun:"table:generated_form_schemas,alias:gfs"`

	OrgID           string          `bun:"org_id,pk"`
	WorkflowID      string          `bun:"workflow_id,pk"`
	WorkflowVersion int             `bun:"workflow_version,pk"`
	StepIndex       int             `bun:"step_index,pk"`
	OnFalse         int             `bun:"on_false,pk"`
	Schema          json.RawMessage `bun:"schema,type:text,notnull"`
	Attempts        int             `bun:"attempts,notnull"`
	CreatedAt       time.Time       `bun:"created_at,notnull"`
}

func (m *generatedFormSchemaModel) toGeneratedFormSchema() *svctype.GeneratedFormSchema {
	return &svctype.GeneratedFormSchema{
		FormSchemaKey: svctype.FormSchemaKey{OrgID: m.OrgID, WorkflowID: m.WorkflowID, WorkflowVersion: m.WorkflowVersion,
			StepIndex: m.StepIndex, OnFalse: m.OnFalse},
		Schema: m.Schema, Attempts: m.Attempts, CreatedAt: m.CreatedAt.UTC(),
	}
}

// GeneratedFormSchema returns the schema kept for the step at k (ErrNotFound when none).
func (q *querier) GeneratedFormSchema(ctx context.Context, k svctype.FormSchemaKey) (*svctype.GeneratedFormSchema, error) {
	var m generatedFormSchemaModel
	err := q.w.NewSelect().Model(&m).
		Where("org_id = ? AND workflow_id = ? AND workflow_version = ? AND step_index = ? AND on_false = ?",
			k.OrgID, k.WorkflowID, k.WorkflowVersion, k.StepIndex, k.OnFalse).
		Scan(ctx)
	if err != nil {
		return nil, wrap("get generated form schema", err)
	}
	return m.toGeneratedFormSchema(), nil
}

// KeepGeneratedFormSchema inserts s unless a schema is kept for its step already, and
// returns the one kept: of two runs that drafted a schema for the same step at the same
// time, the first to commit wins and the second gets the first's.
func (q *querier) KeepGeneratedFormSchema(ctx context.Context, s *svctype.GeneratedFormSchema) (*svctype.GeneratedFormSchema, error) {
	m := generatedFormSchemaModel{OrgID: s.OrgID, WorkflowID: s.WorkflowID, WorkflowVersion: s.WorkflowVersion,
		StepIndex: s.StepIndex, OnFalse: s.OnFalse, Schema: s.Schema, Attempts: s.Attempts, CreatedAt: orNow(s.CreatedAt, now())}
	_, err := q.w.NewInsert().Model(&m).
		On("CONFLICT (org_id, workflow_id, workflow_version, step_index, on_false) DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, wrap("keep generated form schema", err)
	}
	return q.GeneratedFormSchema(ctx, s.FormSchemaKey)
}
