package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// JSONValue is any JSON value carried as its raw bytes (a tool declaration: a string or
// an object); the engine's validation reports what is wrong in it.
type JSONValue json.RawMessage

// MarshalJSON writes the bytes as they are (null when empty).
func (v JSONValue) MarshalJSON() ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return v, nil
}

// UnmarshalJSON keeps a copy of the bytes.
func (v *JSONValue) UnmarshalJSON(b []byte) error {
	*v = append((*v)[:0], b...)
	return nil
}

// Schema accepts any value.
func (JSONValue) Schema(huma.Registry) *huma.Schema { return &huma.Schema{} }

// AgentTool is one tool declaration of POST /agents/execute, carried as its raw bytes. Its
// schema is the AgentToolDeclaration component, the one a react loop step's tools use;
// Huma checks nothing of it (definitionRegistry): the engine does, naming what is wrong.
type AgentTool JSONValue

// MarshalJSON writes the bytes as they are (null when empty).
func (v AgentTool) MarshalJSON() ([]byte, error) { return JSONValue(v).MarshalJSON() }

// UnmarshalJSON keeps a copy of the bytes.
func (v *AgentTool) UnmarshalJSON(b []byte) error { return (*JSONValue)(v).UnmarshalJSON(b) }

// Schema is a reference to the AgentToolDeclaration component.
func (AgentTool) Schema(r huma.Registry) *huma.Schema {
	registerDefinitionSchemas(r)
	return &huma.Schema{Ref: agentToolRef}
}

// AgentBody is the body of POST /agents/execute.
type AgentBody struct {
	Objective string      `json:"objective" doc:"The agent's goal, in words; at most 20,000 characters."`
	Tools     []AgentTool `json:"tools,omitempty" doc:"Tool declarations, mixed freely: \"<action_name>\", {type: action, name}, or {name, action, description, parameters}. The declared tools are the agent's only capabilities besides the implicit ones."`
	Model     string      `json:"model,omitempty" doc:"The provider's model name (default gpt-4o-mini)."`
	Config    struct {
		MaxIterations int            `json:"max_iterations,omitempty" doc:"Iteration cap, 1 to 1,000 (default 25)."`
		OnStuck       *agent.OnStuck `json:"on_stuck,omitempty" doc:"{iterations, action: escalate}: the same call, or nothing new learned, that many iterations in a row pauses the agent for a person (default 3)."`
		LLMBudget     map[string]any `json:"llm_budget,omitempty" doc:"Raises or lowers input_tokens (100,000), output_tokens (50,000), total_tokens (150,000), model_calls (100), wall_seconds (300)."`
	} `json:"config,omitzero"`
}

func (b AgentBody) input() engine.AgentInput {
	in := engine.AgentInput{Objective: b.Objective, Model: b.Model, Config: engine.AgentInputConfig{
		MaxIterations: b.Config.MaxIterations, OnStuck: b.Config.OnStuck, LLMBudget: b.Config.LLMBudget}}
	for _, t := range b.Tools {
		in.Tools = append(in.Tools, json.RawMessage(t))
	}
	return in
}

// AgentStatus is GET /agents/{agentId}/status.
type AgentStatus struct {
	AgentRunID string              `json:"agent_run_id" example:"agent-0b4e6c1a-3f5d-4e2a-9c8b-7a6d5e4f3c2b"`
	Status     svctype.AgentStatus `json:"status" doc:"The agent run's status."`
	Iterations int                 `json:"iterations"`
	Answer     string              `json:"final_answer,omitempty"`
	Confidence float64             `json:"confidence,omitempty"`
	Reason     string              `json:"reason,omitempty" doc:"Why the agent ended or paused."`
	Pause      *agent.PauseRequest `json:"pause,omitempty" doc:"What a paused agent asks a person."`
	Usage      *agent.Usage        `json:"usage,omitempty"`
	Trace      []agent.TraceEntry  `json:"reasoning_trace,omitempty" doc:"With include_trace=true: every iteration."`
	CreatedAt  time.Time           `json:"created_at"`
	UpdatedAt  time.Time           `json:"updated_at"`
}

