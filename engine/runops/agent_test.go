package runops_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// model completes at once; it counts its calls.
type model struct {
	mu    sync.Mutex
	calls int
}

func (m *model) Chat(context.Context, agent.Request) (*agent.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "done",
		ToolCalls: []agent.ToolCall{{ID: "c-1", Name: "__complete__", Arguments: json.RawMessage(`{"answer": "fine", "confidence": 0.9}`)}}}}, nil
}

// A run that failed after its agent step is retried after it: the agent's answer is
// reused (its model is not called again), the write before it is not made again, and the
// failed step reads the answer. (An agent that fails does not fail its step: the step's
// output says so, and the workflow decides; a react step fails only when its objective or
// tools cannot be read, and then a retry starts its agent over.)
func TestRetryReusesAnAgentsAnswer(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			m := &model{}
			eng, err := engine.New(engine.Config{Store: store.OpenTest(t, d), Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
				Logger: testlog.Quiet(), ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return m, nil }})
			require.NoError(t, err)
			ctx, org := context.Background(), "acme"
			_, _, err = eng.SetOrgConfig(ctx, org, engine.LLMAPIKey, "sk-agent-test")
			require.NoError(t, err)
			_, err = eng.CreateTable(ctx, org, "notes", map[string]string{"text": "text"})
			require.NoError(t, err)
			w, err := eng.CreateWorkflow(ctx, org, engine.WorkflowInput{Name: "agentic", Definition: json.RawMessage(`{"actions": [
				{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "before"}}},
				{"type": "loop", "properties": {"mode": "react", "objective": "Check", "tools": [], "result_key": "verdict", "max_iterations": 3}},
				{"type": "custom-table", "properties": {"table": "later", "operation": "write", "fields": {"text": "{{verdict.answer}}"}}}]}`)})
			require.NoError(t, err)
			run, err := eng.Execute(ctx, org, w.ID, nil, engine.ExecuteOptions{})
			require.NoError(t, err)
			_, err = eng.Work(ctx)
			require.NoError(t, err)
			doc, err := eng.RunStatus(ctx, org, run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunFailed, doc.Status, doc.Reason)
			require.Equal(t, svctype.StepCompleted, doc.Steps[1].Status)
			require.Equal(t, svctype.StepFailed, doc.Steps[2].Status)
			require.Equal(t, 1, m.calls)
			plan, err := eng.RetryPlan(ctx, org, run.ID)
			require.NoError(t, err)
			require.Equal(t, []int{0, 1}, plan.Reused)
			require.Empty(t, plan.Calls, "the agent is not run again")

			_, err = eng.CreateTable(ctx, org, "later", map[string]string{"text": "text"})
			require.NoError(t, err)
			next, err := eng.RetryRun(ctx, org, run.ID, "table made", engine.Actor{})
			require.NoError(t, err)
			_, err = eng.Work(ctx)
			require.NoError(t, err)
			doc, err = eng.RunStatus(ctx, org, next.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Equal(t, 1, m.calls, "the agent's model is not called again")
			notes, err := eng.ReadRows(ctx, org, "notes", nil, 10)
			require.NoError(t, err)
			require.Len(t, notes, 1, "the write before the agent made once")
			later, err := eng.ReadRows(ctx, org, "later", nil, 10)
			require.NoError(t, err)
			require.Len(t, later, 1)
			require.Equal(t, "fine", later[0].Data["text"], "the agent's answer reused")
		})
	}
}
