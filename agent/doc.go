// Package agent owns what svcflow's model-driven features share, and will hold the bounded
// ReAct loop (tools, budgets, trace, memory).
//
// Today it declares the Model interface (model.go): one chat call with tool calls, token
// usage and typed errors, used by the llm action and later by agents, form generation and
// workflow drafting. Implementations live elsewhere (agent/llm: an OpenAI-compatible HTTP
// client and a scripted model for tests); this package does no I/O of its own and imports
// no provider SDK, so a program embedding svcflow can bring its own Model.
//
// The loop itself is empty until the agents issue lands; `loop` with `mode: react` is
// warned about at create time and fails clearly at run time meanwhile.
package agent
