package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// External form routes (spec section 2, "External form"): the organization's CRUD under
// /external-forms, and the two public routes under /forms/public/{formId}, which take no
// X-Org-Id because the form id names its organization. The gateway proxies the public
// routes, adds per-visitor limits and, for a form with settings.requireAuth, vouches for the
// signed-in person with an identity token (hosts/identity) that this runtime believes only
// under the key it shares with the gateway (Options.IdentityKey).

// FormBranding is how a form's hosted page looks.
type FormBranding struct {
	Name          string `json:"name,omitempty" maxLength:"200" doc:"The name shown at the top of the page."`
	LogoURL       string `json:"logoUrl,omitempty" example:"https://example.com/logo.png" doc:"An absolute https URL."`
	Accent        string `json:"accent,omitempty" example:"#0a7d5a" doc:"A hex colour: #rgb or #rrggbb."`
	Footer        string `json:"footer,omitempty" maxLength:"1000" doc:"Text at the bottom of the page."`
	HidePoweredBy bool   `json:"hidePoweredBy,omitempty" doc:"Hide the \"powered by\" line."`
}

// FormSettings are a form's page settings (requireAuth is optional in a body and always
// shown in an answer).
type FormSettings struct {
	RequireAuth    bool          `json:"requireAuth" required:"false" doc:"Require a signed-in person (email and one-time code, at the gateway) before a submission: without one, 401 form_signin_required. The person is recorded as submitted_by."`
	SuccessMessage string        `json:"successMessage,omitempty" maxLength:"2000" doc:"Shown after a submission."`
	RedirectURL    string        `json:"redirectUrl,omitempty" doc:"An absolute http(s) URL to send the person to instead of the message."`
	Branding       *FormBranding `json:"branding,omitempty"`
	FrameAncestors []string      `json:"frameAncestors,omitempty" maxItems:"20" example:"[\"https://www.example.com\"]" doc:"The origins whose pages may show the hosted form page (the gateway's /forms/{formId}) in a frame: https://host or https://host:port (http only for localhost and 127.0.0.1), *.host for its subdomains. None may when empty (the default)."`
}

func (s FormSettings) settings() svctype.ExternalFormSettings {
	out := svctype.ExternalFormSettings{RequireAuth: s.RequireAuth, SuccessMessage: s.SuccessMessage, RedirectURL: s.RedirectURL, FrameAncestors: s.FrameAncestors}
	if b := s.Branding; b != nil {
		out.Branding = &svctype.ExternalFormBrand{Name: b.Name, LogoURL: b.LogoURL, Accent: b.Accent, Footer: b.Footer, HidePoweredBy: b.HidePoweredBy}
	}
	return out
}

func formSettingsOf(s svctype.ExternalFormSettings) FormSettings {
	out := FormSettings{RequireAuth: s.RequireAuth, SuccessMessage: s.SuccessMessage, RedirectURL: s.RedirectURL, FrameAncestors: s.FrameAncestors}
	if b := s.Branding; b != nil {
		out.Branding = &FormBranding{Name: b.Name, LogoURL: b.LogoURL, Accent: b.Accent, Footer: b.Footer, HidePoweredBy: b.HidePoweredBy}
	}
	return out
}

// ExternalFormBody is the body of POST /external-forms and PUT /external-forms/{formId}
// (which replaces every field).
type ExternalFormBody struct {
	Name              string       `json:"name" doc:"1-200 characters."`
	Description       string       `json:"description,omitempty" doc:"At most 4,000 characters."`
	IsPublic          bool         `json:"is_public,omitempty" doc:"Serve the form on the public routes (GET /forms/public/{formId}, POST .../submit) without a key or session."`
	ExpiresAt         *time.Time   `json:"expires_at,omitempty" doc:"No submissions after this time (410 form_expired)."`
	TriggerWorkflowID string       `json:"trigger_workflow_id,omitempty" doc:"The workflow started per submission, with the flat payload as its input. At most one trigger."`
	TriggerProcessID  string       `json:"trigger_process_id,omitempty" doc:"A published process to start instead (processes are not part of this build: 422). Never both triggers."`
	Schema            any          `json:"schema" doc:"The form: a form_schema_v1 document, or an older shape (builder components, a flat field list, a JSON-Schema object), stored normalised. 422 names each problem by JSON pointer."`
	Settings          FormSettings `json:"settings,omitempty"`
}

