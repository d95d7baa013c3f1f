package svctype

import (
	"encoding/json"
	"time"
)

// ExternalForm is an intake form that starts a run per submission (spec section 2,
// "External form"; routes /external-forms and the public /forms/public/{formId}).
type ExternalForm struct {
	ID          string     `json:"id"`
	OrgID       string     `json:"-"`
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	IsPublic    bool       `json:"is_public"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	// At most one trigger is set; with none, submissions are only stored.
	TriggerWorkflowID string `json:"trigger_workflow_id,omitempty"`
	TriggerProcessID  string `json:"trigger_process_id,omitempty"`
	// Schema is the form_schema_v1 document, normalised when the form was written.
	Schema    json.RawMessage      `json:"schema"`
	Settings  ExternalFormSettings `json:"settings"`
	CreatedAt time.Time            `json:"created_at"`
	UpdatedAt time.Time            `json:"updated_at"`
}

// ExternalFormSettings are the form's page settings (camelCase, as the spec names them).
type ExternalFormSettings struct {
	// RequireAuth refuses a submission without a signed-in person (401
	// form_signin_required); the person is recorded as submitted_by.
	RequireAuth    bool               `json:"requireAuth"`
	SuccessMessage string             `json:"successMessage,omitempty"`
	RedirectURL    string             `json:"redirectUrl,omitempty"`
	Branding       *ExternalFormBrand `json:"branding,omitempty"`
	// FrameAncestors are the origins (https://host[:port]) whose pages may show the hosted
	// form page in a frame; none may when empty.
	FrameAncestors []string `json:"frameAncestors,omitempty"`
}

// ExternalFormBrand is how the hosted page looks.
type ExternalFormBrand struct {
	Name          string `json:"name,omitempty"`
	LogoURL       string `json:"logoUrl,omitempty"`
	Accent        string `json:"accent,omitempty"`
	Footer        string `json:"footer,omitempty"`
	HidePoweredBy bool   `json:"hidePoweredBy,omitempty"`
}

// Execution types of a submission's triggered run.
const (
	ExecutionWorkflowRun = "workflow_run"
	ExecutionAgentRun    = "agent_run"
)

// FormSubmission is one submission of an external form.
type FormSubmission struct {
	ID     string `json:"submission_id"`
	OrgID  string `json:"-"`
	FormID string `json:"form_id"`
	// Payload is the flat {key: value} the person submitted.
	Payload json.RawMessage `json:"payload"`
	// TriggeredRunID and TriggeredExecutionType are empty when the form has no trigger.
	TriggeredRunID         string `json:"triggered_run_id,omitempty"`
	TriggeredExecutionType string `json:"triggered_execution_type,omitempty"`
	// SubmittedBy is the signed-in person, only when the form requires sign-in.
	SubmittedBy string    `json:"submitted_by,omitempty"`
	SubmittedAt time.Time `json:"submitted_at"`
}
