package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The bounded ReAct loop. An agent is a worker with a budget and a fixed toolbox: each
// iteration is one model call that chooses one tool, then that tool's call and its
// observation. The loop stops when the model calls __complete__ (and its claim survives
// the match evidence), when it asks a person (__pause_for_human__, or stuck detection
// escalating), or when a budget or the iteration cap is spent. Everything it needs to go on
// is in State, which the Checkpointer saves after the model's choice and after the
// observation: a run resumed from its last checkpoint redoes at most the step in progress,
// never a recorded call.

// Status is where an agent run stands.
type Status string

// Statuses of an agent run.
const (
	StatusRunning        Status = "running"
	StatusPaused         Status = "paused"
	StatusCompleted      Status = "completed"
	StatusFailed         Status = "failed"
	StatusBudgetExceeded Status = "budget_exceeded"
	StatusCancelled      Status = "cancelled"
)

// Ended reports whether s is final.
func (s Status) Ended() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusBudgetExceeded || s == StatusCancelled
}

// Limits of the loop.
const (
	// DefaultMaxIterations caps iterations when the step names no max_iterations;
	// MaxIterations is the most one may name.
	DefaultMaxIterations = 25
	MaxIterations        = 1000
	// DefaultStuckIterations is on_stuck.iterations when the step sets none.
	DefaultStuckIterations = 3
)

// OnStuck is the step's stuck detection: the same tool with the same input Iterations times
// in a row, or Iterations iterations in a row whose observations were all seen before,
// escalate (the run pauses for a person with a summary of the trace).
type OnStuck struct {
	Iterations int    `json:"iterations"`
	Action     string `json:"action"`
}

// StuckEscalate is the on_stuck action: pause for a person.
const StuckEscalate = "escalate"

// Config is what one agent run is asked to do, with what and within what.
type Config struct {
	Objective string
	// Model names the provider's model.
	Model string
	// MaxIterations caps the iterations (DefaultMaxIterations when 0).
	MaxIterations int
	// OnStuck is the stuck detection (DefaultStuckIterations, escalate, when nil).
	OnStuck *OnStuck
	Budget  Budget
	// MaxTokens caps each reply below what the budget has left, which always caps it.
	MaxTokens int
}

// TraceEntry is one iteration as the trace records it: the model's thought (its text),
// the tool it chose and the input it gave, and the observation in full.
type TraceEntry struct {
	Iteration   int             `json:"iteration"`
	Thought     string          `json:"thought,omitempty"`
	Action      string          `json:"action"`
	ActionInput json.RawMessage `json:"action_input"`
	Observation json.RawMessage `json:"observation"`
}

// PauseRequest is what a paused agent asks a person.
type PauseRequest struct {
	Question       string   `json:"question"`
	Options        []string `json:"options,omitempty"`
	ContextSummary string   `json:"context_summary,omitempty"`
	Urgency        string   `json:"urgency,omitempty"`
	// Stuck is set when stuck detection paused the run, not the model.
	Stuck bool `json:"stuck,omitempty"`
}

// State is an agent run's checkpoint: JSON, saved after every step of every iteration.
type State struct {
	Status Status `json:"status"`
	// Reason says why the run ended, or paused.
	Reason     string    `json:"reason,omitempty"`
	Iterations int       `json:"iterations"`
	Messages   []Message `json:"messages"`
	Trace      []TraceEntry
	Usage      Usage `json:"usage"`
	ModelCalls int   `json:"model_calls"`
	// Elapsed is the wall time the run has spent running (not paused).
	Elapsed time.Duration              `json:"elapsed"`
	Memory  map[string]json.RawMessage `json:"memory,omitempty"`
	// Pending is the tool call the model chose whose observation is not recorded yet (with
	// the model's thought); on a pause for a person, the person's answer is its observation.
	Pending        *ToolCall     `json:"pending,omitempty"`
	PendingThought string        `json:"pending_thought,omitempty"`
	Pause          *PauseRequest `json:"pause,omitempty"`
	Answer         string        `json:"answer,omitempty"`
	Confidence     float64       `json:"confidence,omitempty"`
	MatchClaim     string        `json:"match_claim,omitempty"`
	// Evidence is the match counts the run's tools returned last: trusted evidence.
	Evidence *MatchCounts `json:"evidence,omitempty"`
	Stuck    stuckState   `json:"stuck"`
}

// stuckState is what stuck detection remembers.
type stuckState struct {
	LastCall string          `json:"last_call,omitempty"`
	Repeats  int             `json:"repeats,omitempty"`
	Stale    int             `json:"stale,omitempty"`
	Seen     map[string]bool `json:"seen,omitempty"`
}

