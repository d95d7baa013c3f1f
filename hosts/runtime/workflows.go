package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Workflow is one version of a workflow as the API shows it.
type Workflow struct {
	ID         string     `json:"id" example:"wfl-3f0c6a4e-8d2b-4b8e-9a51-0c1d2e3f4a5b" doc:"Workflow id (wfl-<uuid>)."`
	Name       string     `json:"name" doc:"Unique within the organization."`
	Version    int        `json:"version" doc:"1 at creation, +1 at every update."`
	Definition JSONObject `json:"definition" doc:"The specification: condition, actions, schedule."`
	Warnings   []string   `json:"warnings,omitempty" doc:"Things the engine accepted but that are probably mistakes."`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

func workflowOf(w svctype.Workflow) Workflow {
	return Workflow{
		ID: w.ID, Name: w.Name, Version: w.Version, Definition: JSONObject(w.Definition),
		Warnings: w.Warnings, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
}

// WorkflowBody is the body of POST /workflows and PUT /workflows/{id}.
type WorkflowBody struct {
	Name       string     `json:"name" doc:"Unique within the organization."`
	Definition JSONObject `json:"definition" doc:"The specification; validated by the engine, whose problems point into it."`
}

func (b WorkflowBody) input() engine.WorkflowInput {
	return engine.WorkflowInput{Name: b.Name, Definition: json.RawMessage(b.Definition)}
}

// ExecuteBody is the optional body of POST /workflows/{id}/execute.
type ExecuteBody struct {
	Input JSONObject `json:"input,omitempty" doc:"The run's input, read as @input (default {})."`
}

type workflowOutput struct {
	Body Workflow
}

// RunRef is the answer of execute and cancel.
type RunRef struct {
	ID     string            `json:"id" example:"run-6a1e0f7c-2b7d-4c61-8f3e-5d4c3b2a1908" doc:"Run id (run-<uuid>)."`
	Status svctype.RunStatus `json:"status" example:"running" doc:"The run's status."`
}

var (
	workflowNotFound = failure{notFound: "workflow not found"}
	workflowWrite    = failure{notFound: "workflow not found", conflict: "a workflow with this name already exists in the organization"}
)

func (s *Server) registerWorkflows() {
	o := op("create-workflow", http.MethodPost, "/workflows", "Create a workflow", "Workflows")
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		Body WorkflowBody
	}) (*workflowOutput, error) {
		w, err := s.eng.CreateWorkflow(ctx, in.OrgID, in.Body.input())
		if err != nil {
			return nil, s.fail(ctx, err, workflowWrite)
		}
		return &workflowOutput{Body: workflowOf(*w)}, nil
	})

	o = op("list-workflows", http.MethodGet, "/workflows", "List the organization's workflows", "Workflows")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		Paging
	}) (*struct{ Body List[Workflow] }, error) {
		page, err := s.eng.ListWorkflows(ctx, in.OrgID, in.options())
		if err != nil {
			return nil, s.fail(ctx, err, failure{in: "query"})
		}
		return &struct{ Body List[Workflow] }{Body: listOf(page, workflowOf)}, nil
	})

	o = op("get-workflow", http.MethodGet, "/workflows/{id}", "Get a workflow's current version", "Workflows")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		ID string `path:"id" doc:"Workflow id."`
	}) (*workflowOutput, error) {
		w, err := s.eng.GetWorkflow(ctx, in.OrgID, in.ID)
		if err != nil {
			return nil, s.fail(ctx, err, workflowNotFound)
		}
		return &workflowOutput{Body: workflowOf(*w)}, nil
	})

	o = op("update-workflow", http.MethodPut, "/workflows/{id}", "Replace a workflow: stores a new version", "Workflows")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		ID   string `path:"id" doc:"Workflow id."`
		Body WorkflowBody
	}) (*workflowOutput, error) {
		w, err := s.eng.UpdateWorkflow(ctx, in.OrgID, in.ID, in.Body.input())
		if err != nil {
			return nil, s.fail(ctx, err, workflowWrite)
		}
		return &workflowOutput{Body: workflowOf(*w)}, nil
	})

	o = op("delete-workflow", http.MethodDelete, "/workflows/{id}", "Delete a workflow (its runs stay)", "Workflows")
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		ID string `path:"id" doc:"Workflow id."`
	}) (*struct{}, error) {
		if err := s.eng.DeleteWorkflow(ctx, in.OrgID, in.ID); err != nil {
			return nil, s.fail(ctx, err, workflowNotFound)
		}
		return &struct{}{}, nil
	})

	o = op("execute-workflow", http.MethodPost, "/workflows/{id}/execute", "Start a run of the workflow's current version", "Workflows", "Runs")
	o.DefaultStatus = http.StatusAccepted
	o.Description = "Starts a run and answers at once; a worker executes it. A retry carrying the same " +
		"Idempotency-Key within 24 hours answers the run the first call started."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		ID             string `path:"id" doc:"Workflow id."`
		IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Makes retries start one run."`
		Body           *ExecuteBody
	}) (*struct{ Body RunRef }, error) {
		var input json.RawMessage
		if in.Body != nil {
			input = json.RawMessage(in.Body.Input)
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		run, err := s.eng.Execute(ctx, in.OrgID, in.ID, input, engine.ExecuteOptions{IdempotencyKey: in.IdempotencyKey})
		if err != nil {
			return nil, s.fail(ctx, err, workflowNotFound)
		}
		return &struct{ Body RunRef }{Body: RunRef{ID: run.ID, Status: run.Status}}, nil
	})
}
