package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// ProjectBody is the body of POST /process-studio/projects.
type ProjectBody struct {
	Name        string `json:"name" doc:"1-200 characters."`
	Description string `json:"description,omitempty" doc:"At most 4,000 characters."`
}

// ProcessBody is the body of POST /process-studio/processes.
type ProcessBody struct {
	ProjectID     string `json:"project_id" doc:"The project the process belongs to."`
	Name          string `json:"name" doc:"1-200 characters, unique in the project; also the name of the workflow it publishes."`
	Description   string `json:"description,omitempty"`
	AuthoringMode string `json:"authoring_mode,omitempty" enum:"process_first,workflow_first" doc:"Default process_first."`
}

// ComposeBody is the body of POST /process-studio/processes/{processId}/compose-from-workflow-dsl.
type ComposeBody struct {
	DeploymentShape string      `json:"deployment_shape,omitempty" doc:"How the bundle deploys (single_workflow, ...): kept with it."`
	Summary         string      `json:"summary,omitempty" doc:"What changed, in words."`
	DSL             WorkflowDSL `json:"dsl" doc:"{svc_workflow_definition, actions_to_register[], custom_tables_to_create[], workflow_description}: the definition as POST /workflows takes it, action registrations as POST /actions, tables as POST /custom-tables."`
}

// PublishBody is the body of POST /process-studio/bundles/{bundleId}/publish.
type PublishBody struct {
	PublishNote string `json:"publish_note,omitempty" maxLength:"4000"`
}

// PublishAnswer is what a publication did.
type PublishAnswer struct {
	Bundle          *svctype.Bundle  `json:"bundle"`
	Process         *svctype.Process `json:"process"`
	WorkflowID      string           `json:"workflow_id"`
	WorkflowName    string           `json:"workflow_name"`
	WorkflowVersion int              `json:"workflow_version"`
	Actions         []string         `json:"actions_registered"`
	ActionsKept     []string         `json:"actions_kept"`
	TablesCreated   []string         `json:"tables_created"`
	TablesKept      []string         `json:"tables_kept"`
	ExecutePath     string           `json:"execute_path" doc:"POST it with {input} to run the published version."`
}

// LLMOptionsBody are a drafting request's model options.
type LLMOptionsBody struct {
	Model       string   `json:"model,omitempty" maxLength:"200" doc:"The provider's model name (default gpt-4o-mini)."`
	Temperature *float64 `json:"temperature,omitempty" minimum:"0" maximum:"2"`
}

func (o LLMOptionsBody) options() engine.LLMOptions {
	return engine.LLMOptions{Model: o.Model, Temperature: o.Temperature}
}

// GenerateBody is the body of POST /ai/generate-workflow.
type GenerateBody struct {
	Prompt     string         `json:"prompt" doc:"The process, in words; at most 20,000 characters."`
	LLMOptions LLMOptionsBody `json:"llmOptions,omitempty"`
}

// GenerateAnswer is the answer of POST /ai/generate-workflow.
type GenerateAnswer struct {
	GenerationID string `json:"generation_id"`
	Status       string `json:"status" enum:"processing,completed,failed"`
	Message      string `json:"message"`
}

// GenerationStatus is a generation's status.
type GenerationStatus struct {
	GenerationID string    `json:"generation_id"`
	Status       string    `json:"status" enum:"processing,completed,failed"`
	Attempts     int       `json:"attempts" doc:"Model calls made: 1 or 2."`
	Errors       []string  `json:"errors,omitempty" doc:"Why it failed: the validator's problems of the last attempt."`
	UpdatedAt    time.Time `json:"updated_at"`
}

// GenerationPath names a generation.
type GenerationPath struct {
	OrgParam
	GenerationID string `path:"generationId" maxLength:"100"`
}

// FromPromptBody is the body of POST /process-studio/processes/create-from-prompt.
type FromPromptBody struct {
	ProjectID   string         `json:"project_id"`
	Name        string         `json:"name,omitempty" doc:"The process's name (default: the drafted workflow name)."`
	Description string         `json:"description,omitempty"`
	Prompt      string         `json:"prompt"`
	LLMOptions  LLMOptionsBody `json:"llmOptions,omitempty"`
	Publish     *bool          `json:"publish,omitempty" doc:"Publish the bundle (default true); false stops at the draft bundle."`
}

// FromPromptAnswer is what create-from-prompt made.
type FromPromptAnswer struct {
	Process     *svctype.Process `json:"process"`
	Bundle      *svctype.Bundle  `json:"bundle"`
	Attempts    int              `json:"attempts"`
	Published   bool             `json:"published"`
	WorkflowID  string           `json:"workflow_id,omitempty"`
	ExecutePath string           `json:"execute_path,omitempty"`
}

