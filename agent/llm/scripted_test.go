package llm_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
)

func userAsks(content string) agent.Request {
	return agent.Request{Model: "scripted", Messages: []agent.Message{{Role: agent.RoleUser, Content: content}}}
}

func TestScriptedReplaysAFile(t *testing.T) {
	t.Parallel()
	script, err := llm.LoadScript("testdata/invoice.json")
	require.NoError(t, err)
	m := llm.NewScripted(script.Turns...)
	ctx := context.Background()

	req := userAsks("Is INV-42 paid?")
	res, err := m.Chat(ctx, req)
	require.NoError(t, err)
	require.Equal(t, &agent.Response{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "I will look the invoice up.",
			ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "lookup_invoice", Arguments: json.RawMessage(`{"number": "INV-42"}`)}}},
		Usage:        agent.Usage{InputTokens: 120, OutputTokens: 18, TotalTokens: 138},
		FinishReason: agent.FinishToolCalls,
		Model:        "scripted",
	}, res)

	req.Messages = append(req.Messages, res.Message,
		agent.Message{Role: agent.RoleTool, ToolCallID: "call_1", Content: `{"paid_on": "2026-03-02"}`})
	res, err = m.Chat(ctx, req)
	require.NoError(t, err)
	require.Equal(t, &agent.Response{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: "INV-42 was paid on 2026-03-02."},
		Usage:        agent.Usage{InputTokens: 160, OutputTokens: 12, TotalTokens: 172},
		FinishReason: agent.FinishStop,
		Model:        "gpt-4o-mini-2024-07-18",
	}, res)
	require.Zero(t, m.Remaining())
	require.Len(t, m.Requests(), 2)
	require.Len(t, m.Requests()[1].Messages, 3)

	_, err = m.Chat(ctx, req)
	require.ErrorIs(t, err, llm.ErrScriptExhausted)
	require.EqualError(t, err, `scripted model: no more recorded turns: asked for turn 3 of 2; last message tool "{\"paid_on\": \"2026-03-02\"}" answering call_1`)
}

func TestScriptedExpectations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		expect llm.Expect
		last   agent.Message
		want   string // "" when it matches
	}{
		{name: "role", expect: llm.Expect{Role: agent.RoleTool},
			last: agent.Message{Role: agent.RoleUser, Content: "hi"},
			want: `scripted model: request does not match the script: turn 1: expected the last message from tool, got user "hi"`},
		{name: "tool call id", expect: llm.Expect{ToolCallID: "call_2"},
			last: agent.Message{Role: agent.RoleTool, ToolCallID: "call_1", Content: "ok"},
			want: `scripted model: request does not match the script: turn 1: expected a result of tool call "call_2", got tool "ok" answering call_1`},
		{name: "exact content", expect: llm.Expect{Content: "hi"},
			last: agent.Message{Role: agent.RoleUser, Content: "hi!"},
			want: `scripted model: request does not match the script: turn 1: expected content "hi", got user "hi!"`},
		{name: "contains", expect: llm.Expect{Contains: "INV-42"},
			last: agent.Message{Role: agent.RoleUser, Content: "Is INV-43 paid?"},
			want: `scripted model: request does not match the script: turn 1: expected content containing "INV-42", got user "Is INV-43 paid?"`},
		{name: "all match", expect: llm.Expect{Role: agent.RoleTool, ToolCallID: "c", Contains: "ok"},
			last: agent.Message{Role: agent.RoleTool, ToolCallID: "c", Content: "all ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := llm.NewScripted(llm.Turn{Expect: &tt.expect, Reply: agent.Message{Content: "fine"}})
			req := agent.Request{Model: "m", Messages: []agent.Message{
				{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c", Name: "f"}, {ID: "call_1", Name: "f"}}},
				tt.last,
			}}
			_, err := m.Chat(context.Background(), req)
			if tt.want == "" {
				require.NoError(t, err)
				require.Zero(t, m.Remaining())
				return
			}
			require.ErrorIs(t, err, llm.ErrScriptMismatch)
			require.EqualError(t, err, tt.want)
			require.Equal(t, 1, m.Remaining(), "a mismatch does not spend the turn")
		})
	}
}

