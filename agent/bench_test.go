package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/svcflow/svcflow/agent"
)

// BenchmarkLoopIteration is the loop's own cost of one iteration (a model reply choosing a
// tool, the tool's call, the observation, two checkpoints), the model and the tool
// answering at once and the checkpoints going nowhere: what an agent adds to its calls.
func BenchmarkLoopIteration(b *testing.B) {
	reply := &agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "look it up",
		ToolCalls: []agent.ToolCall{{ID: "c", Name: "lookup", Arguments: json.RawMessage(`{"q": "acme"}`)}}},
		Usage: agent.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}
	m := agent.ModelFunc(func(context.Context, agent.Request) (*agent.Response, error) { return reply, nil })
	cfg := agent.Config{Objective: "o", Model: "m", MaxIterations: 100, OnStuck: &agent.OnStuck{},
		Budget: agent.Budget{ModelCalls: 10_000, InputTokens: 10_000_000, OutputTokens: 10_000_000, TotalTokens: 20_000_000}}
	l := &agent.Loop{Model: m, Tools: &toolbox{}, Checkpoints: agent.CheckpointFunc(func(context.Context, *agent.State) error { return nil })}
	b.ReportAllocs()
	iterations := 0
	for b.Loop() {
		st := agent.Start(cfg)
		_ = l.Run(context.Background(), cfg, st)
		iterations += st.Iterations
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iterations), "ns/iteration")
}
