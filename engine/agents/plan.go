package agents

import (
	"context"
	"encoding/json"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/svctype"
)

// planCalls describes what a react loop step reaches outside when it runs
// (core.CallPlanner): the model, called each iteration, and each tool the model may call.
// An agent's step that runs again starts its agent over: its earlier model calls are not
// reused.
func (a *Agents) planCalls(_ context.Context, _ string, step *svctype.Step) ([]svctype.PlannedCall, bool, error) {
	if mode, _ := step.Properties["mode"].(string); step.Type != core.LoopStep || mode != LoopMode {
		return nil, false, nil
	}
	calls := []svctype.PlannedCall{{Kind: "model", Detail: "agent: one model call per iteration"}}
	var raw []json.RawMessage
	if b, err := json.Marshal(step.Properties["tools"]); err == nil {
		_ = json.Unmarshal(b, &raw)
	}
	decls, _ := ParseTools(raw, "/tools")
	for _, d := range decls {
		name := d.Action
		if name == "" {
			name = d.Workflow
		}
		if name == "" {
			name = d.Name
		}
		calls = append(calls, svctype.PlannedCall{Kind: "agent", Detail: "tool the agent may call: " + name})
	}
	return calls, true, nil
}