func TestScriptedErrorTurn(t *testing.T) {
	t.Parallel()
	script, err := llm.ParseScript([]byte(`{"turns": [
  {"error": {"kind": "rate_limited", "status": 429, "message": "Slow down.", "retry_after_seconds": 1.5}},
  {"reply": {"content": "done"}}
]}`))
	require.NoError(t, err)
	m := llm.NewScripted(script.Turns...)

	_, err = m.Chat(context.Background(), userAsks("hi"))
	require.ErrorIs(t, err, agent.ErrModelRateLimited)
	var me *agent.ModelError
	require.ErrorAs(t, err, &me)
	require.Equal(t, agent.ModelError{Kind: agent.ModelErrorRateLimited, Status: 429, Message: "Slow down.",
		RetryAfter: 1500 * time.Millisecond}, *me)

	res, err := m.Chat(context.Background(), userAsks("hi"))
	require.NoError(t, err)
	require.Equal(t, "done", res.Message.Content)
}

func TestParseScriptRefusesMistakes(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, json, want string }{
		{name: "misspelt field", json: `{"turns": [{"expcet": {"role": "user"}, "reply": {"content": "x"}}]}`,
			want: `parse script: json: unknown field "expcet"`},
		{name: "tool call without id", json: `{"turns": [{"reply": {"tool_calls": [{"name": "f"}]}}]}`,
			want: "turn 1: tool call 1 needs an id and a name"},
		{name: "reply from the user", json: `{"turns": [{"reply": {"role": "user", "content": "x"}}]}`,
			want: `turn 1: reply role "user": a reply is the assistant's`},
		{name: "error without kind", json: `{"turns": [{}, {"error": {"status": 500}}]}`,
			want: "turn 2: error needs a kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := llm.ParseScript([]byte(tt.json))
			require.EqualError(t, err, tt.want)
		})
	}
	_, err := llm.LoadScript("testdata/missing.json")
	require.ErrorContains(t, err, "llm: load script:")
}

func TestScriptedHonoursContextAndValidates(t *testing.T) {
	t.Parallel()
	m := llm.NewScripted(llm.Turn{Reply: agent.Message{Content: "x"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Chat(ctx, userAsks("hi"))
	require.ErrorIs(t, err, context.Canceled)

	_, err = m.Chat(context.Background(), agent.Request{Model: "m"})
	require.ErrorIs(t, err, agent.ErrModelBadRequest)
	require.Equal(t, 1, m.Remaining(), "neither spent the turn")
}

func TestScriptedRepliesAreCopies(t *testing.T) {
	t.Parallel()
	turn := llm.Turn{Reply: agent.Message{ToolCalls: []agent.ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}}}
	m := llm.NewScripted(turn, turn)
	res, err := m.Chat(context.Background(), userAsks("hi"))
	require.NoError(t, err)
	res.Message.ToolCalls[0].Arguments[2] = 'b'
	res, err = m.Chat(context.Background(), userAsks("hi"))
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(res.Message.ToolCalls[0].Arguments))
}

func TestScriptedIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	turns := make([]llm.Turn, 50)
	m := llm.NewScripted(turns...)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := m.Chat(context.Background(), userAsks("hi"))
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Zero(t, m.Remaining())
}

func TestRecorderWritesAScriptThatReplays(t *testing.T) {
	t.Parallel()
	// The "real" model here is an httptest provider: a tool call, then a rate limit,
	// then an answer.
	p := newProvider(t, "/v1",
		respond(200, completion(`{"role": "assistant", "content": null,
  "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\": 9}"}}]}`, "tool_calls")),
		respond(429, openaiError("Slow down.", "requests", ""), "Retry-After", "7"),
		respond(200, textReply))
	rec := llm.NewRecorder(p.client(t, llm.Options{MaxRetries: -1}))
	ctx := context.Background()

	conversation := func(m agent.Model) []any {
		var seen []any
		req := userAsks("Look up 9.")
		res, err := m.Chat(ctx, req)
		require.NoError(t, err)
		seen = append(seen, res)
		req.Messages = append(req.Messages, res.Message, agent.Message{Role: agent.RoleTool, ToolCallID: "call_9", Content: "found"})
		_, err = m.Chat(ctx, req)
		require.ErrorIs(t, err, agent.ErrModelRateLimited)
		seen = append(seen, err.Error())
		res, err = m.Chat(ctx, req)
		require.NoError(t, err)
		return append(seen, res)
	}
	live := conversation(rec)

	data, err := json.Marshal(rec.Script())
	require.NoError(t, err)
	script, err := llm.ParseScript(data)
	require.NoError(t, err)
	replay := llm.NewScripted(script.Turns...)
	// Equal as JSON: encoding the script compacts the arguments ({"id": 9} -> {"id":9}).
	want, err := json.Marshal(live)
	require.NoError(t, err)
	got, err := json.Marshal(conversation(replay))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
	require.Zero(t, replay.Remaining())
	require.Equal(t, &llm.Expect{Role: agent.RoleTool, Content: "found", ToolCallID: "call_9"}, script.Turns[1].Expect)
}
