package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

func agentBundle(t *testing.T, turns ...llm.Turn) *bundle {
	t.Helper()
	st := store.OpenTest(t, "sqlite")
	model := llm.NewScripted(turns...)
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t),
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return model, nil }})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	_, _, err = eng.SetOrgConfig(t.Context(), "acme", engine.LLMAPIKey, "sk-test")
	require.NoError(t, err)
	logs := &bytes.Buffer{}
	srv := runtime.New(eng, runtime.Options{Logger: testlog.Tee(slog.NewTextHandler(logs, nil)), Version: "test"})
	return &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API(), logs: logs}
}

func toolTurn(name, args string) llm.Turn {
	return llm.Turn{Reply: agent.Message{ToolCalls: []agent.ToolCall{{ID: "c1", Name: name, Arguments: json.RawMessage(args)}}}}
}

func TestAgentRoutes(t *testing.T) {
	t.Parallel()
	b := agentBundle(t,
		toolTurn("__pause_for_human__", `{"question": "Which ledger?", "options": ["2025", "2026"]}`),
		toolTurn("__complete__", `{"answer": "the 2026 ledger balances", "confidence": 0.7}`))

	w := b.do(t, http.MethodPost, "/agents/execute?async=true", "acme", map[string]any{"objective": "Check the ledger"})
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	var started struct {
		AgentRunID string `json:"agent_run_id"`
		Status     string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &started))
	require.True(t, strings.HasPrefix(started.AgentRunID, "agent-"))
	require.Equal(t, "running", started.Status)

	_, err := b.eng.Work(t.Context())
	require.NoError(t, err)
	w = b.do(t, http.MethodGet, "/agents/"+started.AgentRunID+"/status", "acme", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var status map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &status))
	require.Equal(t, "paused", status["status"])
	require.Equal(t, "Which ledger?", status["pause"].(map[string]any)["question"])
	require.NotContains(t, status, "reasoning_trace", "only with include_trace")

	w = b.do(t, http.MethodPost, "/agents/"+started.AgentRunID+"/resume", "acme", map[string]any{"human_input": "2026", "approved": true})
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	w = b.do(t, http.MethodPost, "/agents/"+started.AgentRunID+"/resume", "acme", map[string]any{"human_input": "again", "approved": false})
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	_, err = b.eng.Work(t.Context())
	require.NoError(t, err)

	w = b.do(t, http.MethodGet, "/agents/"+started.AgentRunID+"/status?include_trace=true", "acme", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &status))
	require.Equal(t, "completed", status["status"])
	require.Equal(t, "the 2026 ledger balances", status["final_answer"])
	require.Len(t, status["reasoning_trace"], 2)

	w = b.do(t, http.MethodGet, "/agents/"+started.AgentRunID+"/trace", "acme", nil)
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), `"action":"__pause_for_human__"`)
	require.Contains(t, w.Body.String(), `"human_input":"2026"`)

	w = b.do(t, http.MethodGet, "/agents?status=completed", "acme", nil)
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), started.AgentRunID)

	// Tenancy and bad input.
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/agents/"+started.AgentRunID+"/status", "other", nil).Code)
	w = b.do(t, http.MethodPost, "/agents/execute?async=true", "acme", map[string]any{"objective": "o",
		"tools": []any{map[string]any{"name": "x"}}, "config": map[string]any{"max_iterations": 5000}})
	require.Equal(t, http.StatusUnprocessableEntity, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "/tools/0")
	require.Contains(t, w.Body.String(), "/config/max_iterations")
}

// TestAgentExecuteWaits: without async the answer is the result, once a worker ran it.
func TestAgentExecuteWaits(t *testing.T) {
	t.Parallel()
	b := agentBundle(t, toolTurn("__complete__", `{"answer": "42", "confidence": 1}`))
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- worker.New(b.eng, worker.Options{Logger: testlog.Quiet()}).Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	w := b.do(t, http.MethodPost, "/agents/execute", "acme", map[string]any{"objective": "the answer"})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var status map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &status))
	require.Equal(t, "completed", status["status"])
	require.Equal(t, "42", status["final_answer"])
}
