// Package agents is the engine side of agents (spec: "Agents" routes, loop mode react):
// agent runs stored per organization, their turns as jobs, and the bounded loop of package
// agent driven with the run core's outside calls. Each model call and each tool call is an
// outside call (no transaction, no step slot held) with its own idempotency key,
// <agent run>/<iteration>/model and .../tool, and a recorded intent; the loop's state is
// saved after the model's choice and after the observation, in a transaction fenced by the
// job's lease, so a crash replays at most the call in progress, never a recorded one.
package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// JobTurn advances an agent run (RunID is the agent run's id).
const JobTurn = "agent_turn"

// LoopMode is the loop mode of a workflow step that runs an agent (a react loop), which
// Register puts on the run core.
const LoopMode = "react"

// Events of standalone agents (spec section 6).
const (
	EventStarted   = "agent.started"
	EventCompleted = "agent.completed"
	EventPaused    = "agent.paused"
	EventCancelled = "agent.cancelled"
	EventFailed    = "agent.failed"
	// EventApprovalRequested is emitted beside agent.paused, source standalone_agent.
	EventApprovalRequested = "pbot_approval_requested"
)

// Limits of an agent run's request.
const (
	MaxObjectiveLen = 20_000
	MaxTools        = 64
	// MaxWait is how long POST /agents/execute without async waits for the result.
	MaxWait = 60 * time.Second
	// slice is how long a worker advances one agent run before handing it back to the
	// queue (between checkpoints), so queued runs of any organization take their turn.
	slice = 2 * time.Second
)

// Input is an agent run's request (the body of POST /agents/execute).
type Input struct {
	Objective string            `json:"objective"`
	Tools     []json.RawMessage `json:"tools,omitempty"`
	Model     string            `json:"model,omitempty"`
	Config    InputConfig       `json:"config,omitzero"`
	// OAuthAccount is the connected account the built-in OAuth tools use (a react step's
	// __oauth_account__), when the organization has several.
	OAuthAccount string `json:"__oauth_account__,omitempty"`
}

// InputConfig is an agent run's limits.
type InputConfig struct {
	MaxIterations int            `json:"max_iterations,omitempty"`
	OnStuck       *agent.OnStuck `json:"on_stuck,omitempty"`
	LLMBudget     map[string]any `json:"llm_budget,omitempty"`
}

// Agents is the agent runs of every organization.
type Agents struct {
	core  *core.Core
	store Store
	model func(baseURL, apiKey string) (agent.Model, error)
	log   *slog.Logger
	now   func() time.Time
}

// New returns the agents over st; model returns the client of an organization's model.
func New(c *core.Core, st Store, model func(baseURL, apiKey string) (agent.Model, error)) *Agents {
	return &Agents{core: c, store: st, model: model, log: c.Logger(), now: c.Now}
}

// Register puts on c the agent turn job, loop mode react (a pause kind that keeps its run
// running) and the cancel hook that stops a cancelled run's agents.
func (a *Agents) Register(c *core.Core) {
	c.RegisterJob(JobTurn, a.turnJob)
	c.RegisterLoopMode(LoopMode, a.reactKind())
	c.RegisterCallPlanner(a.planCalls)
	c.OnCancel(a.cancelChildren)
}

// checked is a request that passed validation.
type checked struct {
	in    Input
	cfg   agent.Config
	decls []Declaration
}

// check validates in: a ValidationError naming each field that is wrong.
func check(in Input) (*checked, error) {
	var ps []core.Problem
	if strings.TrimSpace(in.Objective) == "" || len(in.Objective) > MaxObjectiveLen {
		ps = append(ps, core.Problem{Pointer: "/objective", Message: fmt.Sprintf("required: the agent's goal, at most %d characters", MaxObjectiveLen)})
	}
	if len(in.Tools) > MaxTools {
		ps = append(ps, core.Problem{Pointer: "/tools", Message: fmt.Sprintf("at most %d tools", MaxTools)})
	}
	decls, more := ParseTools(in.Tools, "/tools")
	ps = append(ps, more...)
	if len(in.Model) > 200 {
		ps = append(ps, core.Problem{Pointer: "/model", Message: "at most 200 characters"})
	}
	c := in.Config
	if c.MaxIterations < 0 || c.MaxIterations > agent.MaxIterations {
		ps = append(ps, core.Problem{Pointer: "/config/max_iterations", Message: fmt.Sprintf("from 1 to %d (default %d)", agent.MaxIterations, agent.DefaultMaxIterations)})
	}
	if s := c.OnStuck; s != nil {
		if s.Iterations < 0 || s.Iterations > agent.MaxIterations {
			ps = append(ps, core.Problem{Pointer: "/config/on_stuck/iterations", Message: "a number of iterations, 0 (off) or more"})
		}
		if s.Action != agent.StuckEscalate {
			ps = append(ps, core.Problem{Pointer: "/config/on_stuck/action", Message: "escalate"})
		}
	}
	budget, bps := agent.ParseBudget(c.LLMBudget)
	for _, p := range bps {
		ps = append(ps, core.Problem{Pointer: "/config/llm_budget/" + core.EscapePointer(p.Key), Message: p.Message})
	}
	if len(ps) > 0 {
		return nil, &core.ValidationError{Problems: ps}
	}
	model := in.Model
	if model == "" {
		model = orgconfig.DefaultLLMModel
	}
	return &checked{in: in, decls: decls, cfg: agent.Config{Objective: in.Objective, Model: model,
		MaxIterations: c.MaxIterations, OnStuck: c.OnStuck, Budget: budget}}, nil
}

