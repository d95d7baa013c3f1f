package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Agent runs: one row per run, its checkpoint (the agent's state as JSON) rewritten at
// every checkpoint.

type agentRunModel struct {
	bun.BaseModel `bun:"table:agent_runs,alias:ar"`

	OrgID       string          `bun:"org_id,pk"`
	ID          string          `bun:"id,pk"`
	ParentRunID string          `bun:"parent_run_id,notnull"`
	ParentStep  int             `bun:"parent_step,notnull"`
	Status      string          `bun:"status,notnull"`
	Reason      string          `bun:"reason,notnull"`
	Iterations  int             `bun:"iterations,notnull"`
	Config      json.RawMessage `bun:"config,type:text,notnull"`
	State       json.RawMessage `bun:"state,type:text"`
	CreatedAt   time.Time       `bun:"created_at,notnull"`
	UpdatedAt   time.Time       `bun:"updated_at,notnull"`
	FinishedAt  *time.Time      `bun:"finished_at"`
}

func (m *agentRunModel) toAgentRun() (svctype.AgentRun, error) {
	r := svctype.AgentRun{ID: m.ID, OrgID: m.OrgID, ParentRunID: m.ParentRunID, ParentStep: m.ParentStep,
		Status: svctype.AgentStatus(m.Status), Reason: m.Reason, Iterations: m.Iterations, Config: m.Config, State: m.State,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
	if m.FinishedAt != nil {
		t := m.FinishedAt.UTC()
		r.FinishedAt = &t
	}
	return r, nil
}

func agentRunToModel(r *svctype.AgentRun) *agentRunModel {
	return &agentRunModel{OrgID: r.OrgID, ID: r.ID, ParentRunID: r.ParentRunID, ParentStep: r.ParentStep,
		Status: string(r.Status), Reason: r.Reason, Iterations: r.Iterations, Config: r.Config, State: r.State,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt}
}

// CreateAgentRun inserts r (ErrConflict when its id is taken).
func (q *querier) CreateAgentRun(ctx context.Context, r *svctype.AgentRun) error {
	t := now()
	r.CreatedAt = orNow(r.CreatedAt, t)
	r.UpdatedAt = orNow(r.UpdatedAt, r.CreatedAt)
	m := agentRunToModel(r)
	if len(m.Config) == 0 {
		m.Config = json.RawMessage(`{}`)
	}
	_, err := q.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create agent run", err)
}

// GetAgentRun returns one of the organization's agent runs, state included.
func (q *querier) GetAgentRun(ctx context.Context, orgID, id string) (*svctype.AgentRun, error) {
	var m agentRunModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get agent run", err)
	}
	r, err := m.toAgentRun()
	return &r, err
}

// SaveAgentRun writes the status, reason, iterations, state and times of an existing run.
func (q *querier) SaveAgentRun(ctx context.Context, r *svctype.AgentRun) error {
	const op = "save agent run"
	r.UpdatedAt = orNow(r.UpdatedAt, now())
	res, err := q.w.NewUpdate().Model(agentRunToModel(r)).
		Column("status", "reason", "iterations", "state", "updated_at", "finished_at").
		Where("org_id = ? AND id = ?", r.OrgID, r.ID).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// ListAgentRuns pages the organization's agent runs newest first, without their state.
func (q *querier) ListAgentRuns(ctx context.Context, orgID string, status svctype.AgentStatus, opts svctype.ListOptions) (svctype.Page[svctype.AgentRun], error) {
	sel := q.r.NewSelect().Model((*agentRunModel)(nil)).ExcludeColumn("state").Where("org_id = ?", orgID)
	if status != "" {
		sel = sel.Where("status = ?", string(status))
	}
	return pageByCreated(ctx, "list agent runs", sel, true, opts,
		func(m *agentRunModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*agentRunModel).toAgentRun)
}

// AgentRunsOf returns the agent runs a workflow run started, oldest first, without state.
func (q *querier) AgentRunsOf(ctx context.Context, orgID, parentRunID string) ([]svctype.AgentRun, error) {
	var ms []agentRunModel
	err := q.w.NewSelect().Model(&ms).ExcludeColumn("state").Where("org_id = ? AND parent_run_id = ?", orgID, parentRunID).
		OrderExpr("created_at ASC, id ASC").Scan(ctx)
	if err != nil {
		return nil, wrap("agent runs of a run", err)
	}
	out := make([]svctype.AgentRun, 0, len(ms))
	for i := range ms {
		r, _ := ms[i].toAgentRun()
		out = append(out, r)
	}
	return out, nil
}

// GetActions reads the organization's actions of names in one query.
func (q *querier) GetActions(ctx context.Context, orgID string, names []string) ([]svctype.Action, error) {
	return readIn(ctx, q, "get actions", "name", orgID, names, (*actionModel).toAction)
}

// GetWorkflows reads the organization's workflows of ids in one query.
func (q *querier) GetWorkflows(ctx context.Context, orgID string, ids []string) ([]svctype.Workflow, error) {
	return readIn(ctx, q, "get workflows", "id", orgID, ids, (*workflowModel).toWorkflow)
}

// readIn reads the organization's rows of model M whose column is one of keys, in one
// query, converted by conv: the batch reads of an agent's tools.
func readIn[M, T any](ctx context.Context, q *querier, op, column, orgID string, keys []string, conv func(*M) (*T, error)) ([]T, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var ms []M
	if err := q.r.NewSelect().Model(&ms).Where("org_id = ?", orgID).Where("? IN (?)", bun.Ident(column), bun.In(keys)).Scan(ctx); err != nil {
		return nil, wrap(op, err)
	}
	out := make([]T, 0, len(ms))
	for i := range ms {
		v, err := conv(&ms[i])
		if err != nil {
			return nil, wrap(op, err)
		}
		out = append(out, *v)
	}
	return out, nil
}
