package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
)

// script is a model whose reply depends only on how far the conversation is (the number of
// tool results in the request), so a run replayed from a checkpoint gets the same replies.
type script struct {
	mu    sync.Mutex
	turns []agent.Message
	usage agent.Usage
	calls int
	reqs  []agent.Request
}

func (s *script) Chat(_ context.Context, req agent.Request) (*agent.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.reqs = append(s.reqs, req)
	n := 0
	for _, m := range req.Messages {
		if m.Role == agent.RoleTool {
			n++
		}
	}
	if n >= len(s.turns) {
		return nil, errors.New("script exhausted")
	}
	u := s.usage
	if u == (agent.Usage{}) {
		u = agent.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}
	}
	return &agent.Response{Message: s.turns[n], Usage: u, FinishReason: agent.FinishToolCalls}, nil
}

func call(id, name, args string) agent.Message {
	return agent.Message{Role: agent.RoleAssistant, Content: "thinking about " + name,
		ToolCalls: []agent.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}

// toolbox has one tool, "lookup", answering from a map, and "reconcile", answering with
// match counts.
type toolbox struct {
	mu     sync.Mutex
	calls  []string
	counts agent.MatchCounts
}

func (t *toolbox) Tools() []agent.Tool {
	return []agent.Tool{{Name: "lookup", Parameters: json.RawMessage(`{"type": "object"}`)}, {Name: "reconcile"}}
}

func (t *toolbox) Call(_ context.Context, c agent.ToolCall) (*agent.ToolResult, error) {
	t.mu.Lock()
	t.calls = append(t.calls, c.Name+" "+string(c.Arguments))
	t.mu.Unlock()
	switch c.Name {
	case "lookup":
		var in struct{ Q string }
		_ = json.Unmarshal(c.Arguments, &in)
		if in.Q == "fail" {
			return nil, errors.New("the ledger is down")
		}
		return &agent.ToolResult{Output: map[string]any{"q": in.Q, "hits": 2}}, nil
	case "reconcile":
		m := t.counts
		return &agent.ToolResult{Output: map[string]any{"matchGroupCounts": m}, Match: &m}, nil
	}
	return nil, fmt.Errorf("%w: %s", agent.ErrUnknownTool, c.Name)
}

// saves records every checkpoint as JSON.
type saves struct {
	mu     sync.Mutex
	states []string
	failAt int // the save that fails (1-based), 0: none
}

var errCrash = errors.New("crash")

func (s *saves) Save(_ context.Context, st *agent.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAt > 0 && len(s.states)+1 == s.failAt {
		return errCrash
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	s.states = append(s.states, string(b))
	return nil
}

func (s *saves) last(t *testing.T) *agent.State {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var st agent.State
	require.NoError(t, json.Unmarshal([]byte(s.states[len(s.states)-1]), &st))
	return &st
}

func run(t *testing.T, m agent.Model, tb agent.Toolbox, cfg agent.Config) (*agent.State, *saves) {
	t.Helper()
	sv := &saves{}
	l := &agent.Loop{Model: m, Tools: tb, Checkpoints: sv}
	st := agent.Start(cfg)
	require.NoError(t, l.Run(context.Background(), cfg, st))
	return st, sv
}

func actions(st *agent.State) []string {
	out := make([]string, len(st.Trace))
	for i, e := range st.Trace {
		out[i] = e.Action
	}
	return out
}

func TestLoopCompletes(t *testing.T) {
	t.Parallel()
	m := &script{turns: []agent.Message{
		call("1", "lookup", `{"q": "acme"}`),
		call("2", "__store_memory__", `{"key": "acme", "value": {"hits": 2}}`),
		call("3", "__retrieve_memory__", `{"key": "acme"}`),
		call("4", "__log_progress__", `{"message": "found acme"}`),
		call("5", "__complete__", `{"answer": "acme has 2 hits", "confidence": 0.9}`),
	}}
	tb := &toolbox{}
	cfg := agent.Config{Objective: "count acme", Model: "m"}
	st, sv := run(t, m, tb, cfg)
	require.Equal(t, agent.StatusCompleted, st.Status, st.Reason)
	require.Equal(t, agent.Result{Status: agent.StatusCompleted, Answer: "acme has 2 hits", Confidence: 0.9, Iterations: 5}, st.Result())
	require.Equal(t, []string{"lookup", "__store_memory__", "__retrieve_memory__", "__log_progress__", "__complete__"}, actions(st))
	require.Equal(t, 1, st.Trace[0].Iteration)
	require.Equal(t, "thinking about lookup", st.Trace[0].Thought)
	require.JSONEq(t, `{"q": "acme", "hits": 2}`, string(st.Trace[0].Observation))
	require.JSONEq(t, `{"key": "acme", "value": {"hits": 2}}`, string(st.Trace[2].Observation))
	require.Equal(t, []string{`lookup {"q": "acme"}`}, tb.calls, "implicit tools never reach the toolbox")
	require.Equal(t, 5, st.ModelCalls)
	require.Equal(t, agent.Usage{InputTokens: 500, OutputTokens: 100, TotalTokens: 600}, st.Usage)
	require.Len(t, sv.states, 10, "a checkpoint after each model reply and after each observation")

	// Every request offered the declared tools and the implicit ones.
	var names []string
	for _, tool := range m.reqs[0].Tools {
		names = append(names, tool.Name)
	}
	require.Equal(t, []string{"lookup", "reconcile", "__complete__", "__pause_for_human__", "__store_memory__",
		"__retrieve_memory__", "__log_progress__"}, names)
}

func TestLoopFeedsMistakesBack(t *testing.T) {
	t.Parallel()
	m := &script{turns: []agent.Message{
		call("1", "lookup", `{"q": "acme"`),                       // malformed arguments
		call("2", "delete_everything", `{}`),                      // not a tool of this agent
		call("3", "lookup", `{"q": "fail"}`),                      // the tool fails
		{Role: agent.RoleAssistant, Content: "I think I am done"}, // no tool call
		call("5", "__complete__", `{"answer": "x", "confidence": 2}`),
		call("6", "__complete__", `{"answer": "x", "confidence": 1}`),
	}}
	st, _ := run(t, m, &toolbox{}, agent.Config{Objective: "o", Model: "m"})
	require.Equal(t, agent.StatusCompleted, st.Status, st.Reason)
	obs := func(i int) string { return string(st.Trace[i].Observation) }
	require.Contains(t, obs(0), "not a JSON object")
	require.Contains(t, obs(1), "delete_everything is not a tool you can use here")
	require.Contains(t, obs(1), "your tools: lookup, reconcile")
	require.Contains(t, obs(2), "the ledger is down")
	require.Contains(t, obs(3), "called no tool")
	require.Contains(t, obs(4), "confidence, a number from 0 to 1")
	require.JSONEq(t, `"{\"q\": \"acme\""`, string(st.Trace[0].ActionInput), "malformed input is kept, as a string")
	require.Equal(t, 6, st.Iterations)
}

func TestLoopMatchEvidence(t *testing.T) {
	t.Parallel()
	t.Run("a false clean claim is refused with the real counts", func(t *testing.T) {
		t.Parallel()
		m := &script{turns: []agent.Message{
			call("1", "reconcile", `{}`),
			call("2", "__complete__", `{"answer": "all matched", "confidence": 0.99}`),
			call("3", "__complete__", `{"answer": "all matched", "confidence": 0.99, "match_claim": "clean"}`),
			call("4", "__complete__", `{"answer": "2 variances, 1 orphan", "confidence": 0.8, "match_claim": "discrepancies"}`),
		}}
		tb := &toolbox{counts: agent.MatchCounts{Groups: 10, Full: 8, Variance: 2, Orphan: 1}}
		st, _ := run(t, m, tb, agent.Config{Objective: "reconcile", Model: "m"})
		require.Equal(t, agent.StatusCompleted, st.Status, st.Reason)
		require.Equal(t, "2 variances, 1 orphan", st.Answer)
		require.Equal(t, agent.ClaimDiscrepancies, st.MatchClaim)
		require.Contains(t, string(st.Trace[1].Observation), "give match_claim")
		var refusal agent.ClaimRefusal
		require.NoError(t, json.Unmarshal(st.Trace[2].Observation, &refusal))
		require.Contains(t, refusal.Refused, "clean match was refused")
		require.Equal(t, tb.counts, refusal.MatchCounts, "the real counts go back to the model")
		// The model read the refusal as its observation.
		last := m.reqs[3].Messages[len(m.reqs[3].Messages)-1]
		require.Equal(t, agent.RoleTool, last.Role)
		require.Contains(t, last.Content, `"variance":2`)
	})
	t.Run("a false discrepancy claim is refused", func(t *testing.T) {
		t.Parallel()
		m := &script{turns: []agent.Message{
			call("1", "reconcile", `{}`),
			call("2", "__complete__", `{"answer": "3 exceptions", "confidence": 0.7, "match_claim": "discrepancies"}`),
			call("3", "__complete__", `{"answer": "clean", "confidence": 0.95, "match_claim": "clean"}`),
		}}
		tb := &toolbox{counts: agent.MatchCounts{Groups: 5, Full: 5}}
		st, _ := run(t, m, tb, agent.Config{Objective: "reconcile", Model: "m"})
		require.Equal(t, agent.StatusCompleted, st.Status)
		require.Equal(t, "clean", st.Answer)
		require.Contains(t, string(st.Trace[1].Observation), "claim of discrepancies was refused")
	})
	t.Run("without evidence no claim is asked for", func(t *testing.T) {
		t.Parallel()
		m := &script{turns: []agent.Message{call("1", "__complete__", `{"answer": "hi", "confidence": 0.5}`)}}
		st, _ := run(t, m, &toolbox{}, agent.Config{Objective: "o", Model: "m"})
		require.Equal(t, agent.StatusCompleted, st.Status)
	})
}

func TestLoopBudgets(t *testing.T) {
	t.Parallel()
	t.Run("a prompt over the input budget stops before the first call", func(t *testing.T) {
		t.Parallel()
		m := &script{turns: []agent.Message{call("1", "__complete__", `{"answer": "a", "confidence": 1}`)}}
		st, _ := run(t, m, &toolbox{}, agent.Config{Objective: strings.Repeat("reconcile this ", 2000), Model: "m",
			Budget: agent.Budget{InputTokens: 1000}})
		require.Equal(t, agent.StatusBudgetExceeded, st.Status)
		require.Contains(t, st.Reason, "the prompt alone")
		require.Zero(t, m.calls, "no model call")
	})
	t.Run("output tokens spent mid-run keep the trace", func(t *testing.T) {
		t.Parallel()
		m := &script{usage: agent.Usage{InputTokens: 500, OutputTokens: 400, TotalTokens: 900},
			turns: []agent.Message{call("1", "lookup", `{"q": "a"}`), call("2", "lookup", `{"q": "b"}`), call("3", "lookup", `{"q": "c"}`)}}
		st, _ := run(t, m, &toolbox{}, agent.Config{Objective: "o", Model: "m", Budget: agent.Budget{OutputTokens: 1000}})
		require.Equal(t, agent.StatusBudgetExceeded, st.Status)
		require.Contains(t, st.Reason, "output tokens")
		require.Equal(t, []string{"lookup", "lookup"}, actions(st), "the iterations before stay in the trace")
	})
	// Each call's max_tokens is what the budget has left (issue 31: no cap was set, so one
	// reply could spend the whole output budget): the output tokens left, the tokens in all
	// left once the prompt is counted, and Config.MaxTokens when lower.
	for _, tc := range []struct {
		name      string
		maxTokens int
		want      []int
	}{
		{"each reply is capped by what the budget has left", 0, []int{1000, 600, 100}},
		{"Config.MaxTokens caps it lower", 700, []int{700, 600, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var caps []int
			// A provider stops a reply at max_tokens; this one would write 400 tokens.
			m := agent.ModelFunc(func(_ context.Context, req agent.Request) (*agent.Response, error) {
				caps = append(caps, req.MaxTokens)
				out, finish := min(400, req.MaxTokens), agent.FinishToolCalls
				if out < 400 {
					finish = agent.FinishLength
				}
				return &agent.Response{Message: call(fmt.Sprint(len(caps)), "lookup", `{"q": "a"}`), FinishReason: finish,
					Usage: agent.Usage{InputTokens: 100, OutputTokens: out, TotalTokens: 100 + out}}, nil
			})
			l := &agent.Loop{Model: m, Tools: &toolbox{}, Checkpoints: &saves{}, Tokens: func(agent.Request) int { return 100 },
				Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
			cfg := agent.Config{Objective: "o", Model: "m", MaxTokens: tc.maxTokens, OnStuck: &agent.OnStuck{Iterations: 0},
				Budget: agent.Budget{OutputTokens: 1000, TotalTokens: 1200}}
			st := agent.Start(cfg)
			require.NoError(t, l.Run(context.Background(), cfg, st))
			require.Equal(t, tc.want, caps)
			require.Equal(t, agent.StatusBudgetExceeded, st.Status)
			require.Contains(t, st.Reason, "no tokens left for a reply")
			require.LessOrEqual(t, st.Usage.OutputTokens, 1000, "never over the output budget")
			require.LessOrEqual(t, st.Usage.TotalTokens, 1200, "never over the budget in all")
		})
	}
	t.Run("model calls", func(t *testing.T) {
		t.Parallel()
		m := &script{turns: []agent.Message{call("1", "lookup", `{"q": "a"}`), call("2", "lookup", `{"q": "b"}`), call("3", "lookup", `{"q": "c"}`)}}
		st, _ := run(t, m, &toolbox{}, agent.Config{Objective: "o", Model: "m", Budget: agent.Budget{ModelCalls: 2}})
		require.Equal(t, agent.StatusBudgetExceeded, st.Status)
		require.Equal(t, 2, m.calls)
	})
	t.Run("wall time", func(t *testing.T) {
		t.Parallel()
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		m := agent.ModelFunc(func(ctx context.Context, req agent.Request) (*agent.Response, error) {
			clock = clock.Add(40 * time.Second)
			return &agent.Response{Message: call("x", "lookup", `{"q": "again and again"}`)}, nil
		})
		l := &agent.Loop{Model: m, Tools: &toolbox{}, Checkpoints: &saves{}, Now: func() time.Time { return clock }}
		cfg := agent.Config{Objective: "o", Model: "m", Budget: agent.Budget{Wall: 100 * time.Second},
			OnStuck: &agent.OnStuck{Iterations: 0}}
		st := agent.Start(cfg)
		require.NoError(t, l.Run(context.Background(), cfg, st))
		require.Equal(t, agent.StatusBudgetExceeded, st.Status)
		require.Contains(t, st.Reason, "wall time")
		require.Equal(t, 3, st.Iterations)
	})
	t.Run("max_iterations", func(t *testing.T) {
		t.Parallel()
		m := &script{turns: []agent.Message{call("1", "lookup", `{"q": "a"}`), call("2", "lookup", `{"q": "b"}`), call("3", "lookup", `{"q": "c"}`)}}
		st, _ := run(t, m, &toolbox{}, agent.Config{Objective: "o", Model: "m", MaxIterations: 2})
		require.Equal(t, agent.StatusFailed, st.Status)
		require.Contains(t, st.Reason, "max_iterations")
		require.Equal(t, 2, st.Iterations)
	})
}

func TestLoopPausesForAPersonAndResumes(t *testing.T) {
	t.Parallel()
	m := &script{turns: []agent.Message{
		call("1", "__pause_for_human__", `{"question": "Write off the 1.50 variance?", "options": ["yes", "no"], "urgency": "high"}`),
		call("2", "__complete__", `{"answer": "written off", "confidence": 1}`),
	}}
	sv := &saves{}
	l := &agent.Loop{Model: m, Tools: &toolbox{}, Checkpoints: sv}
	cfg := agent.Config{Objective: "o", Model: "m"}
	st := agent.Start(cfg)
	require.NoError(t, l.Run(context.Background(), cfg, st))
	require.Equal(t, agent.StatusPaused, st.Status)
	require.Equal(t, &agent.PauseRequest{Question: "Write off the 1.50 variance?", Options: []string{"yes", "no"}, Urgency: "high"}, st.Pause)
	require.Zero(t, st.Iterations, "the iteration ends with the person's answer")
	require.ErrorIs(t, agent.Resume(agent.Start(cfg), "x", true), agent.ErrNotPaused)

	// Resumed from the checkpoint, as another process would.
	st = sv.last(t)
	require.NoError(t, agent.Resume(st, "yes, write it off", true))
	require.NoError(t, l.Run(context.Background(), cfg, st))
	require.Equal(t, agent.StatusCompleted, st.Status, st.Reason)
	require.JSONEq(t, `{"human_input": "yes, write it off", "approved": true}`, string(st.Trace[0].Observation))
	require.Equal(t, 2, st.Iterations)
}

func TestLoopEscalatesWhenStuck(t *testing.T) {
	t.Parallel()
	same := call("x", "lookup", `{"q": "acme"}`)
	m := &script{turns: []agent.Message{same, same, same, call("4", "__complete__", `{"answer": "gave up", "confidence": 0.1}`)}}
	cfg := agent.Config{Objective: "o", Model: "m", OnStuck: &agent.OnStuck{Iterations: 3, Action: agent.StuckEscalate}}
	sv := &saves{}
	l := &agent.Loop{Model: m, Tools: &toolbox{}, Checkpoints: sv}
	st := agent.Start(cfg)
	require.NoError(t, l.Run(context.Background(), cfg, st))
	require.Equal(t, agent.StatusPaused, st.Status)
	require.True(t, st.Pause.Stuck)
	require.Contains(t, st.Reason, "same input 3 times in a row")
	require.Contains(t, st.Pause.ContextSummary, `3. lookup {"q":"acme"}`)
	require.NoError(t, agent.Resume(st, "stop looking it up and answer", true))
	require.NoError(t, l.Run(context.Background(), cfg, st))
	require.Equal(t, agent.StatusCompleted, st.Status, st.Reason)
}

// TestLoopCrashAtEveryBoundary: a run whose process dies at any checkpoint goes on from the
// last state saved and ends with the same trace as a run that never died; a call recorded
// before the crash is not made again.
func TestLoopCrashAtEveryBoundary(t *testing.T) {
	t.Parallel()
	turns := []agent.Message{
		call("1", "lookup", `{"q": "a"}`),
		call("2", "reconcile", `{}`),
		call("3", "__store_memory__", `{"key": "k", "value": 1}`),
		call("4", "__complete__", `{"answer": "done", "confidence": 0.6, "match_claim": "none"}`),
	}
	cfg := agent.Config{Objective: "o", Model: "m"}
	base, baseSaves := run(t, &script{turns: turns}, &toolbox{}, cfg)
	require.Equal(t, agent.StatusCompleted, base.Status)
	for crashAt := 1; crashAt <= len(baseSaves.states); crashAt++ {
		t.Run(fmt.Sprint(crashAt), func(t *testing.T) {
			m, tb := &script{turns: turns}, &toolbox{}
			sv := &saves{failAt: crashAt}
			st := agent.Start(cfg)
			err := (&agent.Loop{Model: m, Tools: tb, Checkpoints: sv}).Run(context.Background(), cfg, st)
			require.ErrorIs(t, err, errCrash)
			st = agent.Start(cfg)
			if len(sv.states) > 0 {
				st = sv.last(t)
			}
			sv.failAt = 0
			require.NoError(t, (&agent.Loop{Model: m, Tools: tb, Checkpoints: sv}).Run(context.Background(), cfg, st))
			require.Equal(t, base.Trace, st.Trace)
			require.Equal(t, base.Result(), st.Result())
			require.LessOrEqual(t, len(tb.calls), 3, "at most the one call in progress is made again")
		})
	}
}

func TestParseBudget(t *testing.T) {
	t.Parallel()
	b, ps := agent.ParseBudget(map[string]any{"input_tokens": float64(2000), "wall_seconds": float64(30)})
	require.Empty(t, ps)
	require.Equal(t, 2000, b.InputTokens)
	require.Equal(t, 30*time.Second, b.Wall)
	require.Equal(t, agent.DefaultBudget().OutputTokens, b.OutputTokens)
	_, ps = agent.ParseBudget(map[string]any{"input_tokens": float64(-1), "tokens": float64(5), "model_calls": 2.5})
	require.Equal(t, []agent.BudgetProblem{
		{Key: "input_tokens", Message: "a whole number from 1 to 10000000"},
		{Key: "model_calls", Message: "a whole number from 1 to 10000"},
		{Key: "tokens", Message: "not a budget: input_tokens, output_tokens, total_tokens, model_calls or wall_seconds"},
	}, ps)
}
