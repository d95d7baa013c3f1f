package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/agents"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/oauthtools/oauthtest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

// script is a model whose reply depends only on how many tool results the conversation
// holds, so a run replayed after a crash gets the same replies.
type script struct {
	mu    sync.Mutex
	turns []agent.Message
	calls int
	keys  []string // the api keys it was made with
	first string   // the first request's user message
	tools []string // the tools the first request offered
}

func (s *script) Chat(_ context.Context, req agent.Request) (*agent.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls == 1 {
		for _, tool := range req.Tools {
			s.tools = append(s.tools, tool.Name)
		}
		for _, m := range req.Messages {
			if m.Role == agent.RoleUser {
				s.first = m.Content
			}
		}
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == agent.RoleTool {
			n++
		}
	}
	if n >= len(s.turns) {
		return nil, errors.New("script exhausted")
	}
	return &agent.Response{Message: s.turns[n], Usage: agent.Usage{InputTokens: 50, OutputTokens: 10, TotalTokens: 60}}, nil
}

func call(name, args string) agent.Message {
	return agent.Message{Role: agent.RoleAssistant, Content: "next: " + name,
		ToolCalls: []agent.ToolCall{{ID: "c-" + name, Name: name, Arguments: json.RawMessage(args)}}}
}

// counting is the store with its action reads counted.
type counting struct {
	*store.Store
	getActions   atomic.Int64
	getAction    atomic.Int64
	getWorkflows atomic.Int64
	getWorkflow  atomic.Int64
}

func (c *counting) GetWorkflows(ctx context.Context, orgID string, ids []string) ([]svctype.Workflow, error) {
	c.getWorkflows.Add(1)
	return c.Store.GetWorkflows(ctx, orgID, ids)
}

func (c *counting) GetActions(ctx context.Context, orgID string, names []string) ([]svctype.Action, error) {
	c.getActions.Add(1)
	return c.Store.GetActions(ctx, orgID, names)
}

func (c *counting) GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error) {
	c.getAction.Add(1)
	return c.Store.GetAction(ctx, orgID, name)
}

type bundle struct {
	eng   *engine.Engine
	st    *counting
	model *script
	ctx   context.Context
	logs  *enginetest.LockedBuffer
}

func setup(t *testing.T, dialect string, turns ...agent.Message) *bundle {
	t.Helper()
	b := &bundle{st: &counting{Store: store.OpenTest(t, dialect)}, model: &script{turns: turns}, ctx: context.Background(),
		logs: &enginetest.LockedBuffer{}}
	eng, err := engine.New(engine.Config{Store: b.st, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
		AllowPrivateTargets: true, Logger: testlog.Tee(slog.NewTextHandler(b.logs, nil)),
		ModelFactory: func(baseURL, apiKey string, hc *http.Client) (agent.Model, error) {
			b.model.mu.Lock()
			b.model.keys = append(b.model.keys, apiKey)
			b.model.mu.Unlock()
			return b.model, nil
		}})
	require.NoError(t, err)
	b.eng = eng
	_, _, err = eng.SetOrgConfig(b.ctx, "acme", engine.LLMAPIKey, "sk-agent-test")
	require.NoError(t, err)
	return b
}

func (b *bundle) work(t *testing.T) {
	t.Helper()
	_, err := b.eng.Work(b.ctx)
	require.NoError(t, err)
}

func (b *bundle) events(t *testing.T, runID string) []string {
	t.Helper()
	page, err := b.eng.RunEvents(b.ctx, "acme", runID, svctype.ListOptions{Limit: 100})
	if err == nil {
		names := []string{}
		for _, e := range page.Items {
			names = append(names, e.Event)
		}
		return names
	}
	// An agent run is not a workflow run: read its events from the outbox directly.
	page, err = b.st.ListRunEvents(b.ctx, "acme", runID, svctype.ListOptions{Limit: 100})
	require.NoError(t, err)
	names := []string{}
	for _, e := range page.Items {
		names = append(names, e.Event)
	}
	return names
}

