package svctype

import (
	"encoding/json"
	"time"
)

// AgentStatus is where an agent run stands (agent.Status).
type AgentStatus string

// AgentRun is a run of an agent: standalone (POST /agents/execute) or a workflow's react
// loop step (ParentRunID, ParentStep). Config is the request it was started with; State is
// its checkpoint (agent.State as JSON): conversation, trace, usage, memory, evidence.
type AgentRun struct {
	ID          string          `json:"agent_run_id"`
	OrgID       string          `json:"-"`
	ParentRunID string          `json:"parent_run_id,omitempty"`
	ParentStep  int             `json:"parent_step,omitempty"`
	Status      AgentStatus     `json:"status"`
	Reason      string          `json:"reason,omitempty"`
	Iterations  int             `json:"iterations"`
	Config      json.RawMessage `json:"-"`
	State       json.RawMessage `json:"-"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
}
