package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/agents"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// TestToolAnswersCarryNoShortSecret: an http action used as a tool sends a 5-byte and a
// 1-byte org config value in its headers; the target echoes both in a 500 body. Neither is
// in the agent run's trace or reason, its events, the log, or any message the model is
// sent afterwards: the tool's error goes through the same redaction as a workflow step's.
// On SQLite and PostgreSQL, with the scripted model.
func TestToolAnswersCarryNoShortSecret(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = fmt.Fprintf(w, "refused: key=%s; tag=%s; a quick note", r.Header.Get("X-Api-Key"), r.Header.Get("X-Tag"))
			}))
			t.Cleanup(srv.Close)
			model := llm.NewScripted(
				llm.Turn{Reply: agent.Message{ToolCalls: []agent.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"id": "42"}`)}}}},
				llm.Turn{Expect: &llm.Expect{Role: agent.RoleTool, ToolCallID: "c1", Contains: "key=[redacted]; tag=[redacted]; a quick note"},
					Reply: agent.Message{ToolCalls: []agent.ToolCall{{ID: "c2", Name: "__complete__",
						Arguments: json.RawMessage(`{"answer": "the lookup failed", "confidence": 0.5}`)}}}},
			)
			logs := &enginetest.LockedBuffer{}
			db := store.OpenTest(t, dialect)
			eng, err := engine.New(engine.Config{Store: db, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
				AllowPrivateTargets: true, Logger: testlog.Tee(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return model, nil }})
			require.NoError(t, err)
			ctx := context.Background()
			for k, v := range map[string]string{engine.LLMAPIKey: "sk-agent-test", "api:key": "k3Y9z", "api:tag": "q"} {
				_, _, err = eng.SetOrgConfig(ctx, "acme", k, v)
				require.NoError(t, err)
			}
			_, err = eng.CreateAction(ctx, "acme", svctype.Action{Name: "lookup", Kind: svctype.ActionHTTP, URL: srv.URL + "/customers",
				HTTPMethod: "POST", Headers: map[string]string{"X-Api-Key": "orgconfig:api:key", "X-Tag": "orgconfig:api:tag"}})
			require.NoError(t, err)

			r, err := eng.ExecuteAgent(ctx, "acme", agents.Input{Objective: "Look customer 42 up",
				Tools: []json.RawMessage{json.RawMessage(`{"type": "action", "name": "lookup"}`)}})
			require.NoError(t, err)
			_, err = eng.Work(ctx)
			require.NoError(t, err)

			r, st, err := eng.AgentRun(ctx, "acme", r.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.AgentStatus("completed"), r.Status, r.Reason)
			require.Zero(t, model.Remaining(), "the model saw the redacted observation")
			require.Contains(t, string(st.Trace[0].Observation), "key=[redacted]; tag=[redacted]")

			events, err := db.ListRunEvents(ctx, "acme", r.ID, svctype.ListOptions{Limit: 100})
			require.NoError(t, err)
			require.NotEmpty(t, events.Items)
			sent, err := json.Marshal(model.Requests())
			require.NoError(t, err)
			all, err := json.Marshal([]any{r, st, events})
			require.NoError(t, err)
			for _, text := range []string{string(all), string(sent), logs.String()} {
				require.NotContains(t, text, "k3Y9z")
				require.NotContains(t, text, "key=k3Y9z")
				require.NotContains(t, text, "tag=q;")
			}
		})
	}
}
