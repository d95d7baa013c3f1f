package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"
	"unsafe"

	"github.com/danielgtaylor/huma/v2"
	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Workflow is one version of a workflow as the API shows it.
type Workflow struct {
	ID         string             `json:"id" example:"wfl-3f0c6a4e-8d2b-4b8e-9a51-0c1d2e3f4a5b" doc:"Workflow id (wfl-<uuid>)."`
	Name       string             `json:"name" doc:"Unique within the organization."`
	Version    int                `json:"version" doc:"1 at creation, +1 at every update."`
	Definition WorkflowDefinition `json:"definition" doc:"The specification: condition, actions, schedule."`
	Warnings   []string           `json:"warnings,omitempty" doc:"Things the engine accepted but that are probably mistakes."`
	CreatedAt  time.Time          `json:"created_at"`
	UpdatedAt  time.Time          `json:"updated_at"`
}

func workflowOf(w svctype.Workflow) Workflow {
	return Workflow{
		ID: w.ID, Name: w.Name, Version: w.Version, Definition: WorkflowDefinition(w.Definition),
		Warnings: w.Warnings, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
}

// WorkflowBody is the body of POST /workflows and PUT /workflows/{workflowId}.
type WorkflowBody struct {
	Name       string             `json:"name" doc:"Unique within the organization."`
	Definition WorkflowDefinition `json:"definition" doc:"The specification; validated by the engine against the WorkflowDefinition schema (GET /schemas/workflow.json), its problems pointing into it."`
}

func (b WorkflowBody) input() engine.WorkflowInput {
	return engine.WorkflowInput{Name: b.Name, Definition: json.RawMessage(b.Definition)}
}

// ExecuteBody is the optional body of POST /workflows/{workflowId}/execute.
type ExecuteBody struct {
	Input JSONObject `json:"input,omitempty" doc:"The run's input, read as @input (default {})."`
}

// UnmarshalJSON reads {"input": {...}} without decoding the input: the execute route skips
// Huma's check of the body against its schema, which decodes the whole body into maps
// first (an 8 MB input of records cost a tenth of a second), so this is that check: an
// object whose only member is input. Whether input is an object is the engine's check
// (Execute: 422 at /input). encoding/json has checked that b is valid JSON.
func (e *ExecuteBody) UnmarshalJSON(b []byte) error {
	if len(b) == 0 {
		return errors.New("expected object")
	}
	// Read in place (gjson.ParseBytes would copy the body into a string first); input's
	// bytes are copied once, below: b is Huma's buffer.
	body := gjson.Parse(unsafe.String(&b[0], len(b)))
	if !body.IsObject() {
		return errors.New("expected object")
	}
	var err error
	body.ForEach(func(k, v gjson.Result) bool {
		if k.String() != "input" {
			err = fmt.Errorf("unexpected property %q", k.String())
			return false
		}
		if v.Type != gjson.Null { // null: no input, as Huma's schema check took it
			e.Input = append(e.Input[:0], v.Raw...)
		}
		return true
	})
	return err
}

type workflowOutput struct {
	Body Workflow
}

// ExecuteAnswer is the answer of execute: `{id, status}`, or with ?wait= the run's whole
// status document.
type ExecuteAnswer struct {
	ID     string            `json:"id" example:"run-6a1e0f7c-2b7d-4c61-8f3e-5d4c3b2a1908" doc:"Run id (run-<uuid>)."`
	Status svctype.RunStatus `json:"status" example:"running" doc:"The run's status."`
	// With ?wait=, the rest of the status document (its id and status are the ones above).
	*engine.RunStatusDoc
}

// TransformSchema leaves only id and status required: the rest comes with ?wait= only.
func (ExecuteAnswer) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.Required = []string{"id", "status"}
	s.Description = "{id, status} at once; with ?wait=, the run's status document (GET /runs/{runId}/status)."
	return s
}

type executeOutput struct {
	Status int
	Body   ExecuteAnswer
}

// RunRef is the answer of cancel.
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
	register(s, o, workflowWrite, s.createWorkflow)

	o = op("list-workflows", http.MethodGet, "/workflows", "List the organization's workflows", "Workflows")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listWorkflows)

	o = op("get-workflow", http.MethodGet, "/workflows/{workflowId}", "Get a workflow's current version, or an earlier one", "Workflows")
	o.Description = "The current version; with `?version=N` version N, which every update keeps (versions run from 1 to the current one) " +
		"so that the console can show how two versions differ. A version the workflow never had is 404."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, workflowNotFound, s.getWorkflow)

	o = op("update-workflow", http.MethodPut, "/workflows/{workflowId}", "Replace a workflow: stores a new version", "Workflows")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, workflowWrite, s.updateWorkflow)

	o = op("delete-workflow", http.MethodDelete, "/workflows/{workflowId}", "Delete a workflow (its runs stay)", "Workflows")
	o.Description = "Deletes the workflow, its versions and its schedule; its runs stay readable. " +
		"A workflow a process of the studio publishes is not deleted: 409 workflow_owned_by_process, naming the process."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, workflowNotFound, s.deleteWorkflow)

	o = op("execute-workflow", http.MethodPost, "/workflows/{workflowId}/execute", "Start a run of the workflow's current version", "Workflows", "Runs")
	o.DefaultStatus = http.StatusAccepted
	o.SkipValidateBody = true // ExecuteBody.UnmarshalJSON checks it, without decoding the input
	o.Description = "Starts a run and answers 202 `{id, status: running}` at once; a worker executes it. " +
		"With `?wait=<duration>` (a Go duration such as `500ms` or `30s`, at most 60s) the answer comes " +
		"when the run ends or pauses, 200 with the run's status document, or at the deadline, 202 with " +
		"the status document in status `running` (continue with GET /runs/{runId}/status?wait=). " +
		"A retry carrying the same Idempotency-Key within 24 hours answers the run the first call started; " +
		"the key with another request (another workflow or input) is 422 idempotency_key_reused and starts nothing."
	o.Responses = map[string]*huma.Response{
		"200": statusDocAnswer(s.api, "With ?wait=: the run ended or paused within the wait; the body is its status document (GET /runs/{runId}/status)."),
	}
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, workflowNotFound, s.executeWorkflow)
}

