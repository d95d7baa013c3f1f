package runtime

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/svctype"
)

// ActionBody is an action registration: the body of POST /actions and PUT
// /actions/{actionName}. The schema bounds what it can; the engine checks the rest (which
// fields a kind takes, orgconfig: references, the properties of custom-table and
// nway_match) and locates each problem by a JSON pointer into this body.
type ActionBody struct {
	ActionName  string             `json:"action_name,omitempty" example:"notify-crm" doc:"1-100 letters, digits, '_', '-' or '.'; unique within the organization; a workflow step names the action by it as its type. Required on POST; on PUT optional, and when given it must equal the path's."`
	Kind        svctype.ActionKind `json:"kind" enum:"http,db,llm,custom-table,nway_match" doc:"What the action does. A registration may carry only its kind's fields (422 naming any other)."`
	Description string             `json:"description,omitempty" doc:"Shown to agents that use the action as a tool (at most 2,000 characters)."`

	URL                string            `json:"url,omitempty" example:"https://crm.example.com/api/contacts" doc:"http: the target, an http(s) URL ({{templates}} allowed outside the host) or an orgconfig:<key> reference."`
	HTTPMethod         string            `json:"http_method,omitempty" enum:"GET,POST,PUT,PATCH,DELETE" doc:"http: default POST."`
	Headers            map[string]string `json:"headers,omitempty" doc:"http: header name to value. Write secrets as orgconfig:<key> references, resolved when the action runs: a literal value is stored and shown as written."`
	Passthrough        bool              `json:"passthrough,omitempty" doc:"http: the spec's passthrough flag."`
	RetryNonIdempotent bool              `json:"retry_non_idempotent,omitempty" doc:"http: allow retrying a non-idempotent method (POST, PATCH) after a failure."`
	TimeoutSeconds     int               `json:"timeout_seconds,omitempty" minimum:"1" maximum:"300" doc:"http: per-call timeout in seconds (absent: the executor's default)."`

	Datasource string `json:"datasource,omitempty" example:"orgconfig:db:erp" doc:"db: an orgconfig:db:<name> reference (never a connection string)."`
	Query      string `json:"query,omitempty" example:"SELECT * FROM invoices WHERE id = $1" doc:"db: the query, with positional parameters ($1, $2, ...)."`

	Template  string `json:"template,omitempty" doc:"llm: the prompt, with {{var}} placeholders."`
	Model     string `json:"model,omitempty" doc:"llm: the model name (absent: the executor's default)."`
	MaxTokens int    `json:"max_tokens,omitempty" minimum:"1" maximum:"100000" doc:"llm: the longest reply, in tokens."`

	Properties map[string]any `json:"properties,omitempty" doc:"custom-table and nway_match: the configuration, checked like the properties of a step of that type."`
}

func (b ActionBody) action() svctype.Action {
	return svctype.Action{
		Name: b.ActionName, Kind: b.Kind, Description: b.Description,
		URL: b.URL, HTTPMethod: b.HTTPMethod, Headers: b.Headers, Passthrough: b.Passthrough,
		RetryNonIdempotent: b.RetryNonIdempotent, TimeoutSeconds: b.TimeoutSeconds,
		Datasource: b.Datasource, Query: b.Query,
		Template: b.Template, Model: b.Model, MaxTokens: b.MaxTokens,
		Properties: b.Properties,
	}
}

// Action is a registered action as the API shows it: the registration as stored (defaults
// filled, e.g. http_method) and when it was created and last replaced.
type Action struct {
	ActionBody
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TransformSchema: an answer always names the action (optional only in a PUT body).
func (Action) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	s.Required = []string{"action_name", "kind", "created_at", "updated_at"}
	return s
}

func actionOf(a svctype.Action) Action {
	return Action{
		ActionBody: ActionBody{
			ActionName: a.Name, Kind: a.Kind, Description: a.Description,
			URL: a.URL, HTTPMethod: a.HTTPMethod, Headers: a.Headers, Passthrough: a.Passthrough,
			RetryNonIdempotent: a.RetryNonIdempotent, TimeoutSeconds: a.TimeoutSeconds,
			Datasource: a.Datasource, Query: a.Query,
			Template: a.Template, Model: a.Model, MaxTokens: a.MaxTokens,
			Properties: a.Properties,
		},
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// ActionPath is the input of the routes under /actions/{actionName}.
type ActionPath struct {
	OrgParam
	ActionName string `path:"actionName" doc:"The action's action_name."`
}

type actionOutput struct {
	Body Action
}

var (
	actionNotFound = failure{notFound: "action not found"}
	actionWrite    = failure{notFound: "action not found", conflict: "an action with this name already exists in the organization"}
)

func (s *Server) registerActions() {
	o := op("create-action", http.MethodPost, "/actions", "Register an action", "Actions")
	o.Description = "Registers a named action of kind http, db, llm, custom-table or nway_match; a workflow step " +
		"whose type is its action_name runs it. 409 when the organization has an action of that name; 422, " +
		"located by JSON pointer, for a field that is missing, wrong, or belongs to another kind."
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict}
	register(s, o, actionWrite, s.createAction)

	o = op("list-actions", http.MethodGet, "/actions", "List the organization's actions", "Actions")
	o.Description = "Every registered action with its whole registration, by action_name."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listActions)

	o = op("get-action", http.MethodGet, "/actions/{actionName}", "Get an action", "Actions")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, actionNotFound, s.getAction)

	o = op("replace-action", http.MethodPut, "/actions/{actionName}", "Replace an action's registration", "Actions")
	o.Description = "Replaces the whole registration (a field left out is gone afterwards; created_at is kept). " +
		"The path names the action: a body's action_name, when given, must equal it (422), since renaming would " +
		"leave the workflows that name the action without one. 404 when there is no such action: PUT does not create."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, actionNotFound, s.replaceAction)

	o = op("delete-action", http.MethodDelete, "/actions/{actionName}", "Delete an action", "Actions")
	o.Description = "A workflow step that names a deleted action fails when it runs, like any unknown step type."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, actionNotFound, s.deleteAction)
}

type createActionInput struct {
	OrgParam
	Body ActionBody
}

func (s *Server) createAction(ctx context.Context, in *createActionInput) (*actionOutput, error) {
	a, err := s.eng.Actions.CreateAction(ctx, in.OrgID, in.Body.action())
	if err != nil {
		return nil, err
	}
	return &actionOutput{Body: actionOf(*a)}, nil
}

type listActionsInput struct {
	OrgParam
	Paging
}

func (s *Server) listActions(ctx context.Context, in *listActionsInput) (*answer[List[Action]], error) {
	page, err := s.eng.Actions.ListActions(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[Action]]{Body: listOf(page, actionOf)}, nil
}

func (s *Server) getAction(ctx context.Context, in *ActionPath) (*actionOutput, error) {
	a, err := s.eng.Actions.GetAction(ctx, in.OrgID, in.ActionName)
	if err != nil {
		return nil, err
	}
	return &actionOutput{Body: actionOf(*a)}, nil
}

type replaceActionInput struct {
	ActionPath
	Body ActionBody
}

func (s *Server) replaceAction(ctx context.Context, in *replaceActionInput) (*actionOutput, error) {
	a, err := s.eng.Actions.ReplaceAction(ctx, in.OrgID, in.ActionName, in.Body.action())
	if err != nil {
		return nil, err
	}
	return &actionOutput{Body: actionOf(*a)}, nil
}

func (s *Server) deleteAction(ctx context.Context, in *ActionPath) (*struct{}, error) {
	if err := s.eng.Actions.DeleteAction(ctx, in.OrgID, in.ActionName); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