// LegacyFromAIBody is the body of the legacy POST /workflows/create-from-ai.
type LegacyFromAIBody struct {
	Prompt     string         `json:"prompt"`
	Name       string         `json:"name,omitempty"`
	LLMOptions LLMOptionsBody `json:"llmOptions,omitempty"`
}

// LegacyFromAIAnswer is what the legacy create-from-ai published.
type LegacyFromAIAnswer struct {
	WorkflowID string `json:"workflow_id"`
	ProcessID  string `json:"process_id"`
	BundleID   string `json:"bundle_id"`
}

// ProcessPath names a process.
type ProcessPath struct {
	OrgParam
	ProcessID string `path:"processId" maxLength:"100"`
}

// studioWords are the studio routes' words: their conflicts are said by the engine, which
// names the process, table or action in the way.
var studioWords = failure{notFound: "project, process or bundle not found", conflictSaid: true}

func (s *Server) registerStudio() {
	tags := []string{"Process studio"}
	o := op("create-project", http.MethodPost, "/process-studio/projects", "Create a project", tags...)
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, studioWords, s.createProject)

	o = op("list-projects", http.MethodGet, "/process-studio/projects", "The organization's projects, newest first", tags...)
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listProjects)

	o = op("create-process", http.MethodPost, "/process-studio/processes", "Create a process in a project", tags...)
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict}
	register(s, o, studioWords, s.createProcess)

	o = op("get-process", http.MethodGet, "/process-studio/processes/{processId}", "A process", tags...)
	o.Description = "With published_bundle_id and workflow_id once a bundle is published."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, studioWords, s.getProcess)

	o = op("compose-bundle", http.MethodPost, "/process-studio/processes/{processId}/compose-from-workflow-dsl", "Compose the process's next bundle from a workflow DSL", tags...)
	o.DefaultStatus = http.StatusCreated
	o.MaxBodyBytes = 2 << 20
	o.Description = "Checks the DSL as POST /workflows, POST /actions and POST /custom-tables would, and more: every step type " +
		"is a primitive, a registered action or one the bundle registers (what POST /workflows only warns about is refused " +
		"here); every table a custom-table step names is created by the bundle or exists. 422 names each problem under " +
		"/dsl; nothing is written. The bundle is the process's next version, a draft until published."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, studioWords, s.composeBundle)

	o = op("get-bundle", http.MethodGet, "/process-studio/bundles/{bundleId}", "A bundle", tags...)
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, studioWords, s.getBundle)

	o = op("publish-bundle", http.MethodPost, "/process-studio/bundles/{bundleId}/publish", "Publish a bundle", tags...)
	o.Description = "In one transaction: registers the bundle's actions (an existing action of the same name is kept when " +
		"it is the same registration, else 409), creates its tables (an existing table with the same columns is kept, " +
		"one that differs is 409 naming the column), creates the process's workflow or a new version of it, and marks the " +
		"bundle published; on any failure nothing is written. Emits workflow_creation_status. A bundle is published once " +
		"(409 bundle_published). The answer names the process's execute path."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, studioWords, s.publishBundle)

	o = op("execute-process", http.MethodPost, "/process-studio/processes/{processId}/execute", "Run the process's published version", tags...)
	o.DefaultStatus = http.StatusAccepted
	o.Description = "As POST /workflows/{id}/execute on the workflow version the process's last publication put " +
		"(the process's workflow_version): 202 {id, status: running}. An edit of the workflow with PUT /workflows/{id} " +
		"is not run here until a bundle is published. 409 process_not_published before a bundle is published."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, studioWords, s.executeProcess)

	o = op("generate-workflow", http.MethodPost, "/ai/generate-workflow", "Draft a workflow bundle from a prompt", "Workflow drafting")
	o.DefaultStatus = http.StatusAccepted
	o.Description = "Answers at once {generation_id, status: processing, message}; a worker asks the organization's model " +
		"(org config " + engine.LLMAPIKey + ", " + engine.LLMBaseURL + ") for a bundle (workflow definition, actions to register, custom tables to " +
		"create, external dependency notes), validates it as compose does plus: every orgconfig: key it uses is named in the " +
		"notes; on failure asks once more with the errors, then fails with them. llm_generation_status on each change."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, studioWords, s.generateWorkflow)

	o = op("get-generation-status", http.MethodGet, "/ai/generate-workflow/{generationId}/status", "A generation's status", "Workflow drafting")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, studioWords, s.getGenerationStatus)

	o = op("get-generation", http.MethodGet, "/ai/generate-workflow/{generationId}", "A generation and its bundle", "Workflow drafting")
	o.Description = "The bundle once completed: {workflow_name, svc_workflow_definition, actions_to_register, custom_tables_to_create, " +
		"workflow_description, external_dependency_notes}, ready for compose-from-workflow-dsl (as dsl)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, studioWords, s.getGeneration)

	o = op("create-process-from-prompt", http.MethodPost, "/process-studio/processes/create-from-prompt", "Draft, compose and publish a process in one call", tags...)
	o.DefaultStatus = http.StatusCreated
	o.Description = "Drafts a bundle from the prompt (as /ai/generate-workflow, waiting for it), creates the process (named name, or " +
		"as drafted), composes the bundle and publishes it unless publish is false. A draft that fails validation twice is 422 " +
		"generation_failed with the problems, and nothing is created."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict}
	register(s, o, studioWords, s.createProcessFromPrompt)

	o = op("create-workflow-from-ai", http.MethodPost, "/workflows/create-from-ai", "Legacy: create a workflow from a prompt", tags...)
	o.Description = "Legacy. Answers 410 create_from_ai_gone pointing to POST /ai/generate-workflow and the process studio, unless " +
		"the deployment keeps it (svcflow --legacy-create-from-ai): then it drafts a bundle from {prompt, name?, llmOptions?} and " +
		"publishes it at once as a process of the project \"Legacy create-from-ai\", answering 201 {workflow_id, process_id, bundle_id}."
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusGone, http.StatusUnprocessableEntity, http.StatusConflict}
	register(s, o, studioWords, s.createWorkflowFromAI)
}