// TestReconciliationAgent: an agent looks a customer up over HTTP, reconciles with a stored
// nway_match action, is refused a false clean-match claim, asks a person, is resumed, and
// completes with a claim the counts support; on SQLite and PostgreSQL.
func TestReconciliationAgent(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			var keys sync.Map
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				keys.Store(r.Header.Get("Idempotency-Key"), true)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"customer": "ACME Ltd", "terms": "net 30"}`))
			}))
			t.Cleanup(srv.Close)
			b := setup(t, dialect,
				call("lookup_customer", `{"id": "42"}`),
				call("reconcile", `{"bank": [{"inv": "A", "amount": 1}, {"inv": "B", "amount": 1}], "erp": [{"inv": "A", "amount": 1}, {"inv": "B", "amount": 2}], "sets": "ignored"}`),
				call("__complete__", `{"answer": "everything matches", "confidence": 0.9, "match_claim": "clean"}`),
				call("__pause_for_human__", `{"question": "Invoice B differs by 1.00: write it off?", "options": ["write off", "chase"]}`),
				call("__complete__", `{"answer": "B differs by 1.00; written off", "confidence": 0.8, "match_claim": "discrepancies"}`),
			)
			_, err := b.eng.CreateAction(b.ctx, "acme", svctype.Action{Name: "lookup_customer", Kind: svctype.ActionHTTP,
				URL: srv.URL + "/customers", HTTPMethod: "GET", Description: "Look a customer up by id."})
			require.NoError(t, err)
			_, err = b.eng.CreateAction(b.ctx, "acme", svctype.Action{Name: "recon", Kind: svctype.ActionNWayMatch, Properties: map[string]any{
				"sets":       []any{map[string]any{"key": "bank", "records": "@input.bank"}, map[string]any{"key": "erp", "records": "@input.erp"}},
				"matchOn":    []any{"inv"},
				"tolerances": map[string]any{"amount": map[string]any{"type": "abs", "value": 0.0}},
			}})
			require.NoError(t, err)

			r, err := b.eng.ExecuteAgent(b.ctx, "acme", agents.Input{Objective: "Reconcile the bank against the ERP for ACME",
				Tools: []json.RawMessage{json.RawMessage(`{"type": "action", "name": "lookup_customer"}`),
					json.RawMessage(`{"name": "reconcile", "action": "recon", "description": "Reconcile two legs.", "parameters": {"bank": {"type": "array", "required": true}, "erp": {"type": "array", "required": true}}}`),
					json.RawMessage(`"not_registered"`)}})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(r.ID, "agent-"))
			b.work(t)

			r, st, err := b.eng.AgentRun(b.ctx, "acme", r.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.AgentStatus("paused"), r.Status, r.Reason)
			require.Equal(t, "Invoice B differs by 1.00: write it off?", st.Pause.Question)
			require.Equal(t, []string{"lookup_customer", "reconcile", "__complete__"}, actionsOf(st))
			require.Contains(t, string(st.Trace[0].Observation), "ACME Ltd")
			require.Contains(t, string(st.Trace[1].Observation), `"variance":1`)
			require.Contains(t, string(st.Trace[2].Observation), "clean match was refused")
			require.EqualValues(t, 1, hits.Load())
			_, sent := keys.Load(r.ID + "/1/tool")
			require.True(t, sent, "the tool call carries <agent run>/<iteration>/tool as its idempotency key")
			require.Contains(t, b.logs.String(), "argument=sets", "the model's own sets are discarded, and logged")
			require.Equal(t, []string{"sk-agent-test"}, b.model.keys[:1], "the organization's model key")

			// Resumed by a person: it goes on from its checkpoint and completes.
			_, err = b.eng.ResumeAgent(b.ctx, "acme", r.ID, "write it off", true)
			require.NoError(t, err)
			_, err = b.eng.ResumeAgent(b.ctx, "acme", r.ID, "again", true)
			require.ErrorIs(t, err, engine.ErrConflict, "a run that is not paused")
			b.work(t)
			r, st, err = b.eng.AgentRun(b.ctx, "acme", r.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.AgentStatus("completed"), r.Status, r.Reason)
			require.Equal(t, agent.Result{Status: agent.StatusCompleted, Answer: "B differs by 1.00; written off", Confidence: 0.8, Iterations: 5}, st.Result())
			require.NotNil(t, r.FinishedAt)
			require.JSONEq(t, `{"human_input": "write it off", "approved": true}`, string(st.Trace[3].Observation))
			require.EqualValues(t, 1, hits.Load(), "a recorded call is not made again")
			require.Equal(t, 5, b.model.calls)
			require.Equal(t, []string{"agent.started", "agent.paused", "pbot_approval_requested", "agent.completed"}, b.events(t, r.ID))

			// Another organization sees nothing.
			_, _, err = b.eng.AgentRun(b.ctx, "other", r.ID)
			require.ErrorIs(t, err, engine.ErrNotFound)
			page, err := b.eng.ListAgents(b.ctx, "acme", "completed", svctype.ListOptions{})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
		})
	}
}

func actionsOf(st *agent.State) []string {
	out := []string{}
	for _, e := range st.Trace {
		out = append(out, e.Action)
	}
	return out
}

// TestToolsResolveInOneQuery: however many tools an agent declares, a claim reads their
// actions in one query and their workflows in another.
func TestToolsResolveInOneQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", call("__complete__", `{"answer": "done", "confidence": 1}`))
	var tools []json.RawMessage
	for i := range 12 {
		name := "action_" + string(rune('a'+i))
		_, err := b.eng.CreateAction(b.ctx, "acme", svctype.Action{Name: name, Kind: svctype.ActionHTTP, URL: "https://example.com/" + name})
		require.NoError(t, err)
		decl := `{"type": "action", "name": "` + name + `"}`
		if i%2 == 1 {
			decl = `"` + name + `"`
		}
		tools = append(tools, json.RawMessage(decl))
	}
	for i := range 3 {
		w, err := b.eng.CreateWorkflow(b.ctx, "acme", engine.WorkflowInput{Name: fmt.Sprintf("flow %d", i), Definition: json.RawMessage(`{"actions": []}`)})
		require.NoError(t, err)
		tools = append(tools, json.RawMessage(`{"type": "workflow", "id": "`+w.ID+`"}`))
	}
	r, err := b.eng.ExecuteAgent(b.ctx, "acme", agents.Input{Objective: "o", Tools: tools})
	require.NoError(t, err)
	b.st.getActions.Store(0)
	b.st.getAction.Store(0)
	b.st.getWorkflows.Store(0)
	b.work(t)
	r, _, err = b.eng.AgentRun(b.ctx, "acme", r.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("completed"), r.Status, r.Reason)
	require.EqualValues(t, 1, b.st.getActions.Load(), "one query for all the declared actions")
	require.EqualValues(t, 1, b.st.getWorkflows.Load(), "one for all the declared workflows")
	require.Zero(t, b.st.getAction.Load(), "and none per tool")
}

func TestAgentRequestsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite")
	for _, tc := range []struct {
		in      agents.Input
		pointer string
	}{
		{agents.Input{Objective: ""}, "/objective"},
		{agents.Input{Objective: "o", Tools: []json.RawMessage{json.RawMessage(`{"name": "x", "action": "y"}`)}}, "/tools/0"},
		{agents.Input{Objective: "o", Tools: []json.RawMessage{json.RawMessage(`42`)}}, "/tools/0"},
		{agents.Input{Objective: "o", Config: agents.InputConfig{LLMBudget: map[string]any{"input_tokens": -5.0}}}, "/config/llm_budget/input_tokens"},
		{agents.Input{Objective: "o", Config: agents.InputConfig{MaxIterations: 1001}}, "/config/max_iterations"},
		{agents.Input{Objective: "o", Config: agents.InputConfig{OnStuck: &agent.OnStuck{Iterations: 3, Action: "retry"}}}, "/config/on_stuck/action"},
	} {
		_, err := b.eng.ExecuteAgent(b.ctx, "acme", tc.in)
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, "%+v", tc.in)
		require.Equal(t, tc.pointer, ve.Problems[0].Pointer)
	}
	page, err := b.eng.ListAgents(b.ctx, "acme", "", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "nothing was stored")
}

// TestAgentWithoutModelKey fails clearly, and a budget too small for the prompt stops the
// run before any model call.
func TestAgentFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", call("__complete__", `{"answer": "x", "confidence": 1}`))
	r, err := b.eng.ExecuteAgent(b.ctx, "acme", agents.Input{Objective: strings.Repeat("a long objective ", 300),
		Config: agents.InputConfig{LLMBudget: map[string]any{"input_tokens": 100.0}}})
	require.NoError(t, err)
	b.work(t)
	r, _, err = b.eng.AgentRun(b.ctx, "acme", r.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("budget_exceeded"), r.Status)
	require.Zero(t, b.model.calls)
	require.Equal(t, []string{"agent.started", "agent.failed"}, b.events(t, r.ID))

	require.NoError(t, b.eng.DeleteOrgConfig(b.ctx, "acme", engine.LLMAPIKey))
	r, err = b.eng.ExecuteAgent(b.ctx, "acme", agents.Input{Objective: "o"})
	require.NoError(t, err)
	b.work(t)
	r, _, err = b.eng.AgentRun(b.ctx, "acme", r.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("failed"), r.Status)
	require.Contains(t, r.Reason, "llm_key_missing")
}

// TestReactLoopStep: a workflow's loop step with mode react runs an agent run of its own;
// the workflow run waits running, is paused while the agent asks a person, goes on with the
// agent's result under result_key, and a cancelled run stops its agent.
func TestReactLoopStep(t *testing.T) {
	t.Parallel()
	for _, dialect := range enginetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			b := setup(t, dialect,
				call("__pause_for_human__", `{"question": "Approve the write-off?"}`),
				call("__complete__", `{"answer": "approved by a person", "confidence": 0.75}`))
			doc, err := b.eng.UploadDocument(b.ctx, "acme", engine.DocumentUpload{Name: "bank.csv", Content: []byte("inv,amount\nA,10\n")})
			require.NoError(t, err)
			_, err = b.eng.CreateTable(b.ctx, "acme", "notes", map[string]string{"text": "text"})
			require.NoError(t, err)
			w, err := b.eng.CreateWorkflow(b.ctx, "acme", engine.WorkflowInput{Name: "agentic", Definition: json.RawMessage(`{"actions": [
				{"type": "loop", "properties": {"mode": "react", "objective": "Check these rows: doc:` + doc.ID + `", "tools": [], "result_key": "verdict", "max_iterations": 10}},
				{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{verdict.answer}} ({{verdict.status}})"}}}]}`)})
			require.NoError(t, err)
			require.Empty(t, w.Warnings)
			run, err := b.eng.Execute(b.ctx, "acme", w.ID, nil, engine.ExecuteOptions{})
			require.NoError(t, err)
			b.work(t)

			run, err = b.eng.GetRun(b.ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunPaused, run.Status, "paused with its agent, which asks a person")
			status, err := b.eng.RunStatus(b.ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.StepProcessing, status.Steps[0].Status)
			require.Contains(t, b.model.first, `"inv":"A"`, "the doc: token of the objective expanded in place")
			page, err := b.eng.RunEvents(b.ctx, "acme", run.ID, svctype.ListOptions{Limit: 100})
			require.NoError(t, err)
			var agentID string
			for _, e := range page.Items {
				if e.Event == "loop.started" {
					var p map[string]any
					require.NoError(t, json.Unmarshal(e.Payload, &p))
					require.Equal(t, "react", p["mode"])
					agentID, _ = p["agent_run_id"].(string)
				}
			}
			require.True(t, strings.HasPrefix(agentID, "agent-"), "loop.started carries agent_run_id")

			_, err = b.eng.ResumeAgent(b.ctx, "acme", agentID, "yes", true)
			require.NoError(t, err)
			run, err = b.eng.GetRun(b.ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunRunning, run.Status, "released with its agent")
			b.work(t)

			status, err = b.eng.RunStatus(b.ctx, "acme", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, status.Status, status.Reason)
			require.Equal(t, map[string]any{"status": "completed", "answer": "approved by a person", "confidence": json.Number("0.75"), "iterations": json.Number("2")},
				status.Context["verdict"])
			rows, err := b.eng.ReadRows(b.ctx, "acme", "notes", nil, 0)
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Equal(t, "approved by a person (completed)", rows[0].Data["text"])
		})
	}
}

func TestReactLoopStepCancelledAndRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite", call("__pause_for_human__", `{"question": "Go on?"}`))
	_, err := b.eng.CreateWorkflow(b.ctx, "acme", engine.WorkflowInput{Name: "bad", Definition: json.RawMessage(`{"actions": [
		{"type": "loop", "properties": {"mode": "react", "objective": "o", "tools": [42], "max_iterations": 5000}}]}`)})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	var ptrs []string
	for _, p := range ve.Problems {
		ptrs = append(ptrs, p.Pointer)
	}
	require.ElementsMatch(t, []string{"/definition/actions/0/properties/tools/0", "/definition/actions/0/properties/max_iterations"}, ptrs)

	w, err := b.eng.CreateWorkflow(b.ctx, "acme", engine.WorkflowInput{Name: "good", Definition: json.RawMessage(`{"actions": [
		{"type": "loop", "outputKey": "out", "properties": {"mode": "react", "objective": "o"}}]}`)})
	require.NoError(t, err)
	run, err := b.eng.Execute(b.ctx, "acme", w.ID, nil, engine.ExecuteOptions{})
	require.NoError(t, err)
	b.work(t)
	_, err = b.eng.CancelRun(b.ctx, "acme", run.ID, "enough", engine.Actor{})
	require.NoError(t, err)
	page, err := b.eng.ListAgents(b.ctx, "acme", "", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, svctype.AgentStatus("cancelled"), page.Items[0].Status, "a cancelled run stops its agent")
	_, err = b.eng.ResumeAgent(b.ctx, "acme", page.Items[0].ID, "too late", true)
	require.ErrorIs(t, err, engine.ErrConflict)
}

