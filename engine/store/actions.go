package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Registered actions: one row per (org_id, name) with the kind and the registration as one
// JSON document (spec). name and kind are columns, and authoritative over the document.

type actionModel struct {
	bun.BaseModel `bun:"table:actions,alias:act"`

	OrgID     string          `bun:"org_id,pk"`
	Name      string          `bun:"name,pk"`
	Kind      string          `bun:"kind"`
	Spec      json.RawMessage `bun:"spec,type:text"`
	CreatedAt time.Time       `bun:"created_at"`
	UpdatedAt time.Time       `bun:"updated_at"`
}

func actionToModel(a *svctype.Action) (*actionModel, error) {
	doc := *a
	doc.CreatedAt, doc.UpdatedAt = time.Time{}, time.Time{} // columns of their own
	spec, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return &actionModel{
		OrgID: a.OrgID, Name: a.Name, Kind: string(a.Kind), Spec: spec,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}, nil
}

func (m *actionModel) toAction() (*svctype.Action, error) {
	var a svctype.Action
	if err := json.Unmarshal(m.Spec, &a); err != nil {
		return nil, fmt.Errorf("action %q: stored spec: %w", m.Name, err)
	}
	a.OrgID, a.Name, a.Kind = m.OrgID, m.Name, svctype.ActionKind(m.Kind)
	a.CreatedAt, a.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return &a, nil
}

// CreateAction inserts a registration; ErrConflict when the org has the name.
func (q *querier) CreateAction(ctx context.Context, a *svctype.Action) error {
	const op = "create action"
	a.CreatedAt = orNow(a.CreatedAt, q.now())
	a.UpdatedAt = orNow(a.UpdatedAt, a.CreatedAt)
	m, err := actionToModel(a)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return insertNew(ctx, q.w, op, m)
}

func (q *querier) GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error) {
	var m actionModel
	err := q.r.NewSelect().Model(&m).Where("org_id = ? AND name = ?", orgID, name).Scan(ctx)
	if err != nil {
		return nil, wrap("get action", err)
	}
	return m.toAction()
}

// ListActions pages an org's actions by name.
func (q *querier) ListActions(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Action], error) {
	return listByName(ctx, q, "list actions", orgID, "name", opts,
		func(m *actionModel) string { return m.Name },
		valueOf((*actionModel).toAction))
}

// ReplaceAction overwrites the kind, spec and updated_at of an existing action and reads
// back its created_at; ErrNotFound when the org has no such action.
func (q *querier) ReplaceAction(ctx context.Context, a *svctype.Action) error {
	const op = "replace action"
	a.UpdatedAt = orNow(a.UpdatedAt, q.now())
	m, err := actionToModel(a)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var created time.Time
	err = q.w.NewUpdate().Model(m).
		Column("kind", "spec", "updated_at").
		Where("org_id = ? AND name = ?", a.OrgID, a.Name).
		Returning("created_at").
		Scan(ctx, &created)
	if err != nil {
		return wrap(op, err)
	}
	a.CreatedAt = created.UTC()
	return nil
}

// DeleteAction removes an action; ErrNotFound when the org has no such action.
func (q *querier) DeleteAction(ctx context.Context, orgID, name string) error {
	const op = "delete action"
	res, err := q.w.NewDelete().Model((*actionModel)(nil)).
		Where("org_id = ? AND name = ?", orgID, name).
		Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}