func (b ExternalFormBody) input() engine.ExternalFormInput {
	raw, _ := json.Marshal(b.Schema)
	return engine.ExternalFormInput{Name: b.Name, Description: b.Description, IsPublic: b.IsPublic, ExpiresAt: b.ExpiresAt,
		TriggerWorkflowID: b.TriggerWorkflowID, TriggerProcessID: b.TriggerProcessID, Schema: raw, Settings: b.Settings.settings()}
}

// ExternalForm is a form as the organization's routes show it.
type ExternalForm struct {
	ID                string          `json:"id" example:"frm-YWNtZQ.5f0c…" doc:"frm-<id>; the id also names the organization, so the public routes need no X-Org-Id."`
	Name              string          `json:"name"`
	Description       string          `json:"description,omitempty"`
	IsPublic          bool            `json:"is_public"`
	ExpiresAt         *time.Time      `json:"expires_at,omitempty"`
	TriggerWorkflowID string          `json:"trigger_workflow_id,omitempty"`
	TriggerProcessID  string          `json:"trigger_process_id,omitempty"`
	Schema            json.RawMessage `json:"schema" doc:"The form_schema_v1 document."`
	Settings          FormSettings    `json:"settings"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
}

func externalFormOf(f svctype.ExternalForm) ExternalForm {
	return ExternalForm{ID: f.ID, Name: f.Name, Description: f.Description, IsPublic: f.IsPublic, ExpiresAt: f.ExpiresAt,
		TriggerWorkflowID: f.TriggerWorkflowID, TriggerProcessID: f.TriggerProcessID, Schema: f.Schema,
		Settings: formSettingsOf(f.Settings), CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

// PublicForm is what the public route shows of a form: no triggers, no submissions.
type PublicForm struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema" doc:"The form_schema_v1 document to render."`
	Settings    FormSettings    `json:"settings"`
	ExpiresAt   *time.Time      `json:"expires_at,omitempty"`
	Open        bool            `json:"open" doc:"Whether the form takes submissions now (false after expires_at)."`
}

// FormSubmission is one submission of an external form.
type FormSubmission struct {
	ID                     string          `json:"submission_id" example:"sub_6f1d…"`
	FormID                 string          `json:"form_id"`
	Payload                json.RawMessage `json:"payload" doc:"The flat {key: value} submitted."`
	TriggeredRunID         *string         `json:"triggered_run_id" doc:"The run the submission started (null when the form has no trigger)."`
	TriggeredExecutionType *string         `json:"triggered_execution_type" enum:"workflow_run,agent_run" doc:"What kind of run it started."`
	SubmittedBy            string          `json:"submitted_by,omitempty" doc:"The signed-in person, only when the form requires sign-in."`
	SubmittedAt            time.Time       `json:"submitted_at"`
}

func formSubmissionOf(s svctype.FormSubmission) FormSubmission {
	return FormSubmission{ID: s.ID, FormID: s.FormID, Payload: s.Payload, TriggeredRunID: nilIfBlank(s.TriggeredRunID),
		TriggeredExecutionType: nilIfBlank(s.TriggeredExecutionType), SubmittedBy: s.SubmittedBy, SubmittedAt: s.SubmittedAt}
}

