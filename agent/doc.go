// Package agent is svcflow's bounded ReAct loop and the model interface it drives: an
// agent is a worker with a budget and a fixed toolbox, not a chatbot.
//
// model.go declares the Model interface: one chat call with tool calls, token usage and
// typed errors, used by the llm action, drafted forms and agents. Implementations live
// elsewhere (agent/llm: an OpenAI-compatible HTTP client and a scripted model for tests).
//
// loop.go is the loop: each iteration is one model call choosing one tool, that tool's call,
// and its observation, recorded as a TraceEntry. The declared tools come from a Toolbox;
// the implicit ones (__complete__, __pause_for_human__, __store_memory__,
// __retrieve_memory__, __log_progress__) are the loop's own. A Budget bounds tokens, model
// calls and wall time, MaxIterations the iterations, OnStuck escalates a run that repeats
// itself to a person. Match counts a tool returns are trusted evidence: a completion's
// match_claim must agree with them (evidence.go). What the model reads of a result is cut
// to MaxObservation characters as JSON that stays JSON (observe.go); the trace keeps it
// whole. The State is saved by a Checkpointer after the model's choice and after the
// observation, so a run resumed from its last checkpoint redoes at most the step in
// progress.
//
// The package does no I/O of its own and imports no provider SDK: the model, the tools
// and the checkpoints are interfaces, so it is tested without a database or a network, and
// a program embedding svcflow can bring its own of each.
package agent