// ExecuteAgent starts a standalone agent run: stored with its first turn's job and
// agent.started, in one transaction. A worker runs it.
func (a *Agents) ExecuteAgent(ctx context.Context, orgID string, in Input) (*svctype.AgentRun, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	c, err := check(in)
	if err != nil {
		return nil, err
	}
	cfgJSON, err := json.Marshal(c.in)
	if err != nil {
		return nil, err
	}
	state, err := json.Marshal(agent.Start(c.cfg))
	if err != nil {
		return nil, err
	}
	now := a.now().UTC()
	r := &svctype.AgentRun{ID: "agent-" + uuid.NewString(), OrgID: orgID, Status: svctype.AgentStatus(agent.StatusRunning),
		Config: cfgJSON, State: state, CreatedAt: now, UpdatedAt: now}
	err = a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.CreateAgentRun(ctx, r); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: orgID, Kind: JobTurn, RunID: r.ID}); err != nil {
			return err
		}
		return a.emit(ctx, stx, r, EventStarted, map[string]any{"agent_run_id": r.ID})
	})
	if err != nil {
		return nil, err
	}
	a.core.Notify()
	return r, nil
}

// AgentRun returns one of the organization's agent runs and its state (the trace).
func (a *Agents) AgentRun(ctx context.Context, orgID, id string) (*svctype.AgentRun, *agent.State, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, nil, err
	}
	r, err := a.store.GetAgentRun(ctx, orgID, id)
	if err != nil {
		return nil, nil, err
	}
	var st agent.State
	if err := json.Unmarshal(r.State, &st); err != nil {
		return nil, nil, fmt.Errorf("agent run %s: stored state: %w", id, err)
	}
	return r, &st, nil
}

// ListAgents pages the organization's agent runs, newest first.
func (a *Agents) ListAgents(ctx context.Context, orgID string, status svctype.AgentStatus, opts svctype.ListOptions) (svctype.Page[svctype.AgentRun], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.AgentRun]{}, err
	}
	switch agent.Status(status) {
	case "", agent.StatusRunning, agent.StatusPaused, agent.StatusCompleted, agent.StatusFailed, agent.StatusBudgetExceeded, agent.StatusCancelled:
	default:
		return svctype.Page[svctype.AgentRun]{}, core.Invalid("/status", "one of running, paused, completed, failed, budget_exceeded, cancelled")
	}
	return a.store.ListAgentRuns(ctx, orgID, status, opts)
}

// ResumeAgent gives a paused agent run a person's answer and queues it again: it goes on
// from its checkpoint. ErrConflict when the run is not paused.
func (a *Agents) ResumeAgent(ctx context.Context, orgID, id, humanInput string, approved bool) (*svctype.AgentRun, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if len(humanInput) > MaxObjectiveLen {
		return nil, core.Invalid("/human_input", "at most %d characters", MaxObjectiveLen)
	}
	var out *svctype.AgentRun
	err := a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		r, err := tx.GetAgentRun(ctx, orgID, id)
		if err != nil {
			return err
		}
		var st agent.State
		if err := json.Unmarshal(r.State, &st); err != nil {
			return err
		}
		if err := agent.Resume(&st, humanInput, approved); err != nil {
			return fmt.Errorf("%w: agent run %s is %s", core.ErrConflict, id, r.Status)
		}
		if r.State, err = json.Marshal(&st); err != nil {
			return err
		}
		r.Status, r.Reason, r.UpdatedAt = svctype.AgentStatus(st.Status), "", a.now().UTC()
		if err := tx.SaveAgentRun(ctx, r); err != nil {
			return err
		}
		if r.ParentRunID != "" {
			if _, err := a.parentTx(ctx, stx, r, &st, agent.StatusPaused); err != nil {
				return err
			}
		}
		out = r
		return tx.EnqueueJob(ctx, &svctype.Job{OrgID: orgID, Kind: JobTurn, RunID: id})
	})
	if err != nil {
		return nil, err
	}
	if out.ParentRunID != "" {
		a.core.RunChanged(orgID, out.ParentRunID)
	}
	a.core.Notify()
	return out, nil
}

// WaitAgent waits up to d (at most MaxWait) for the run to leave running and returns it as
// it is then. It holds no connection between its reads.
func (a *Agents) WaitAgent(ctx context.Context, orgID, id string, d time.Duration) (*svctype.AgentRun, error) {
	deadline := time.Now().Add(min(d, MaxWait))
	pause := 20 * time.Millisecond
	for {
		r, err := a.store.GetAgentRun(ctx, orgID, id)
		if err != nil || agent.Status(r.Status) != agent.StatusRunning || !time.Now().Before(deadline) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(min(pause, time.Until(deadline))):
		}
		pause = min(pause*2, 500*time.Millisecond)
	}
}

// emit appends an agent event (its run id is the agent run's).
func (a *Agents) emit(ctx context.Context, stx storage.Tx, r *svctype.AgentRun, name string, payload map[string]any) error {
	ev, err := a.core.OrgEvent(r.OrgID, name, payload)
	if err != nil {
		return err
	}
	ev.RunID = r.ID
	return a.core.Emit(ctx, stx, []svctype.Event{ev}, nil)
}

// ErrNoModelKey: the organization has no api:llm_api_key.
var ErrNoModelKey = errors.New("llm_key_missing")

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