// TestWorkflowTool: a workflow declared as a tool runs as a run of its own with the call's
// arguments as input, presented by its name and description; its outputs are the
// observation.
func TestWorkflowTool(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite",
		call("find_gold_customers", `{"tier": "gold"}`),
		call("__complete__", `{"answer": "one gold customer", "confidence": 1}`))
	_, err := b.eng.CreateTable(b.ctx, "acme", "customers", map[string]string{"email": "text", "tier": "text"})
	require.NoError(t, err)
	_, err = b.eng.CreateWorkflow(b.ctx, "acme", engine.WorkflowInput{Name: "seed", Definition: json.RawMessage(`{"actions": [
		{"type": "custom-table", "properties": {"table": "customers", "operation": "write", "fields": {"email": "ada@example.com", "tier": "gold"}}}]}`)})
	require.NoError(t, err)
	w, err := b.eng.CreateWorkflow(b.ctx, "acme", engine.WorkflowInput{Name: "find gold customers", Definition: json.RawMessage(`{
		"description": "Lists the customers of a tier.",
		"actions": [{"type": "custom-table", "outputKey": "customers", "properties": {"table": "customers", "operation": "read", "where": {"tier": "@input.tier"}}}]}`)})
	require.NoError(t, err)
	require.NoError(t, seedRows(b))

	// Child runs need a worker beside the agent's turn, as a deployment has (two here).
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	for range 2 {
		go func() {
			// As a worker does: work whenever this process enqueues a job, and poll for the
			// ones no wakeup announces.
			wake, unsubscribe := b.eng.Wakeup()
			defer unsubscribe()
			poll := time.NewTicker(20 * time.Millisecond)
			defer poll.Stop()
			for ctx.Err() == nil {
				_, _ = b.eng.Work(ctx)
				select {
				case <-ctx.Done():
				case <-wake:
				case <-poll.C:
				}
			}
		}()
	}
	r, err := b.eng.ExecuteAgent(b.ctx, "acme", agents.Input{Objective: "How many gold customers?",
		Tools: []json.RawMessage{json.RawMessage(`{"type": "workflow", "id": "` + w.ID + `"}`)}})
	require.NoError(t, err)
	r, err = b.eng.WaitAgent(b.ctx, "acme", r.ID, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("completed"), r.Status, r.Reason)
	_, st, err := b.eng.AgentRun(b.ctx, "acme", r.ID)
	require.NoError(t, err)
	var obs struct {
		RunID   string         `json:"run_id"`
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal(st.Trace[0].Observation, &obs))
	require.Equal(t, "completed", obs.Status)
	require.Len(t, obs.Outputs["customers"], 1)
	child, err := b.eng.GetRun(b.ctx, "acme", obs.RunID)
	require.NoError(t, err)
	require.Equal(t, w.ID, child.WorkflowID)
	require.Equal(t, r.ID+"/1/tool", child.IdempotencyKey, "the call's key: a call made again finds the same run")
}

