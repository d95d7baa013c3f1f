package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Model is a chat model: the one seam between svcflow and a model provider. The llm
// action, agents, form generation and workflow drafting all call it; agent/llm holds the
// implementations (an OpenAI-compatible client, a scripted model for tests).
//
// Chat sends the conversation and returns the model's next message: text, tool calls or
// both. It must honour ctx: a cancelled or expired context ends the call promptly with an
// error that wraps ctx.Err(). Failures of the provider are *ModelError values, checkable
// with errors.Is against ErrModelUnauthorized, ErrModelRateLimited, ErrModelUnavailable,
// ErrModelTimeout and ErrModelBadRequest. Implementations are safe for concurrent use.
type Model interface {
	Chat(ctx context.Context, req Request) (*Response, error)
}

// ModelFunc lets a function be a Model (tests, adapters).
type ModelFunc func(ctx context.Context, req Request) (*Response, error)

// Chat calls f.
func (f ModelFunc) Chat(ctx context.Context, req Request) (*Response, error) { return f(ctx, req) }

// Role is who wrote a message.
type Role string

// The four roles of a chat conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries a tool's result back to the model; ToolCallID names the call.
	RoleTool Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is the model asking for one tool to be run.
type ToolCall struct {
	// ID is the provider's id for the call; the tool message that answers it repeats it.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON the model wrote, normally an object. Models do write invalid
	// JSON; an implementation then keeps the text as a JSON string, so a Message always
	// encodes and the caller sees a non-object to give feedback on.
	Arguments json.RawMessage `json:"arguments"`
}

// Tool declares a capability the model may call.
type Tool struct {
	// Name is 1-64 letters, digits, '_' or '-' (what the providers accept).
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object describing the arguments; empty means none.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Request is one chat call.
type Request struct {
	// Model is the provider's model name (`gpt-4o-mini`, `llama3.1:8b`, ...).
	Model    string
	Messages []Message
	Tools    []Tool
	// MaxTokens caps the reply's tokens; 0 leaves it to the provider.
	MaxTokens int
	// Temperature is sent only when set (some reasoning models refuse any value).
	Temperature *float64
	// JSON asks for a reply that is one JSON object (OpenAI's response_format
	// json_object). The prompt must still say so and describe the object; the caller
	// validates what comes back.
	JSON bool
}

// Usage is the tokens one call (or, summed with Add, several) consumed.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Add returns the sum of u and v, for budgets over many calls.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens,
		TotalTokens:  u.TotalTokens + v.TotalTokens,
	}
}

// FinishReason says why the model stopped, as the provider reported it. The common
// values are below; others pass through unchanged. Decide on tool calls by
// len(Message.ToolCalls), not by the reason: some servers answer "stop" with tool calls.
type FinishReason string

// Finish reasons of the OpenAI chat-completions API.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length" // MaxTokens reached: the reply is cut
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// Response is the model's answer to one Request.
type Response struct {
	// Message is the assistant's message; append it to the conversation as is.
	Message      Message
	Usage        Usage
	FinishReason FinishReason
	// Model is the model that answered, as the provider names it (may differ from the
	// request's: `gpt-4o` answers as `gpt-4o-2024-08-06`).
	Model string
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate checks what every provider would refuse, so a caller's mistake is a
// *ModelError of kind bad_request before anything is sent: a known role on every
// message, a tool message naming its call, tool calls with an id and a name, tool names
// providers accept, parameters that are JSON objects, no negative MaxTokens.
func (r Request) Validate() error {
	bad := func(format string, args ...any) error {
		return &ModelError{Kind: ModelErrorBadRequest, Message: fmt.Sprintf(format, args...)}
	}
	if r.Model == "" {
		return bad("request names no model")
	}
	if len(r.Messages) == 0 {
		return bad("request has no messages")
	}
	if r.MaxTokens < 0 {
		return bad("max tokens %d is negative", r.MaxTokens)
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return bad("message %d: tool call %d needs an id and a name", i, j)
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return bad("message %d: a tool message needs the tool call id it answers", i)
			}
		default:
			return bad("message %d: unknown role %q", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
			return bad("message %d: only assistant messages carry tool calls", i)
		}
	}
	seen := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		if !toolName.MatchString(t.Name) {
			return bad("tool %d: name %q must be 1-64 letters, digits, '_' or '-'", i, t.Name)
		}
		if seen[t.Name] {
			return bad("tool %d: name %q declared twice", i, t.Name)
		}
		seen[t.Name] = true
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && (p[0] != '{' || !json.Valid(p)) {
			return bad("tool %q: parameters must be a JSON Schema object", t.Name)
		}
	}
	return nil
}

