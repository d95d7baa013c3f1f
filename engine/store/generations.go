package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Workflow drafting's generations.

type generationModel struct {
	bun.BaseModel `bun:"table:studio_generations,alias:sg"`

	ID          string    `bun:"id,pk"`
	OrgID       string    `bun:"org_id,notnull"`
	Prompt      string    `bun:"prompt,notnull"`
	Model       string    `bun:"model,notnull"`
	Temperature *float64  `bun:"temperature"`
	Status      string    `bun:"status,notnull"`
	Attempts    int       `bun:"attempts,notnull"`
	Bundle      string    `bun:"bundle,notnull"`
	Errors      string    `bun:"errors,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

func (m *generationModel) toGeneration() (*svctype.Generation, error) {
	g := &svctype.Generation{ID: m.ID, OrgID: m.OrgID, Prompt: m.Prompt, Model: m.Model, Temperature: m.Temperature, Status: svctype.GenerationStatus(m.Status),
		Attempts: m.Attempts, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	if m.Bundle != "" {
		g.Bundle = json.RawMessage(m.Bundle)
	}
	if m.Errors != "" {
		if err := json.Unmarshal([]byte(m.Errors), &g.Errors); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func generationModelOf(g *svctype.Generation) (*generationModel, error) {
	m := &generationModel{ID: g.ID, OrgID: g.OrgID, Prompt: g.Prompt, Model: g.Model, Temperature: g.Temperature, Status: string(g.Status),
		Attempts: g.Attempts, Bundle: string(g.Bundle), CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
	if len(g.Errors) > 0 {
		b, err := json.Marshal(g.Errors)
		if err != nil {
			return nil, err
		}
		m.Errors = string(b)
	}
	return m, nil
}

// CreateGeneration inserts g.
func (q *querier) CreateGeneration(ctx context.Context, g *svctype.Generation) error {
	g.CreatedAt = orNow(g.CreatedAt, q.now())
	g.UpdatedAt = orNow(g.UpdatedAt, g.CreatedAt)
	m, err := generationModelOf(g)
	if err != nil {
		return err
	}
	_, err = q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create generation", err)
}

// GetGeneration returns one of an organization's generations.
func (q *querier) GetGeneration(ctx context.Context, orgID, id string) (*svctype.Generation, error) {
	var m generationModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get generation", err)
	}
	g, err := m.toGeneration()
	return g, wrap("get generation", err)
}

// FinishGeneration writes an outcome of a generation still processing.
func (q *querier) FinishGeneration(ctx context.Context, g *svctype.Generation) error {
	const op = "finish generation"
	g.UpdatedAt = orNow(g.UpdatedAt, q.now())
	m, err := generationModelOf(g)
	if err != nil {
		return err
	}
	res, err := q.w.NewUpdate().Model(m).Column("status", "attempts", "bundle", "errors", "updated_at").
		Where("org_id = ? AND id = ? AND status = ?", g.OrgID, g.ID, svctype.GenerationProcessing).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
}
