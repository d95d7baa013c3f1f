package engine

import "github.com/svcflow/svcflow/engine/agents"

// Agents (engine/agents).
type (
	// AgentInput is a standalone agent's request (POST /agents/execute).
	AgentInput = agents.Input
	// AgentInputConfig is its config: iteration cap, on_stuck, budget.
	AgentInputConfig = agents.InputConfig
)

const (
	// MaxAgentWait is how long POST /agents/execute without async waits for the result.
	MaxAgentWait        = agents.MaxWait
	JobAgentTurn        = agents.JobTurn
	EventAgentStarted   = agents.EventStarted
	EventAgentCompleted = agents.EventCompleted
	EventAgentPaused    = agents.EventPaused
	EventAgentFailed    = agents.EventFailed
)