// ModelErrorKind classifies a provider failure by what the caller should do about it.
type ModelErrorKind string

// The kinds of ModelError. Rate limits, unavailability and timeouts are worth another
// try later (Retryable); the others need a change of configuration or request.
const (
	// ModelErrorUnauthorized: the key is missing, wrong or lacks access (HTTP 401, 403).
	ModelErrorUnauthorized ModelErrorKind = "unauthorized"
	// ModelErrorRateLimited: the provider asks to slow down (HTTP 429); see RetryAfter.
	ModelErrorRateLimited ModelErrorKind = "rate_limited"
	// ModelErrorUnavailable: the provider failed or could not be reached (HTTP 5xx,
	// connection errors).
	ModelErrorUnavailable ModelErrorKind = "unavailable"
	// ModelErrorTimeout: no answer in time (the implementation's own timeout, HTTP 408).
	ModelErrorTimeout ModelErrorKind = "timeout"
	// ModelErrorBadRequest: the provider refused the request (other HTTP 4xx: unknown
	// model, context too long, invalid schema), or Request.Validate did.
	ModelErrorBadRequest ModelErrorKind = "bad_request"
	// ModelErrorOther: anything else (an answer that does not parse, no choices).
	ModelErrorOther ModelErrorKind = "other"
)

// Sentinels for errors.Is; a *ModelError matches the one of its Kind.
var (
	ErrModelUnauthorized = errors.New("model provider refused the credentials")
	ErrModelRateLimited  = errors.New("model provider rate limit")
	ErrModelUnavailable  = errors.New("model provider unavailable")
	ErrModelTimeout      = errors.New("model call timed out")
	ErrModelBadRequest   = errors.New("model provider refused the request")
)

// ModelErrorKindForStatus maps an HTTP status of a provider's error answer to a kind.
func ModelErrorKindForStatus(status int) ModelErrorKind {
	switch {
	case status == 401 || status == 403:
		return ModelErrorUnauthorized
	case status == 429:
		return ModelErrorRateLimited
	case status == 408:
		return ModelErrorTimeout
	case status >= 500:
		return ModelErrorUnavailable
	case status >= 400:
		return ModelErrorBadRequest
	default:
		return ModelErrorOther
	}
}

// ModelError is a failed model call. It never holds the API key or request headers:
// implementations build it from the status, the provider's error body (with the key
// redacted) and the Retry-After header only.
type ModelError struct {
	Kind ModelErrorKind
	// Status is the HTTP status of the provider's answer; 0 when there was none.
	Status int
	// Message is the provider's error message, or ours when there is none.
	Message string
	// Type and Code are the provider's error type and code when it sent them
	// (`invalid_request_error`, `context_length_exceeded`).
	Type, Code string
	// RetryAfter is how long the provider asked to wait (Retry-After), 0 when unsaid.
	RetryAfter time.Duration
	// Err is the underlying cause when there is one (context.DeadlineExceeded for a
	// timeout, a connection error); nil for an error answer.
	Err error
}

// Error reads like "model rate_limited (HTTP 429, retry after 20s): Rate limit reached".
func (e *ModelError) Error() string {
	var b strings.Builder
	b.WriteString("model ")
	b.WriteString(string(e.Kind))
	var details []string
	if e.Status != 0 {
		details = append(details, fmt.Sprintf("HTTP %d", e.Status))
	}
	if e.Code != "" {
		details = append(details, e.Code)
	}
	if e.RetryAfter > 0 {
		details = append(details, "retry after "+e.RetryAfter.String())
	}
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, ", ") + ")")
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *ModelError) Unwrap() error { return e.Err }

// Is matches the sentinel of e's Kind.
func (e *ModelError) Is(target error) bool {
	switch e.Kind {
	case ModelErrorUnauthorized:
		return target == ErrModelUnauthorized
	case ModelErrorRateLimited:
		return target == ErrModelRateLimited
	case ModelErrorUnavailable:
		return target == ErrModelUnavailable
	case ModelErrorTimeout:
		return target == ErrModelTimeout
	case ModelErrorBadRequest:
		return target == ErrModelBadRequest
	}
	return false
}

// Retryable reports whether the same call may succeed later: rate limits, unavailability
// and timeouts. Implementations have already retried what they retry; this is for the
// caller's own, slower, retry (a step snoozed for RetryAfter).
func (e *ModelError) Retryable() bool {
	switch e.Kind {
	case ModelErrorRateLimited, ModelErrorUnavailable, ModelErrorTimeout:
		return true
	}
	return false
}