type createProjectInput struct {
	OrgParam
	Body ProjectBody
}

func (s *Server) createProject(ctx context.Context, in *createProjectInput) (*answer[*svctype.Project], error) {
	p, err := s.eng.CreateProject(ctx, in.OrgID, in.Body.Name, in.Body.Description)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Project]{Body: p}, nil
}

type listProjectsInput struct {
	OrgParam
	Paging
}

func (s *Server) listProjects(ctx context.Context, in *listProjectsInput) (*answer[List[svctype.Project]], error) {
	page, err := s.eng.ListProjects(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.Project]]{Body: listOf(page, same[svctype.Project])}, nil
}

type createProcessInput struct {
	OrgParam
	Body ProcessBody
}

func (s *Server) createProcess(ctx context.Context, in *createProcessInput) (*answer[*svctype.Process], error) {
	p, err := s.eng.CreateProcess(ctx, in.OrgID, svctype.Process{ProjectID: in.Body.ProjectID, Name: in.Body.Name,
		Description: in.Body.Description, AuthoringMode: in.Body.AuthoringMode})
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Process]{Body: p}, nil
}

func (s *Server) getProcess(ctx context.Context, in *ProcessPath) (*answer[*svctype.Process], error) {
	p, err := s.eng.GetProcess(ctx, in.OrgID, in.ProcessID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Process]{Body: p}, nil
}

type composeBundleInput struct {
	ProcessPath
	Body ComposeBody
}

func (s *Server) composeBundle(ctx context.Context, in *composeBundleInput) (*answer[*svctype.Bundle], error) {
	b, err := s.eng.Compose(ctx, in.OrgID, in.ProcessID, engine.Compose{DeploymentShape: in.Body.DeploymentShape,
		Summary: in.Body.Summary, DSL: json.RawMessage(in.Body.DSL)})
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Bundle]{Body: b}, nil
}

// BundlePath names a bundle.
type BundlePath struct {
	OrgParam
	BundleID string `path:"bundleId" maxLength:"100"`
}

func (s *Server) getBundle(ctx context.Context, in *BundlePath) (*answer[*svctype.Bundle], error) {
	b, err := s.eng.GetBundle(ctx, in.OrgID, in.BundleID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Bundle]{Body: b}, nil
}

type publishBundleInput struct {
	BundlePath
	Body *PublishBody
}

func (s *Server) publishBundle(ctx context.Context, in *publishBundleInput) (*answer[PublishAnswer], error) {
	note := ""
	if in.Body != nil {
		note = in.Body.PublishNote
	}
	res, err := s.eng.Publish(ctx, in.OrgID, in.BundleID, note)
	if err != nil {
		return nil, err
	}
	return &answer[PublishAnswer]{Body: PublishAnswer{Bundle: res.Bundle, Process: res.Process, WorkflowID: res.Workflow.ID,
		WorkflowName: res.Workflow.Name, WorkflowVersion: res.Workflow.Version, Actions: res.Actions, ActionsKept: res.ActionsKept,
		TablesCreated: res.TablesCreated, TablesKept: res.TablesKept, ExecutePath: res.ExecutePath}}, nil
}

type executeProcessInput struct {
	ProcessPath
	Body *ExecuteBody
}

func (s *Server) executeProcess(ctx context.Context, in *executeProcessInput) (*answer[ExecuteAnswer], error) {
	input := json.RawMessage(`{}`)
	if in.Body != nil && len(in.Body.Input) > 0 {
		input = json.RawMessage(in.Body.Input)
	}
	run, err := s.eng.ExecuteProcess(ctx, in.OrgID, in.ProcessID, input)
	if err != nil {
		return nil, err
	}
	return &answer[ExecuteAnswer]{Body: ExecuteAnswer{ID: run.ID, Status: run.Status}}, nil
}

