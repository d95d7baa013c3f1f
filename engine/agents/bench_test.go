package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/agents"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// benchEngine is an engine on a SQLite file whose model answers at once: iterations calls
// of __store_memory__ (each a new key), then __complete__.
func benchEngine(b *testing.B, iterations int, pause bool) *engine.Engine {
	b.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+b.TempDir()+"/bench.db")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	model := agent.ModelFunc(func(_ context.Context, req agent.Request) (*agent.Response, error) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == agent.RoleTool {
				n++
			}
		}
		msg := agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c", Name: "__store_memory__",
			Arguments: json.RawMessage(fmt.Sprintf(`{"key": "k%d", "value": %d}`, n, n))}}}
		switch {
		case pause:
			msg.ToolCalls[0] = agent.ToolCall{ID: "c", Name: "__pause_for_human__", Arguments: json.RawMessage(`{"question": "ok?"}`)}
		case n >= iterations:
			msg.ToolCalls[0] = agent.ToolCall{ID: "c", Name: "__complete__", Arguments: json.RawMessage(`{"answer": "done", "confidence": 1}`)}
		}
		return &agent.Response{Message: msg, Usage: agent.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}, nil
	})
	eng, err := engine.New(engine.Config{Store: st, Keyring: enginetest.NewKeyring(b, enginetest.GenerateKey(b)),
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return model, nil }})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := eng.SetOrgConfig(context.Background(), "acme", engine.LLMAPIKey, "sk-bench"); err != nil {
		b.Fatal(err)
	}
	return eng
}

// BenchmarkAgentIteration is the engine's cost of one agent iteration on SQLite, the model
// answering at once: the model call's intent, its checkpoint, the observation's
// checkpoint (each a transaction), the job's claim. Runs of 50 iterations.
func BenchmarkAgentIteration(b *testing.B) {
	const perRun = 50
	eng := benchEngine(b, perRun, false)
	ctx := context.Background()
	in := agents.Input{Objective: "store fifty things", Config: agents.InputConfig{MaxIterations: 100,
		OnStuck: &agent.OnStuck{Iterations: 0, Action: agent.StuckEscalate}}}
	iterations := 0
	b.ResetTimer()
	for b.Loop() {
		r, err := eng.ExecuteAgent(ctx, "acme", in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Work(ctx); err != nil {
			b.Fatal(err)
		}
		r, _, err = eng.AgentRun(ctx, "acme", r.ID)
		if err != nil || r.Status != "completed" {
			b.Fatalf("%v %s %s", err, r.Status, r.Reason)
		}
		iterations += r.Iterations
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(iterations), "µs/iteration")
}

// BenchmarkPausedAgents: 1,000 agents paused for a person hold no goroutine (nor memory
// beyond their rows): the goroutines before and after.
func BenchmarkPausedAgents(b *testing.B) {
	eng := benchEngine(b, 0, true)
	ctx := context.Background()
	for b.Loop() {
		before := runtime.NumGoroutine()
		for range 1000 {
			if _, err := eng.ExecuteAgent(ctx, "acme", agents.Input{Objective: "ask"}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := eng.Work(ctx); err != nil {
			b.Fatal(err)
		}
		page, err := eng.ListAgents(ctx, "acme", "paused", svctype.ListOptions{Limit: 500})
		if err != nil || len(page.Items) < 500 {
			b.Fatalf("paused agents: %d, %v", len(page.Items), err)
		}
		// A benchmark's settling time: goroutines that ended are counted until they exit.
		time.Sleep(50 * time.Millisecond)
		after := runtime.NumGoroutine()
		b.ReportMetric(float64(after-before), "goroutines-added")
		if after-before > 10 {
			b.Fatalf("1,000 paused agents added %d goroutines", after-before)
		}
	}
}
