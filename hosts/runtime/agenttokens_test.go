package runtime_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// An agent's model calls ask for at most what the run's budget has left (issue 31: no
// max_tokens was sent, so one reply could spend the whole output budget). Over the real
// OpenAI-compatible client, against a server that records each request's max_tokens.
func TestAgentModelCallsAreCappedByTheBudgetLeft(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var caps []any
	replies := []string{"__log_progress__", "__log_progress__", "__complete__"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n := len(caps)
		caps = append(caps, body["max_tokens"])
		mu.Unlock()
		if n >= len(replies) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		args := fmt.Sprintf(`{"message": "step %d"}`, n+1)
		if replies[n] == "__complete__" {
			args = `{"answer": "done", "confidence": 0.9}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, fmt.Sprintf(`{"id": "chatcmpl-%d", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-mini",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
    "tool_calls": [{"id": "call_%d", "type": "function", "function": {"name": %q, "arguments": %q}}]}}],
  "usage": {"prompt_tokens": 200, "completion_tokens": 30, "total_tokens": 230}}`, n, n, replies[n], args))
	}))
	t.Cleanup(srv.Close)

	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t), AllowPrivateTargets: true})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	srvRT := runtime.New(eng, runtime.Options{Logger: testlog.Quiet(), Version: "test"})
	b := &bundle{eng: eng, st: st, srv: srvRT, h: srvRT.Handler(), api: srvRT.API()}
	for k, v := range map[string]string{"api:llm_api_key": "sk-test", "api:llm_base_url": srv.URL + "/v1"} {
		rec := b.do(t, http.MethodPost, "/org-config", "acme", map[string]any{"key": k, "value": v})
		require.Less(t, rec.Code, 300, rec.Body.String())
	}

	rec := b.do(t, http.MethodPost, "/agents/execute?async=true", "acme", map[string]any{"objective": "Log two steps, then finish",
		"config": map[string]any{"llm_budget": map[string]any{"output_tokens": 100}}})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	var started struct {
		AgentRunID string `json:"agent_run_id"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &started))
	b.work(t)
	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/agents/"+started.AgentRunID+"/status", "acme", nil), http.StatusOK)
	require.Equal(t, "completed", status["status"], status["reason"])

	mu.Lock()
	defer mu.Unlock()
	// 100 output tokens, 30 spent by each reply: 100, 70, 40.
	require.Equal(t, []any{100.0, 70.0, 40.0}, caps)
}