// Result is what an agent run hands its caller: {status, answer, confidence, iterations}.
type Result struct {
	Status     Status  `json:"status"`
	Answer     string  `json:"answer,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Iterations int     `json:"iterations"`
}

// Result returns the run's result as it stands.
func (s *State) Result() Result {
	return Result{Status: s.Status, Answer: s.Answer, Confidence: s.Confidence, Iterations: s.Iterations}
}

// Checkpointer saves a run's state; an error stops the loop (the run goes on from the last
// state saved).
type Checkpointer interface {
	Save(ctx context.Context, st *State) error
}

// CheckpointFunc lets a function be a Checkpointer.
type CheckpointFunc func(ctx context.Context, st *State) error

// Save calls f.
func (f CheckpointFunc) Save(ctx context.Context, st *State) error { return f(ctx, st) }

// Loop runs agents. Model, Tools and Checkpoints are required.
type Loop struct {
	Model       Model
	Tools       Toolbox
	Checkpoints Checkpointer
	// Tokens counts a prompt's tokens before it is sent (EstimateTokens when nil).
	Tokens TokenCounter
	// Now is the clock of the wall budget (time.Now when nil).
	Now func() time.Time
	// Yield, when set, is asked after every checkpoint; true makes Run return with the run
	// still running (a worker handing it back to the queue after its time slice).
	Yield func() bool
}

// systemPrompt tells the model how the loop works.
const systemPrompt = `You are an agent that reaches an objective with the tools you are given, and only with them.
Each turn, call exactly one tool. Observations come back as tool results.
When you have the answer, call __complete__ with the answer and your confidence from 0 to 1; when match counts
were observed, also give match_claim: "clean" (every group full, no orphans), "discrepancies" (a missing leg,
a variance or an orphan), or "none" (your answer makes no claim about the match).
If you cannot go on without a person, call __pause_for_human__ with your question.`

// Start returns the state of a new run of cfg.
func Start(cfg Config) *State {
	return &State{Status: StatusRunning, Messages: []Message{
		{Role: RoleSystem, Content: systemPrompt},
		{Role: RoleUser, Content: "Objective: " + cfg.Objective},
	}}
}

// ErrNotPaused: Resume of a run that is not paused.
var ErrNotPaused = errors.New("the agent run is not paused")

// Resume hands a paused run a person's answer: the observation of its __pause_for_human__
// call (or, after stuck detection, a message from the person), and sets it running again.
func Resume(st *State, humanInput string, approved bool) error {
	if st.Status != StatusPaused {
		return fmt.Errorf("%w (it is %s)", ErrNotPaused, st.Status)
	}
	answer := map[string]any{"human_input": humanInput, "approved": approved}
	if st.Pending != nil {
		st.observe(observationJSON(answer), answer)
	} else {
		b, _ := json.Marshal(answer)
		st.Messages = append(st.Messages, Message{Role: RoleUser, Content: "A person answered your escalation: " + string(b)})
		st.Stuck = stuckState{Seen: st.Stuck.Seen}
	}
	st.Status, st.Reason, st.Pause = StatusRunning, "", nil
	return nil
}

// Run advances st until it ends or pauses, or ctx is done (then it returns ctx's error and
// st is as last saved plus whatever step was in progress). cfg must be the run's own.
func (l *Loop) Run(ctx context.Context, cfg Config, st *State) error {
	if st.Status != StatusRunning {
		return nil
	}
	now := l.Now
	if now == nil {
		now = time.Now
	}
	began := now()
	save := func() error {
		t := now()
		st.Elapsed += t.Sub(began)
		began = t
		return l.Checkpoints.Save(ctx, st)
	}
	for st.Status == StatusRunning {
		if err := ctx.Err(); err != nil {
			return err
		}
		if st.Pending == nil {
			if err := l.decide(ctx, cfg, st, began, now); err != nil {
				return err
			}
			if err := save(); err != nil {
				return err
			}
			continue
		}
		if err := l.act(ctx, cfg, st); err != nil {
			return err
		}
		if err := save(); err != nil {
			return err
		}
		if st.Status == StatusRunning && l.Yield != nil && l.Yield() {
			return nil
		}
	}
	return nil
}

// decide makes the iteration's model call (or ends the run on a spent budget) and records
// the model's choice as st.Pending.
func (l *Loop) decide(ctx context.Context, cfg Config, st *State, began time.Time, now func() time.Time) error {
	b := cfg.Budget.orDefaults()
	maxIter := cfg.MaxIterations
	if maxIter <= 0 {
		maxIter = DefaultMaxIterations
	}
	switch {
	case st.Iterations >= maxIter:
		st.end(StatusFailed, fmt.Sprintf("max_iterations: %d iterations without __complete__", maxIter))
		return nil
	case st.ModelCalls >= b.ModelCalls:
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: %d model calls", b.ModelCalls))
		return nil
	case st.Elapsed+now().Sub(began) >= b.Wall:
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: wall time %s", b.Wall))
		return nil
	}
	req := Request{Model: cfg.Model, Messages: st.Messages, Tools: append(l.Tools.Tools(), ImplicitTools()...)}
	count := l.Tokens
	if count == nil {
		count = EstimateTokens
	}
	prompt := count(req)
	if st.Usage.InputTokens+prompt > b.InputTokens {
		what := "the prompt"
		if st.ModelCalls == 0 {
			what = "the prompt alone"
		}
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: %s is about %d input tokens, over the input budget of %d (%d used)",
			what, prompt, b.InputTokens, st.Usage.InputTokens))
		return nil
	}
	// The reply may spend what the budget has left, no more: the output tokens left, and
	// the tokens in all left once the prompt is counted (cfg.MaxTokens caps it further).
	// Without the cap one reply could spend the whole output budget and more.
	req.MaxTokens = min(b.OutputTokens-st.Usage.OutputTokens, b.TotalTokens-st.Usage.TotalTokens-prompt)
	if cfg.MaxTokens > 0 {
		req.MaxTokens = min(req.MaxTokens, cfg.MaxTokens)
	}
	if req.MaxTokens < 1 {
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: no tokens left for a reply (%d of %d output tokens used, %d of %d in all, and a prompt of about %d)",
			st.Usage.OutputTokens, b.OutputTokens, st.Usage.TotalTokens, b.TotalTokens, prompt))
		return nil
	}
	resp, err := l.Model.Chat(ctx, req)
	st.ModelCalls++
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		st.end(StatusFailed, "the model call failed: "+err.Error())
		return nil
	}
	st.Usage = st.Usage.Add(resp.Usage)
	reply := resp.Message
	reply.Role = RoleAssistant
	if len(reply.ToolCalls) == 0 {
		// A reply without a tool call is an iteration of its own whose observation says so.
		reply.ToolCalls = []ToolCall{{ID: fmt.Sprintf("noop-%d", st.Iterations+1), Name: noTool,
			Arguments: json.RawMessage(`{}`)}}
	}
	reply.ToolCalls = slices.Clone(reply.ToolCalls)
	for i, c := range reply.ToolCalls {
		// Arguments that are not JSON are kept as a JSON string (as agent/llm does), so the
		// conversation and its checkpoint always encode; act then tells the model.
		if !json.Valid(c.Arguments) {
			reply.ToolCalls[i].Arguments, _ = json.Marshal(string(c.Arguments))
		}
	}
	st.Messages = append(st.Messages, reply)
	st.Pending, st.PendingThought = &reply.ToolCalls[0], reply.Content
	if resp.FinishReason == FinishLength {
		st.PendingThought = strings.TrimSpace(st.PendingThought + " [the reply was cut at the token cap]")
	}
	// Every call beyond the first is answered at once: one tool per iteration.
	for _, c := range reply.ToolCalls[1:] {
		st.Messages = append(st.Messages, Message{Role: RoleTool, ToolCallID: c.ID,
			Content: `{"error": "not run: call one tool per turn; call it again if you still need it"}`})
	}
	switch {
	case st.Usage.InputTokens > b.InputTokens:
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: %d input tokens, over %d", st.Usage.InputTokens, b.InputTokens))
	case st.Usage.OutputTokens > b.OutputTokens:
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: %d output tokens, over %d", st.Usage.OutputTokens, b.OutputTokens))
	case st.Usage.TotalTokens > b.TotalTokens:
		st.end(StatusBudgetExceeded, fmt.Sprintf("budget_exceeded: %d tokens in all, over %d", st.Usage.TotalTokens, b.TotalTokens))
	}
	return nil
}

// noTool stands for a reply that called no tool.
const noTool = "(no tool)"

// act runs st.Pending and records its observation (or pauses the run).
func (l *Loop) act(ctx context.Context, cfg Config, st *State) error {
	call := *st.Pending
	if call.Name == noTool {
		st.observe(feedback("your reply called no tool: call exactly one tool each turn; to give your answer, call "+ToolComplete), nil)
		return nil
	}
	var args map[string]any
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args == nil {
		st.observe(feedback(fmt.Sprintf("the arguments of %s are not a JSON object (%s): call it again with valid JSON arguments",
			call.Name, clip(string(call.Arguments), 200))), nil)
		return nil
	}
	if implicitTool(call.Name) {
		st.implicit(call.Name, args)
		l.checkStuck(cfg, st, call)
		return nil
	}
	res, err := l.Tools.Call(ctx, call)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := err.Error()
		if errors.Is(err, ErrUnknownTool) {
			names := make([]string, 0)
			for _, t := range l.Tools.Tools() {
				names = append(names, t.Name)
			}
			msg = fmt.Sprintf("%s is not a tool you can use here (%v); your tools: %s, and the implicit ones", call.Name, err, strings.Join(names, ", "))
		}
		st.observe(feedback(msg), nil)
		l.checkStuck(cfg, st, call)
		return nil
	}
	if res.Match != nil {
		m := *res.Match
		st.Evidence = &m
	}
	full, err := json.Marshal(res.Output)
	if err != nil {
		st.observe(feedback("the tool's result is not JSON: "+err.Error()), nil)
		return nil
	}
	st.observeRaw(Observe(res.Output), full)
	l.checkStuck(cfg, st, call)
	return nil
}

// observe records the observation of the pending call: model is what the model reads,
// full (nil: the same) what the trace keeps.
func (st *State) observe(model string, full any) {
	raw := json.RawMessage(model)
	if full != nil {
		if b, err := json.Marshal(full); err == nil {
			raw = b
		}
	}
	st.observeRaw(model, raw)
}

func (st *State) observeRaw(model string, full json.RawMessage) {
	call := st.Pending
	st.Iterations++
	st.Messages = append(st.Messages, Message{Role: RoleTool, ToolCallID: call.ID, Content: model})
	var input json.RawMessage
	var buf bytes.Buffer
	if json.Compact(&buf, call.Arguments) == nil {
		input = buf.Bytes()
	} else {
		input, _ = json.Marshal(string(call.Arguments))
	}
	st.Trace = append(st.Trace, TraceEntry{Iteration: st.Iterations, Thought: st.PendingThought, Action: call.Name,
		ActionInput: input, Observation: full})
	st.Pending, st.PendingThought = nil, ""
}

func (st *State) end(status Status, reason string) {
	st.Status, st.Reason = status, reason
}

// checkStuck counts repeats of call and observations seen before, and escalates at the
// threshold.
func (l *Loop) checkStuck(cfg Config, st *State, call ToolCall) {
	if st.Status != StatusRunning || len(st.Trace) == 0 {
		return
	}
	n, action := DefaultStuckIterations, StuckEscalate
	if cfg.OnStuck != nil {
		n, action = cfg.OnStuck.Iterations, cfg.OnStuck.Action
	}
	if n <= 0 || action != StuckEscalate {
		return
	}
	key := call.Name + "\x00" + canonical(call.Arguments)
	if key == st.Stuck.LastCall {
		st.Stuck.Repeats++
	} else {
		st.Stuck.LastCall, st.Stuck.Repeats = key, 1
	}
	obs := st.Trace[len(st.Trace)-1].Observation
	sum := sha256.Sum256(obs)
	h := hex.EncodeToString(sum[:8])
	if st.Stuck.Seen == nil {
		st.Stuck.Seen = map[string]bool{}
	}
	if st.Stuck.Seen[h] {
		st.Stuck.Stale++
	} else {
		st.Stuck.Seen[h], st.Stuck.Stale = true, 0
	}
	why := ""
	switch {
	case st.Stuck.Repeats >= n:
		why = fmt.Sprintf("called %s with the same input %d times in a row", call.Name, st.Stuck.Repeats)
	case st.Stuck.Stale >= n:
		why = fmt.Sprintf("%d iterations in a row learned nothing new", st.Stuck.Stale)
	default:
		return
	}
	st.Status, st.Reason = StatusPaused, "stuck: "+why
	st.Pause = &PauseRequest{Question: "The agent is stuck (" + why + "). How should it go on?",
		ContextSummary: TraceSummary(st.Trace, n), Urgency: "normal", Stuck: true}
}

// TraceSummary is the last n iterations of a trace in a few lines each, for a person.
func TraceSummary(trace []TraceEntry, n int) string {
	var b strings.Builder
	from := max(0, len(trace)-n)
	for _, e := range trace[from:] {
		fmt.Fprintf(&b, "%d. %s %s -> %s\n", e.Iteration, e.Action, clip(string(e.ActionInput), 200), clip(string(e.Observation), 300))
	}
	return strings.TrimSpace(b.String())
}

// canonical re-encodes a JSON value so that equal values compare equal (sorted keys).
func canonical(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(bytes.TrimSpace(raw))
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func feedback(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}

func observationJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return feedback(err.Error())
	}
	return string(b)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