func agentStatusOf(r *svctype.AgentRun, st *agent.State, trace bool) *AgentStatus {
	out := &AgentStatus{AgentRunID: r.ID, Status: r.Status, Iterations: r.Iterations, Reason: r.Reason,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if st != nil {
		out.Answer, out.Confidence, out.Pause = st.Answer, st.Confidence, st.Pause
		u := st.Usage
		out.Usage = &u
		if trace {
			out.Trace = st.Trace
			if out.Trace == nil {
				out.Trace = []agent.TraceEntry{}
			}
		}
	}
	return out
}

// AgentResumeBody is the body of POST /agents/{agentId}/resume.
type AgentResumeBody struct {
	HumanInput string `json:"human_input" doc:"The person's answer."`
	Approved   bool   `json:"approved" doc:"Whether the person approves what the agent asked."`
}

// AgentTraceAnswer is GET /agents/{agentId}/trace. Named, as every body is, so that the schema
// has a name of its own: Huma calls an anonymous one "Get-agent-traceResponse", which a
// client generator turns into the name of its own response type for the operation.
type AgentTraceAnswer struct {
	AgentRunID string             `json:"agent_run_id"`
	Trace      []agent.TraceEntry `json:"trace" nullable:"false"`
}

// AgentPath names an agent run.
type AgentPath struct {
	OrgParam
	AgentID string `path:"agentId" maxLength:"128" doc:"Agent run id (agent-<uuid>)."`
}

var agentNotFound = failure{notFound: "agent run not found", conflict: "the agent run is not paused"}

func (s *Server) registerAgents() {
	o := op("execute-agent", http.MethodPost, "/agents/execute", "Run a standalone agent", "Agents")
	o.Description = "Starts an agent run (agent-<uuid>) with the objective, the declared tools and the limits. " +
		"Without async it waits for the agent to end or pause, at most 60 s, and answers its status (202 with status " +
		"running at the deadline: poll GET /agents/{agentId}/status); with async=true it answers 202 at once. " +
		"A tool declaration of no known form, a budget below 1, or max_iterations above 1,000 is 422 naming the field."
	o.DefaultStatus = http.StatusAccepted
	o.Responses = map[string]*huma.Response{
		"200": {Description: "Without async: the agent ended or paused within the wait; the body is its status."},
	}
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusUnprocessableEntity}
	register(s, o, failure{}, s.executeAgent)

	// The 200 of a synchronous call has the body of the 202.
	if ops := s.api.OpenAPI().Paths["/agents/execute"]; ops != nil && ops.Post != nil {
		if ok, acc := ops.Post.Responses["200"], ops.Post.Responses["202"]; ok != nil && acc != nil {
			ok.Content = acc.Content
		}
	}

	o = op("get-agent-status", http.MethodGet, "/agents/{agentId}/status", "An agent run's status", "Agents")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, agentNotFound, s.getAgentStatus)

	o = op("get-agent-trace", http.MethodGet, "/agents/{agentId}/trace", "An agent run's whole trace", "Agents")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, agentNotFound, s.getAgentTrace)

	o = op("resume-agent", http.MethodPost, "/agents/{agentId}/resume", "Answer a paused agent", "Agents")
	o.Description = "The person's answer becomes the observation of the agent's __pause_for_human__ call (or, after " +
		"stuck detection, a message to it); the run is queued again and goes on from its checkpoint. 409 when it is not paused."
	o.DefaultStatus = http.StatusAccepted
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity}
	register(s, o, agentNotFound, s.resumeAgent)

	o = op("list-agents", http.MethodGet, "/agents", "The organization's agent runs, newest first", "Agents")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusUnprocessableEntity}
	register(s, o, failure{in: "query"}, s.listAgents)
}

type executeAgentInput struct {
	OrgParam
	Async bool `query:"async" doc:"Answer at once (202) instead of waiting for the result."`
	Body  AgentBody
}

// agentOutput is 200 for an agent that ended or paused, 202 for one still running.
type agentOutput struct {
	Status int
	Body   *AgentStatus
}

func (s *Server) executeAgent(ctx context.Context, in *executeAgentInput) (*agentOutput, error) {
	r, err := s.eng.Agents.ExecuteAgent(ctx, in.OrgID, in.Body.input())
	if err != nil {
		return nil, err
	}
	// The run is started: what fails now is about it.
	if !in.Async {
		if r, err = s.eng.Agents.WaitAgent(ctx, in.OrgID, r.ID, engine.MaxAgentWait); err != nil {
			return nil, s.fail(ctx, err, agentNotFound)
		}
	}
	_, st, err := s.eng.Agents.AgentRun(ctx, in.OrgID, r.ID)
	if err != nil {
		return nil, s.fail(ctx, err, agentNotFound)
	}
	status := http.StatusOK
	if r.Status == svctype.AgentStatus(agent.StatusRunning) {
		status = http.StatusAccepted
	}
	return &agentOutput{Status: status, Body: agentStatusOf(r, st, false)}, nil
}

type getAgentStatusInput struct {
	AgentPath
	IncludeTrace bool `query:"include_trace" doc:"Add reasoning_trace: every iteration."`
}

func (s *Server) getAgentStatus(ctx context.Context, in *getAgentStatusInput) (*answer[*AgentStatus], error) {
	r, st, err := s.eng.Agents.AgentRun(ctx, in.OrgID, in.AgentID)
	if err != nil {
		return nil, err
	}
	return &answer[*AgentStatus]{Body: agentStatusOf(r, st, in.IncludeTrace)}, nil
}

func (s *Server) getAgentTrace(ctx context.Context, in *AgentPath) (*answer[AgentTraceAnswer], error) {
	r, st, err := s.eng.Agents.AgentRun(ctx, in.OrgID, in.AgentID)
	if err != nil {
		return nil, err
	}
	out := &answer[AgentTraceAnswer]{Body: AgentTraceAnswer{AgentRunID: r.ID, Trace: st.Trace}}
	if out.Body.Trace == nil {
		out.Body.Trace = []agent.TraceEntry{}
	}
	return out, nil
}

type resumeAgentInput struct {
	AgentPath
	Body AgentResumeBody
}

func (s *Server) resumeAgent(ctx context.Context, in *resumeAgentInput) (*answer[*AgentStatus], error) {
	r, err := s.eng.Agents.ResumeAgent(ctx, in.OrgID, in.AgentID, in.Body.HumanInput, in.Body.Approved)
	if err != nil {
		return nil, err
	}
	return &answer[*AgentStatus]{Body: agentStatusOf(r, nil, false)}, nil
}

type listAgentsInput struct {
	OrgParam
	Status svctype.AgentStatus `query:"status" doc:"Only agent runs in this status."`
	Paging
}

func (s *Server) listAgents(ctx context.Context, in *listAgentsInput) (*answer[List[*AgentStatus]], error) {
	page, err := s.eng.Agents.ListAgents(ctx, in.OrgID, in.Status, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[*AgentStatus]]{Body: listOf(page, func(r svctype.AgentRun) *AgentStatus {
		return agentStatusOf(&r, nil, false)
	})}, nil
}