type generateWorkflowInput struct {
	OrgParam
	Body GenerateBody
}

func (s *Server) generateWorkflow(ctx context.Context, in *generateWorkflowInput) (*answer[GenerateAnswer], error) {
	g, err := s.eng.Generate(ctx, in.OrgID, in.Body.Prompt, in.Body.LLMOptions.options())
	if err != nil {
		return nil, err
	}
	return &answer[GenerateAnswer]{Body: GenerateAnswer{GenerationID: g.ID, Status: g.Status,
		Message: "drafting: poll GET /ai/generate-workflow/" + g.ID + "/status"}}, nil
}

func (s *Server) getGenerationStatus(ctx context.Context, in *GenerationPath) (*answer[GenerationStatus], error) {
	g, err := s.eng.GetGeneration(ctx, in.OrgID, in.GenerationID)
	if err != nil {
		return nil, err
	}
	return &answer[GenerationStatus]{Body: GenerationStatus{GenerationID: g.ID, Status: g.Status, Attempts: g.Attempts,
		Errors: g.Errors, UpdatedAt: g.UpdatedAt}}, nil
}

func (s *Server) getGeneration(ctx context.Context, in *GenerationPath) (*answer[*svctype.Generation], error) {
	g, err := s.eng.GetGeneration(ctx, in.OrgID, in.GenerationID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Generation]{Body: g}, nil
}

type createProcessFromPromptInput struct {
	OrgParam
	Body FromPromptBody
}

func (s *Server) createProcessFromPrompt(ctx context.Context, in *createProcessFromPromptInput) (*answer[FromPromptAnswer], error) {
	publish := in.Body.Publish == nil || *in.Body.Publish
	res, err := s.eng.CreateFromPrompt(ctx, in.OrgID, engine.FromPrompt{ProjectID: in.Body.ProjectID, Name: in.Body.Name,
		Description: in.Body.Description, Prompt: in.Body.Prompt, LLM: in.Body.LLMOptions.options(), Publish: publish})
	if err != nil {
		return nil, err
	}
	out := FromPromptAnswer{Process: res.Process, Bundle: res.Bundle, Attempts: res.Attempts, Published: res.Published != nil}
	if res.Published != nil {
		out.ExecutePath, out.WorkflowID = res.Published.ExecutePath, res.Published.Workflow.ID
	}
	return &answer[FromPromptAnswer]{Body: out}, nil
}

type createWorkflowFromAIInput struct {
	OrgParam
	Body *LegacyFromAIBody
}

func (s *Server) createWorkflowFromAI(ctx context.Context, in *createWorkflowFromAIInput) (*answer[LegacyFromAIAnswer], error) {
	if !s.legacyCreateFromAI {
		return nil, newProblem(http.StatusGone, "create_from_ai_gone",
			"POST /workflows/create-from-ai is retired: draft with POST /ai/generate-workflow, then compose and publish in the process studio (/process-studio/...)")
	}
	if in.Body == nil {
		return nil, newProblem(http.StatusUnprocessableEntity, codeValidation, "validation failed", &ProblemDetail{Location: "body.prompt", Pointer: "/prompt", Message: "required"})
	}
	prj, err := s.legacyProject(ctx, in.OrgID)
	if err != nil {
		return nil, err
	}
	res, err := s.eng.CreateFromPrompt(ctx, in.OrgID, engine.FromPrompt{ProjectID: prj, Name: in.Body.Name, Prompt: in.Body.Prompt,
		LLM: in.Body.LLMOptions.options(), Publish: true})
	if err != nil {
		return nil, err
	}
	return &answer[LegacyFromAIAnswer]{Body: LegacyFromAIAnswer{
		WorkflowID: res.Published.Workflow.ID, ProcessID: res.Process.ID, BundleID: res.Bundle.ID}}, nil
}

// legacyProjectName holds what the legacy create-from-ai route makes.
const legacyProjectName = "Legacy create-from-ai"

// legacyProject is the organization's project of legacy creations, made on first use.
func (s *Server) legacyProject(ctx context.Context, orgID string) (string, error) {
	opts := svctype.ListOptions{Limit: 500}
	for {
		page, err := s.eng.ListProjects(ctx, orgID, opts)
		if err != nil {
			return "", err
		}
		for _, p := range page.Items {
			if p.Name == legacyProjectName {
				return p.ID, nil
			}
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	p, err := s.eng.CreateProject(ctx, orgID, legacyProjectName, "Workflows made by POST /workflows/create-from-ai")
	if err != nil {
		return "", err
	}
	return p.ID, nil
}