func nilIfBlank(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// PublicSubmitResult is the answer to a public submission.
type PublicSubmitResult struct {
	SubmissionID           string  `json:"submission_id" example:"sub_6f1d…"`
	TriggeredRunID         *string `json:"triggered_run_id" doc:"The run the submission started (null when the form has no trigger)."`
	TriggeredExecutionType *string `json:"triggered_execution_type" enum:"workflow_run,agent_run"`
	SuccessMessage         string  `json:"success_message,omitempty" doc:"settings.successMessage, for the page to show."`
	RedirectURL            string  `json:"redirect_url,omitempty" doc:"settings.redirectUrl, for the page to go to."`
}

// ExternalFormPath is the input of the routes under /external-forms/{formId}.
type ExternalFormPath struct {
	OrgParam
	FormID string `path:"formId" maxLength:"256" doc:"The form's id (frm-…)."`
}

// PublicFormPath is the input of the public routes: no X-Org-Id.
type PublicFormPath struct {
	FormID string `path:"formId" maxLength:"256" doc:"The form's id (frm-…): it names the organization."`
}

type externalFormOutput struct {
	Body ExternalForm
}

var externalFormNotFound = failure{notFound: "external form not found"}

// maxPublicSubmitBytes bounds a public submission: anyone may send one, and it becomes a
// run's input.
const maxPublicSubmitBytes = 256 << 10

func (s *Server) registerExternalForms() {
	o := op("create-external-form", http.MethodPost, "/external-forms", "Create an external (intake) form", "External forms")
	o.Description = "Stores the form (schema normalised to form_schema_v1) and emits external_form_created. 422, by JSON " +
		"pointer, for a schema that fails validation, both triggers set, a trigger workflow the organization does not have, " +
		"a logoUrl that is not https or an accent that is not a hex colour."
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{}, s.createExternalForm)

	o = op("list-external-forms", http.MethodGet, "/external-forms", "List the organization's external forms", "External forms")
	o.Description = "Newest first, a page at a time like every list."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listExternalForms)

	o = op("get-external-form", http.MethodGet, "/external-forms/{formId}", "Get an external form", "External forms")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, externalFormNotFound, s.getExternalForm)

	o = op("replace-external-form", http.MethodPut, "/external-forms/{formId}", "Replace an external form", "External forms")
	o.Description = "Every field is replaced (a field left out takes its default), checked as on creation. Emits " +
		"external_form_updated with `changes`, the parts that differ (name, schema, settings.branding, ...), when any do."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, externalFormNotFound, s.replaceExternalForm)

	o = op("delete-external-form", http.MethodDelete, "/external-forms/{formId}", "Delete an external form", "External forms")
	o.Description = "Removes the form and its submissions (the runs they started stay) and emits external_form_deleted."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, externalFormNotFound, s.deleteExternalForm)

	o = op("list-form-submissions", http.MethodGet, "/external-forms/{formId}/submissions", "List a form's submissions", "External forms")
	o.Description = "Newest first, a page at a time: each submission's payload, the run it started and, for a form " +
		"that requires sign-in, who submitted it."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{in: "query", notFound: externalFormNotFound.notFound}, s.listFormSubmissions)

	o = op("get-public-form", http.MethodGet, "/forms/public/{formId}", "A public form's definition (no X-Org-Id)", "External forms")
	o.Description = "What a page needs to render the form: name, description, schema, settings, expiry. No triggers, no " +
		"submissions. A form that is missing or not public is 404."
	o.Errors = []int{http.StatusNotFound}
	register(s, o, externalFormNotFound, s.getPublicForm)

	o = op("submit-public-form", http.MethodPost, "/forms/public/{formId}/submit", "Submit a public form (no X-Org-Id)", "External forms")
	o.Description = "The body is the flat payload {key: value}, at most 256 KiB, checked against the form's schema (422 naming each " +
		"problem). A valid submission is stored, starts the form's trigger workflow with the payload as input and emits " +
		"external_form_submitted, all at once. 404 for a form that is missing or not public, 410 form_expired after " +
		"expires_at, 401 form_signin_required when the form requires sign-in and the request carries no identity the " +
		"gateway signed, 409 form_trigger_missing when the trigger workflow was deleted. Nothing is stored on an error."
	o.DefaultStatus = http.StatusCreated
	o.MaxBodyBytes = maxPublicSubmitBytes
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusGone}
	register(s, o, externalFormNotFound, s.submitPublicForm)
}

type createExternalFormInput struct {
	OrgParam
	Body ExternalFormBody
}

