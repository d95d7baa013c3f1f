package engine

import "github.com/svcflow/svcflow/engine/agents"

// Agents (engine/agents).
type AgentInput = agents.Input

const (
	JobAgentTurn        = agents.JobTurn
	EventAgentStarted   = agents.EventStarted
	EventAgentCompleted = agents.EventCompleted
	EventAgentPaused    = agents.EventPaused
	EventAgentFailed    = agents.EventFailed
)
