package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Organization features: one row per organization that set any.

type orgFeaturesModel struct {
	bun.BaseModel `bun:"table:org_features,alias:of"`

	OrgID      string    `bun:"org_id,pk"`
	AgentForms bool      `bun:"agent_forms,notnull"`
	UpdatedAt  time.Time `bun:"updated_at,notnull"`
}

// GetOrgFeatures returns the organization's features (all off when it set none).
func (q *querier) GetOrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error) {
	var m orgFeaturesModel
	err := q.w.NewSelect().Model(&m).Where("org_id = ?", orgID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return svctype.OrgFeatures{}, nil
	}
	if err != nil {
		return svctype.OrgFeatures{}, wrap("get org features", err)
	}
	return svctype.OrgFeatures{AgentForms: m.AgentForms}, nil
}

// PutOrgFeatures stores the organization's features.
func (q *querier) PutOrgFeatures(ctx context.Context, orgID string, f svctype.OrgFeatures) error {
	m := orgFeaturesModel{OrgID: orgID, AgentForms: f.AgentForms, UpdatedAt: dbTime(now())}
	_, err := q.w.NewInsert().Model(&m).On("CONFLICT (org_id) DO UPDATE").
		Set("agent_forms = EXCLUDED.agent_forms, updated_at = EXCLUDED.updated_at").Exec(ctx)
	return wrap("put org features", err)
}