func (s *Server) createExternalForm(ctx context.Context, in *createExternalFormInput) (*externalFormOutput, error) {
	f, err := s.eng.Forms.CreateExternalForm(ctx, in.OrgID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &externalFormOutput{Body: externalFormOf(*f)}, nil
}

type listExternalFormsInput struct {
	OrgParam
	Paging
}

func (s *Server) listExternalForms(ctx context.Context, in *listExternalFormsInput) (*answer[List[ExternalForm]], error) {
	page, err := s.eng.Forms.ListExternalForms(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[ExternalForm]]{Body: listOf(page, externalFormOf)}, nil
}

func (s *Server) getExternalForm(ctx context.Context, in *ExternalFormPath) (*externalFormOutput, error) {
	f, err := s.eng.Forms.GetExternalForm(ctx, in.OrgID, in.FormID)
	if err != nil {
		return nil, err
	}
	return &externalFormOutput{Body: externalFormOf(*f)}, nil
}

type replaceExternalFormInput struct {
	ExternalFormPath
	Body ExternalFormBody
}

func (s *Server) replaceExternalForm(ctx context.Context, in *replaceExternalFormInput) (*externalFormOutput, error) {
	f, err := s.eng.Forms.ReplaceExternalForm(ctx, in.OrgID, in.FormID, in.Body.input())
	if err != nil {
		return nil, err
	}
	return &externalFormOutput{Body: externalFormOf(*f)}, nil
}

func (s *Server) deleteExternalForm(ctx context.Context, in *ExternalFormPath) (*struct{}, error) {
	if err := s.eng.Forms.DeleteExternalForm(ctx, in.OrgID, in.FormID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}

type listFormSubmissionsInput struct {
	ExternalFormPath
	Paging
}

func (s *Server) listFormSubmissions(ctx context.Context, in *listFormSubmissionsInput) (*answer[List[FormSubmission]], error) {
	page, err := s.eng.Forms.ListFormSubmissions(ctx, in.OrgID, in.FormID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[FormSubmission]]{Body: listOf(page, formSubmissionOf)}, nil
}

func (s *Server) getPublicForm(ctx context.Context, in *PublicFormPath) (*answer[PublicForm], error) {
	f, open, err := s.eng.Forms.PublicForm(ctx, in.FormID)
	if err != nil {
		return nil, err
	}
	return &answer[PublicForm]{Body: PublicForm{ID: f.ID, Name: f.Name, Description: f.Description,
		Schema: f.Schema, Settings: formSettingsOf(f.Settings), ExpiresAt: f.ExpiresAt, Open: open}}, nil
}

type submitPublicFormInput struct {
	PublicFormPath
	Identity string         `header:"X-Svc-Identity" doc:"Set by the gateway for a signed-in person: a token signed with the key the gateway and the runtime share. Anything else is ignored."`
	Body     map[string]any `nullable:"false"`
}

func (s *Server) submitPublicForm(ctx context.Context, in *submitPublicFormInput) (*answer[PublicSubmitResult], error) {
	done, err := s.eng.Forms.SubmitPublicForm(ctx, in.FormID, engine.PublicSubmission{
		Payload: in.Body, SubmittedBy: s.signedIn(in.FormID, in.Identity),
	})
	if err != nil {
		return nil, err
	}
	sub := done.Submission
	res := PublicSubmitResult{SubmissionID: sub.ID, TriggeredRunID: nilIfBlank(sub.TriggeredRunID),
		TriggeredExecutionType: nilIfBlank(sub.TriggeredExecutionType),
		SuccessMessage:         done.Settings.SuccessMessage, RedirectURL: done.Settings.RedirectURL}
	return &answer[PublicSubmitResult]{Body: res}, nil
}

// IdentityHeader carries the gateway's word for a signed-in person (hosts/identity).
type IdentityHeader struct {
	Identity string `header:"X-Svc-Identity" doc:"Set by the gateway for a signed-in person: a token signed with the key the gateway and the runtime share. Anything else is ignored."`
}

// person returns the person an identity token names when it verifies under the gateway's
// key and was minted for orgID; "" otherwise.
func (s *Server) person(orgID, token string) string {
	if token == "" || s.identity == nil {
		return ""
	}
	id, err := s.identity.Verify(token, time.Now())
	if err != nil || id.OrgID != orgID {
		return ""
	}
	return id.Subject
}

// signedIn returns the person an identity token names, when the token verifies under the
// gateway's key and was minted for the form's organization; "" otherwise (no key, no token,
// a forged, expired or other organization's token).
func (s *Server) signedIn(formID, token string) string {
	org, ok := engine.ExternalFormOrg(formID)
	if !ok {
		return ""
	}
	return s.person(org, token)
}
