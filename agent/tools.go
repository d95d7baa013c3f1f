package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Toolbox is an agent's declared tools: the only capabilities it has besides the implicit
// ones (which the loop handles itself).
type Toolbox interface {
	// Tools lists the declared tools as the model sees them.
	Tools() []Tool
	// Call runs one tool call. An error is the tool's failure, reported to the model as
	// the observation; one wrapping ErrUnknownTool says the name resolves to nothing.
	Call(ctx context.Context, call ToolCall) (*ToolResult, error)
}

// ToolResult is what a tool returned: Output is the observation (the model reads it cut
// to MaxObservation characters; the trace keeps it whole), Match the match counts it
// found, when it reconciled (trusted evidence for __complete__).
type ToolResult struct {
	Output any
	Match  *MatchCounts
}

// ErrUnknownTool: a tool call names no tool of the agent's.
var ErrUnknownTool = errors.New("unknown tool")

// The implicit tools of every agent.
const (
	ToolComplete       = "__complete__"
	ToolPauseForHuman  = "__pause_for_human__"
	ToolStoreMemory    = "__store_memory__"
	ToolRetrieveMemory = "__retrieve_memory__"
	ToolLogProgress    = "__log_progress__"
)

// Match claims of __complete__.
const (
	ClaimClean         = "clean"
	ClaimDiscrepancies = "discrepancies"
	ClaimNone          = "none"
)

func implicitTool(name string) bool {
	return slices.Contains([]string{ToolComplete, ToolPauseForHuman, ToolStoreMemory, ToolRetrieveMemory, ToolLogProgress}, name)
}

// ImplicitTools declares the implicit tools.
func ImplicitTools() []Tool {
	return []Tool{
		{Name: ToolComplete, Description: "Finish with your answer.", Parameters: json.RawMessage(`{"type": "object",
  "properties": {"answer": {"type": "string"}, "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "match_claim": {"type": "string", "enum": ["clean", "discrepancies", "none"],
      "description": "required once match counts were observed"}},
  "required": ["answer", "confidence"]}`)},
		{Name: ToolPauseForHuman, Description: "Ask a person and wait for the answer.", Parameters: json.RawMessage(`{"type": "object",
  "properties": {"question": {"type": "string"}, "options": {"type": "array", "items": {"type": "string"}},
    "context_summary": {"type": "string"}, "urgency": {"type": "string", "enum": ["low", "normal", "high"]}},
  "required": ["question"]}`)},
		{Name: ToolStoreMemory, Description: "Remember a value under a key for the rest of this run.", Parameters: json.RawMessage(`{"type": "object",
  "properties": {"key": {"type": "string"}, "value": {}}, "required": ["key", "value"]}`)},
		{Name: ToolRetrieveMemory, Description: "Recall a value stored with __store_memory__ (no key: list the keys).", Parameters: json.RawMessage(`{"type": "object",
  "properties": {"key": {"type": "string"}}}`)},
		{Name: ToolLogProgress, Description: "Note progress for the people who read the trace.", Parameters: json.RawMessage(`{"type": "object",
  "properties": {"message": {"type": "string"}}, "required": ["message"]}`)},
	}
}

// implicit runs an implicit tool on the pending call: it records the observation, or
// pauses the run (the observation is then the person's answer, given to Resume).
func (st *State) implicit(name string, args map[string]any) {
	switch name {
	case ToolComplete:
		st.complete(args)
	case ToolPauseForHuman:
		q, _ := args["question"].(string)
		if q == "" {
			st.observe(feedback(ToolPauseForHuman+" needs a question"), nil)
			return
		}
		p := &PauseRequest{Question: q, Urgency: "normal"}
		p.ContextSummary, _ = args["context_summary"].(string)
		if u, _ := args["urgency"].(string); u != "" {
			p.Urgency = u
		}
		if opts, ok := args["options"].([]any); ok {
			for _, o := range opts {
				p.Options = append(p.Options, fmt.Sprint(o))
			}
		}
		st.Status, st.Reason, st.Pause = StatusPaused, "waiting for a person: "+clip(q, 200), p
	case ToolStoreMemory:
		key, _ := args["key"].(string)
		if key == "" {
			st.observe(feedback(ToolStoreMemory+" needs a key"), nil)
			return
		}
		b, _ := json.Marshal(args["value"])
		if st.Memory == nil {
			st.Memory = map[string]json.RawMessage{}
		}
		st.Memory[key] = b
		st.observe(observationJSON(map[string]any{"stored": key}), nil)
	case ToolRetrieveMemory:
		key, _ := args["key"].(string)
		if key == "" {
			keys := make([]string, 0, len(st.Memory))
			for k := range st.Memory {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			st.observe(observationJSON(map[string]any{"keys": keys}), nil)
			return
		}
		v, ok := st.Memory[key]
		if !ok {
			st.observe(feedback("nothing is stored under "+key), nil)
			return
		}
		st.observe(observationJSON(map[string]any{"key": key, "value": v}), nil)
	case ToolLogProgress:
		st.observe(observationJSON(map[string]any{"logged": true}), nil)
	}
}

// complete takes __complete__, or refuses it with the reason as the observation.
func (st *State) complete(args map[string]any) {
	answer, isString := args["answer"].(string)
	conf, isNumber := args["confidence"].(float64)
	switch {
	case !isString:
		st.observe(feedback(ToolComplete+" needs answer, a string"), nil)
		return
	case !isNumber || conf < 0 || conf > 1:
		st.observe(feedback(ToolComplete+" needs confidence, a number from 0 to 1"), nil)
		return
	}
	claim, _ := args["match_claim"].(string)
	if refusal := CheckClaim(st.Evidence, claim); refusal != nil {
		st.observe(observationJSON(refusal), nil)
		return
	}
	st.observe(observationJSON(map[string]any{"completed": true}), nil)
	st.Answer, st.Confidence, st.MatchClaim = answer, conf, claim
	st.end(StatusCompleted, "")
}
