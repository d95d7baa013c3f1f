package agents_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/agents"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// chatCompletion is an OpenAI chat.completion whose one choice calls tool name with
// arguments (the wire's string), finishing with finish.
func chatCompletion(name, arguments, finish string) string {
	return fmt.Sprintf(`{"id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-mini-2024-07-18",
  "choices": [{"index": 0, "finish_reason": %q, "logprobs": null, "message": {"role": "assistant", "content": "thinking",
    "refusal": null, "tool_calls": [{"id": "call_%s", "type": "function", "function": {"name": %q, "arguments": %q}}]}}],
  "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}`, finish, name, name, arguments)
}

// TestAgentOverTheOpenAIWire drives a standalone agent with the real OpenAI-compatible
// client against a server playing a recorded conversation: tool arguments that are not
// JSON, a 429 then success, a reply cut at the token cap, then the completion.
func TestAgentOverTheOpenAIWire(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	replies := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, chatCompletion("lookup", `{"id": 4`, "tool_calls"))
		},
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`)
		},
		func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, chatCompletion("lookup", `{"id": 42}`, "tool_calls"))
		},
		func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, chatCompletion("__complete__", `{"answer": "ACME Ltd is on net 3`, "length"))
		},
		func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, chatCompletion("__complete__", `{"answer": "ACME Ltd is on net 30", "confidence": 0.9}`, "tool_calls"))
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/customers" {
			_, _ = io.WriteString(w, `{"customer": "ACME Ltd", "terms": "net 30"}`)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		if n >= len(replies) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		replies[n](w)
	}))
	t.Cleanup(srv.Close)

	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
		AllowPrivateTargets: true, Logger: testlog.Quiet()})
	require.NoError(t, err)
	ctx := t.Context()
	for k, v := range map[string]string{engine.LLMAPIKey: "sk-wire-test", engine.LLMBaseURL: srv.URL + "/v1"} {
		_, _, err := eng.SetOrgConfig(ctx, "acme", k, v)
		require.NoError(t, err)
	}
	_, err = eng.CreateAction(ctx, "acme", svctype.Action{Name: "lookup", Kind: svctype.ActionHTTP, URL: srv.URL + "/customers",
		HTTPMethod: "GET", Description: "Look a customer up."})
	require.NoError(t, err)

	r, err := eng.ExecuteAgent(ctx, "acme", agents.Input{Objective: "What are ACME's payment terms?", Tools: []json.RawMessage{json.RawMessage(`"lookup"`)}})
	require.NoError(t, err)
	_, err = eng.Work(ctx)
	require.NoError(t, err)
	r, state, err := eng.AgentRun(ctx, "acme", r.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("completed"), r.Status, r.Reason)
	require.Equal(t, "ACME Ltd is on net 30", state.Answer)
	require.Equal(t, []string{"lookup", "lookup", "__complete__", "__complete__"}, actionsOf(state))
	require.Contains(t, string(state.Trace[0].Observation), "not a JSON object", "malformed arguments are fed back")
	require.Contains(t, string(state.Trace[1].Observation), "net 30")
	require.Contains(t, state.Trace[2].Thought, "cut at the token cap")
	require.Contains(t, string(state.Trace[2].Observation), "not a JSON object")
	require.Equal(t, 4, state.ModelCalls, "the 429 was retried inside one model call")
	require.Equal(t, 4*120, state.Usage.InputTokens)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 5)
	// The model saw its malformed call answered, as a tool message, before its next turn.
	msgs := bodies[2]["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	require.Equal(t, "tool", last["role"])
	require.Equal(t, "call_lookup", last["tool_call_id"])
	require.True(t, strings.Contains(last["content"].(string), "not a JSON object"))
	var names []string
	for _, tool := range bodies[0]["tools"].([]any) {
		names = append(names, tool.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"lookup", "__complete__", "__pause_for_human__", "__store_memory__", "__retrieve_memory__", "__log_progress__"}, names)
}
