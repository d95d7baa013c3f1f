package engine

import "github.com/svcflow/svcflow/engine/actions"

// Registered actions (engine/actions).
const (
	MaxActionNameLen        = actions.MaxActionNameLen
	MaxActionTimeoutSeconds = actions.MaxActionTimeoutSeconds
	MaxActionTokens         = actions.MaxActionTokens
	MaxActionDescriptionLen = actions.MaxActionDescriptionLen
	ActionCacheTTL          = actions.ActionCacheTTL
	DefaultLLMModel         = actions.DefaultLLMModel
	DefaultLLMMaxTokens     = actions.DefaultLLMMaxTokens
	EventLLMKeyMissing      = actions.EventLLMKeyMissing
	LLMAPIKey               = actions.LLMAPIKey
	LLMBaseURL              = actions.LLMBaseURL
)
