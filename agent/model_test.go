package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
)

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	user := agent.Message{Role: agent.RoleUser, Content: "hi"}
	valid := func() agent.Request {
		return agent.Request{Model: "m", Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "be brief"},
			user,
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(`{}`)}}},
			{Role: agent.RoleTool, ToolCallID: "c1", Content: "ok"},
		}, Tools: []agent.Tool{
			{Name: "f", Parameters: json.RawMessage(` {"type": "object"}`)},
			{Name: "__complete__"},
		}}
	}
	tests := []struct {
		name   string
		change func(r *agent.Request)
		want   string // "" when valid
	}{
		{name: "valid", change: func(r *agent.Request) {}},
		{name: "no model", change: func(r *agent.Request) { r.Model = "" }, want: "request names no model"},
		{name: "no messages", change: func(r *agent.Request) { r.Messages = nil }, want: "request has no messages"},
		{name: "negative max tokens", change: func(r *agent.Request) { r.MaxTokens = -1 }, want: "max tokens -1 is negative"},
		{name: "unknown role", change: func(r *agent.Request) { r.Messages[1].Role = "developer" },
			want: `message 1: unknown role "developer"`},
		{name: "tool message without call id", change: func(r *agent.Request) { r.Messages[3].ToolCallID = "" },
			want: "message 3: a tool message needs the tool call id it answers"},
		{name: "tool call without id", change: func(r *agent.Request) { r.Messages[2].ToolCalls[0].ID = "" },
			want: "message 2: tool call 0 needs an id and a name"},
		{name: "tool calls on a user message", change: func(r *agent.Request) {
			r.Messages[1].ToolCalls = r.Messages[2].ToolCalls
		}, want: "message 1: only assistant messages carry tool calls"},
		{name: "tool name with a dot", change: func(r *agent.Request) { r.Tools[0].Name = "gmail.send" },
			want: `tool 0: name "gmail.send" must be 1-64 letters, digits, '_' or '-'`},
		{name: "tool declared twice", change: func(r *agent.Request) { r.Tools[1].Name = "f" },
			want: `tool 1: name "f" declared twice`},
		{name: "parameters not an object", change: func(r *agent.Request) { r.Tools[0].Parameters = json.RawMessage(`[]`) },
			want: `tool "f": parameters must be a JSON Schema object`},
		{name: "parameters not JSON", change: func(r *agent.Request) { r.Tools[0].Parameters = json.RawMessage(`{"type":`) },
			want: `tool "f": parameters must be a JSON Schema object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := valid()
			tt.change(&r)
			err := r.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, agent.ErrModelBadRequest)
			require.EqualError(t, err, "model bad_request: "+tt.want)
		})
	}
}

func TestModelError(t *testing.T) {
	t.Parallel()
	sentinels := []error{agent.ErrModelUnauthorized, agent.ErrModelRateLimited, agent.ErrModelUnavailable,
		agent.ErrModelTimeout, agent.ErrModelBadRequest}
	tests := []struct {
		err       *agent.ModelError
		is        error // the one sentinel it matches, nil for none
		retryable bool
		text      string
	}{
		{err: &agent.ModelError{Kind: agent.ModelErrorUnauthorized, Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided"},
			is: agent.ErrModelUnauthorized, text: "model unauthorized (HTTP 401, invalid_api_key): Incorrect API key provided"},
		{err: &agent.ModelError{Kind: agent.ModelErrorRateLimited, Status: 429, RetryAfter: 20 * time.Second, Message: "Rate limit reached"},
			is: agent.ErrModelRateLimited, retryable: true, text: "model rate_limited (HTTP 429, retry after 20s): Rate limit reached"},
		{err: &agent.ModelError{Kind: agent.ModelErrorUnavailable, Status: 503},
			is: agent.ErrModelUnavailable, retryable: true, text: "model unavailable (HTTP 503)"},
		{err: &agent.ModelError{Kind: agent.ModelErrorTimeout, Err: context.DeadlineExceeded},
			is: agent.ErrModelTimeout, retryable: true, text: "model timeout: context deadline exceeded"},
		{err: &agent.ModelError{Kind: agent.ModelErrorBadRequest, Status: 400, Message: "bad"},
			is: agent.ErrModelBadRequest, text: "model bad_request (HTTP 400): bad"},
		{err: &agent.ModelError{Kind: agent.ModelErrorOther, Message: "no choices"}, text: "model other: no choices"},
	}
	for _, tt := range tests {
		t.Run(string(tt.err.Kind), func(t *testing.T) {
			t.Parallel()
			wrapped := fmt.Errorf("step 3: %w", tt.err)
			require.EqualError(t, tt.err, tt.text)
			require.Equal(t, tt.retryable, tt.err.Retryable())
			for _, s := range sentinels {
				require.Equal(t, s == tt.is, errors.Is(wrapped, s), "%v is %v", tt.err, s)
			}
			var me *agent.ModelError
			require.ErrorAs(t, wrapped, &me)
			require.Same(t, tt.err, me)
		})
	}
	require.ErrorIs(t, &agent.ModelError{Kind: agent.ModelErrorTimeout, Err: context.DeadlineExceeded}, context.DeadlineExceeded)
}

func TestModelErrorKindForStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]agent.ModelErrorKind{
		400: agent.ModelErrorBadRequest, 401: agent.ModelErrorUnauthorized, 403: agent.ModelErrorUnauthorized,
		404: agent.ModelErrorBadRequest, 408: agent.ModelErrorTimeout, 413: agent.ModelErrorBadRequest,
		422: agent.ModelErrorBadRequest, 429: agent.ModelErrorRateLimited, 500: agent.ModelErrorUnavailable,
		502: agent.ModelErrorUnavailable, 503: agent.ModelErrorUnavailable, 200: agent.ModelErrorOther,
	} {
		require.Equal(t, want, agent.ModelErrorKindForStatus(status), status)
	}
}

func TestUsageAdd(t *testing.T) {
	t.Parallel()
	u := agent.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}.
		Add(agent.Usage{InputTokens: 150, OutputTokens: 5, TotalTokens: 155})
	require.Equal(t, agent.Usage{InputTokens: 250, OutputTokens: 25, TotalTokens: 275}, u)
}

func TestMessageJSON(t *testing.T) {
	t.Parallel()
	m := agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"id":7}`)}}}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{"role":"assistant","tool_calls":[{"id":"c1","name":"lookup","arguments":{"id":7}}]}`, string(b))
	var back agent.Message
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, m, back)
}