// statusDocAnswer declares a 200 whose body is a run's status document, the schema of GET
// /runs/{runId}/status, beside an operation's 202 of another schema (an output has one body
// type, so Huma would give both the 202's).
func statusDocAnswer(api huma.API, doc string) *huma.Response {
	ref := api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[engine.RunStatusDoc](), true, "")
	return &huma.Response{Description: doc, Content: map[string]*huma.MediaType{"application/json": {Schema: ref}}}
}

type createWorkflowInput struct {
	OrgParam
	Body WorkflowBody
}

func (s *Server) createWorkflow(ctx context.Context, in *createWorkflowInput) (*workflowOutput, error) {
	w, err := s.eng.CreateWorkflow(ctx, in.OrgID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &workflowOutput{Body: workflowOf(*w)}, nil
}

type listWorkflowsInput struct {
	OrgParam
	Paging
}

func (s *Server) listWorkflows(ctx context.Context, in *listWorkflowsInput) (*answer[List[Workflow]], error) {
	page, err := s.eng.ListWorkflows(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[Workflow]]{Body: listOf(page, workflowOf)}, nil
}

type getWorkflowInput struct {
	OrgParam
	ID      string `path:"workflowId" doc:"Workflow id."`
	Version int    `query:"version" minimum:"0" doc:"A version to read instead of the current one (1 is the first)."`
}

func (s *Server) getWorkflow(ctx context.Context, in *getWorkflowInput) (*workflowOutput, error) {
	get := s.eng.GetWorkflow
	if in.Version > 0 {
		get = func(ctx context.Context, orgID, id string) (*svctype.Workflow, error) {
			return s.eng.GetWorkflowVersion(ctx, orgID, id, in.Version)
		}
	}
	w, err := get(ctx, in.OrgID, in.ID)
	if err != nil {
		return nil, err
	}
	return &workflowOutput{Body: workflowOf(*w)}, nil
}

type updateWorkflowInput struct {
	OrgParam
	ID   string `path:"workflowId" doc:"Workflow id."`
	Body WorkflowBody
}

func (s *Server) updateWorkflow(ctx context.Context, in *updateWorkflowInput) (*workflowOutput, error) {
	w, err := s.eng.UpdateWorkflow(ctx, in.OrgID, in.ID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &workflowOutput{Body: workflowOf(*w)}, nil
}

type deleteWorkflowInput struct {
	OrgParam
	ID string `path:"workflowId" doc:"Workflow id."`
}

func (s *Server) deleteWorkflow(ctx context.Context, in *deleteWorkflowInput) (*struct{}, error) {
	if err := s.eng.DeleteWorkflow(ctx, in.OrgID, in.ID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}

type executeWorkflowInput struct {
	OrgParam
	ID             string `path:"workflowId" doc:"Workflow id."`
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Makes retries start one run."`
	WaitParam
	StatusParams
	Body *ExecuteBody
}

func (s *Server) executeWorkflow(ctx context.Context, in *executeWorkflowInput) (*executeOutput, error) {
	wait, err := in.duration()
	if err != nil {
		return nil, err
	}
	var input json.RawMessage
	if in.Body != nil {
		input = json.RawMessage(in.Body.Input)
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	opts := engine.ExecuteOptions{IdempotencyKey: in.IdempotencyKey}
	if wait <= 0 {
		run, err := s.eng.Execute(ctx, in.OrgID, in.ID, input, opts)
		if err != nil {
			return nil, err
		}
		return &executeOutput{Status: http.StatusAccepted, Body: ExecuteAnswer{ID: run.ID, Status: run.Status}}, nil
	}
	// The wait starts inside the run's transaction and is woken by the commit that ends
	// the run, with the run as it wrote it: no read of the status before or after
	// (waitStatus's), nor of the run for its document.
	run, doc, err := s.eng.ExecuteAndWaitStatus(ctx, in.OrgID, in.ID, input, opts, wait, engine.StatusOptions{OmitContext: !in.Context})
	if err != nil {
		if run == nil {
			return nil, err
		}
		return nil, s.fail(ctx, err, runNotFound)
	}
	out := &executeOutput{Status: http.StatusAccepted}
	out.Body = ExecuteAnswer{ID: doc.ID, Status: doc.Status, RunStatusDoc: doc}
	if doc.Status != svctype.RunRunning {
		out.Status = http.StatusOK
	}
	return out, nil
}
