package svctype

import (
	"encoding/json"
	"time"
)

// FormPauseStatus is where a form pause stands.
type FormPauseStatus string

// Form pause statuses: open until submitted or expired.
const (
	FormPauseOpen      FormPauseStatus = "open"
	FormPauseSubmitted FormPauseStatus = "submitted"
	FormPauseExpired   FormPauseStatus = "expired"
	// FormPauseCancelled: the run was cancelled while it waited.
	FormPauseCancelled FormPauseStatus = "cancelled"
)

// FormPause is a PbotForm step waiting for a person's submission.
type FormPause struct {
	ID           string          `json:"form_pause_id"`
	OrgID        string          `json:"-"`
	RunID        string          `json:"run_id"`
	WorkflowID   string          `json:"workflow_id"`
	StepIndex    int             `json:"step_id"`
	Status       FormPauseStatus `json:"status"`
	ExpectedKeys []string        `json:"expected_keys"`
	// AssigneeRole is the role whose people may take the pause ("" : any person of the
	// organization), as the PbotForm step names it.
	AssigneeRole      string          `json:"assignee_role,omitempty"`
	Schema            json.RawMessage `json:"schema"`
	ReminderIntervals []float64       `json:"reminder_intervals,omitempty"`
	ExpiresAt         *time.Time      `json:"expires_at"`
	SubmissionID      string          `json:"submission_id,omitempty"`
	Submission        json.RawMessage `json:"submission,omitempty"`
	SubmittedAt       *time.Time      `json:"submitted_at,omitempty"`
	ClaimedBy         string          `json:"claimed_by,omitempty"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
}

// OrgFeatures are an organization's switches (GET/PUT /org-features).
type OrgFeatures struct {
	// AgentForms allows form generation with a model (POST /forms/generate, generated pause
	// schemas).
	AgentForms bool `json:"agent_forms"`
}

// FormSchemaKey names a PbotForm step of one workflow version: where the schema generated
// for it is kept.
type FormSchemaKey struct {
	OrgID           string
	WorkflowID      string
	WorkflowVersion int
	StepIndex       int
	// OnFalse is 0 for the step at StepIndex itself and n for the n-th onFalse under it
	// (a filtered PbotForm and its onFalse PbotForm are two forms).
	OnFalse int
}

// GeneratedFormSchema is a form_schema_v1 the organization's model drafted for a PbotForm
// step without an authored schema, kept so that every later pause of the step (in the same
// workflow version) shows it without asking the model again. Only a model's valid form is
// kept, never the fallback.
type GeneratedFormSchema struct {
	FormSchemaKey
	Schema json.RawMessage
	// Attempts is how many model calls the draft took (1 or 2).
	Attempts  int
	CreatedAt time.Time
}