// seedRows writes the one gold customer through the seed workflow.
func seedRows(b *bundle) error {
	page, err := b.eng.ListWorkflows(b.ctx, "acme", svctype.ListOptions{})
	if err != nil {
		return err
	}
	for _, w := range page.Items {
		if w.Name == "seed" {
			if _, err := b.eng.Execute(b.ctx, "acme", w.ID, nil, engine.ExecuteOptions{}); err != nil {
				return err
			}
		}
	}
	_, err = b.eng.Work(b.ctx)
	return err
}

// TestOAuthToolInAReactStep: a built-in OAuth tool declared to a workflow's agent uses the
// step's __oauth_account__ when the organization has several connected accounts.
func TestOAuthToolInAReactStep(t *testing.T) {
	t.Parallel()
	p := oauthtest.New(t)
	sc := &script{turns: []agent.Message{
		call("slack_post_message", `{"channel": "C1", "text": "reconciled"}`),
		call("__complete__", `{"answer": "posted", "confidence": 1}`),
	}}
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
		OAuth:        engine.OAuthOptions{APIs: p.APIs(), AllowPrivateTargets: true},
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return sc, nil }})
	require.NoError(t, err)
	ctx := t.Context()
	_, _, err = eng.SetOrgConfig(ctx, "acme", engine.LLMAPIKey, "sk-test")
	require.NoError(t, err)
	for _, acct := range []string{"finance", "ops"} {
		p.AddTokens("client", "xoxb-"+acct, "")
		_, _, err := eng.CreateOAuthConnection(ctx, "acme", engine.OAuthConnectionInput{Provider: "slack", Account: acct, AccessToken: "xoxb-" + acct})
		require.NoError(t, err)
	}
	w, err := eng.CreateWorkflow(ctx, "acme", engine.WorkflowInput{Name: "notify", Definition: json.RawMessage(`{"actions": [
		{"type": "loop", "outputKey": "out", "properties": {"mode": "react", "objective": "Tell ops", "tools": [{"type": "action", "name": "slack_post_message"}],
		 "__oauth_account__": "ops"}}]}`)})
	require.NoError(t, err)
	run, err := eng.Execute(ctx, "acme", w.ID, nil, engine.ExecuteOptions{})
	require.NoError(t, err)
	_, err = eng.Work(ctx)
	require.NoError(t, err)
	doc, err := eng.RunStatus(ctx, "acme", run.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	reqs := p.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "xoxb-ops", reqs[0].Token, "the step's account")
	require.Equal(t, "reconciled", reqs[0].Body["text"])
}

// TestUnknownActionIsOfferedAndAnswered: an action the organization has not registered is
// still offered to the model; using it is answered with feedback, and the run goes on.
func TestUnknownActionIsOfferedAndAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t, "sqlite",
		call("send_invoice", `{"to": "ada@example.com"}`),
		call("__complete__", `{"answer": "could not send it", "confidence": 0.4}`))
	r, err := b.eng.ExecuteAgent(b.ctx, "acme", agents.Input{Objective: "Send the invoice", Tools: []json.RawMessage{json.RawMessage(`"send_invoice"`)}})
	require.NoError(t, err)
	b.work(t)
	r, st, err := b.eng.AgentRun(b.ctx, "acme", r.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("completed"), r.Status, r.Reason)
	require.Contains(t, string(st.Trace[0].Observation), `the action \"send_invoice\" is not registered in this organization`)
	require.Equal(t, "could not send it", st.Answer)
	require.Contains(t, b.model.tools, "send_invoice", "offered all the same")
}
