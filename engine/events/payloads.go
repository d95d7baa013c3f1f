package events

import (
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// The payload of every event of the catalogue, one Go type each: the one declaration an
// event's catalogue fields (Spec.Fields) and its schema in the OpenAPI documents (the 3.1
// documents' webhooks, the payload schemas in components of every document) are made
// from. A field is optional (`?` in the spec) when its json tag says omitempty; a field
// that is sent as null when it does not apply says nullable:"true". Every payload is an
// object that carries no field its type does not declare.
//
// The run core emits its events with these types; the features still build maps. The
// contract test under the test suite (internal/contracttest.WatchEvents) validates every
// payload any test emits against the committed schema, so a field renamed, added or
// retyped in one place and not in the other fails the test that emitted it.

// RunActor is who cancelled a run.
type RunActor struct {
	Type string `json:"type" doc:"user, api_key, system..." example:"user"`
	ID   string `json:"id" doc:"The actor's id (a user's, a key's), or empty."`
}

// RunResult is a finished run's result: its status and its outputs.
type RunResult struct {
	Status  string         `json:"status" enum:"completed,condition_not_met,rejected" doc:"completed; condition_not_met when the workflow's condition was false (no step ran); rejected when an approval was rejected or expired."`
	Outputs map[string]any `json:"outputs,omitzero" doc:"The run's context: the steps' outputs by key (absent when no step ran)."`
}

// StepError is a failed step's error.
type StepError struct {
	Message string `json:"message"`
}

// WorkflowRunStartedEvent: a run was started (executed, scheduled, submitted by a form).
type WorkflowRunStartedEvent struct {
	RunID        string `json:"run_id"`
	WorkflowID   string `json:"workflow_id"`
	InputPayload any    `json:"input_payload" doc:"The run's input, secrets redacted."`
}

// WorkflowRunCompletedEvent: a run completed (or its condition was false).
type WorkflowRunCompletedEvent struct {
	RunID      string    `json:"run_id"`
	WorkflowID string    `json:"workflow_id"`
	Result     RunResult `json:"result"`
}

// WorkflowRunFailedEvent: a run failed.
type WorkflowRunFailedEvent struct {
	RunID      string         `json:"run_id"`
	WorkflowID string         `json:"workflow_id"`
	Reason     string         `json:"reason"`
	Context    map[string]any `json:"context" doc:"The run's context when it failed."`
}

// WorkflowRunCancelledEvent: a run was cancelled.
type WorkflowRunCancelledEvent struct {
	RunID      string   `json:"run_id"`
	WorkflowID string   `json:"workflow_id"`
	Reason     string   `json:"reason"`
	Actor      RunActor `json:"actor"`
}

// WorkflowRunRetriedEvent: a failed run was retried from its failed step; emitted on the
// new run.
type WorkflowRunRetriedEvent struct {
	RunID    string   `json:"run_id" doc:"The new run."`
	RetryOf  string   `json:"retry_of" doc:"The failed run it retries."`
	FromStep int      `json:"from_step" doc:"The index of the step the new run starts at (the one that failed)."`
	Reason   string   `json:"reason"`
	Actor    RunActor `json:"actor"`
}

// PbotApprovalRequestedEvent: a workflow's approval step paused its run.
type PbotApprovalRequestedEvent struct {
	RunID          string `json:"run_id"`
	StepID         string `json:"step_id" doc:"The step's index, as a string."`
	WorkflowID     string `json:"workflow_id"`
	Comment        string `json:"comment"`
	RequestPayload any    `json:"request_payload" doc:"The step's request_payload, resolved."`
	Status         string `json:"status" enum:"pending"`
}

// AgentApprovalRequestedEvent: a standalone agent asks a person (the other shape of
// pbot_approval_requested; an agent of a workflow pauses its run instead).
type AgentApprovalRequestedEvent struct {
	Source         string   `json:"source" enum:"standalone_agent"`
	AgentRunID     string   `json:"agent_run_id"`
	RunID          *string  `json:"run_id" nullable:"true" doc:"Always null: the agent belongs to no run."`
	StepID         *string  `json:"step_id" nullable:"true" doc:"Always null."`
	Question       string   `json:"question"`
	Options        []string `json:"options" nullable:"false"`
	ContextSummary string   `json:"context_summary"`
	Urgency        string   `json:"urgency"`
	Status         string   `json:"status" enum:"pending"`
}

// PbotApprovalDecidedEvent: an approval was decided.
type PbotApprovalDecidedEvent struct {
	RunID      string    `json:"run_id"`
	StepID     string    `json:"step_id"`
	ApprovalID string    `json:"approval_id"`
	Approved   bool      `json:"approved"`
	Comment    string    `json:"comment"`
	DecidedAt  time.Time `json:"decided_at"`
}

// ExternalFormCreatedEvent: an external form was created.
type ExternalFormCreatedEvent struct {
	FormID    string    `json:"form_id"`
	FormName  string    `json:"form_name"`
	IsPublic  bool      `json:"is_public"`
	CreatedAt time.Time `json:"created_at"`
}

// ExternalFormUpdatedEvent: an external form was changed.
type ExternalFormUpdatedEvent struct {
	FormID   string   `json:"form_id"`
	FormName string   `json:"form_name"`
	Changes  []string `json:"changes" nullable:"false" doc:"The names of the fields that changed."`
}

// ExternalFormDeletedEvent: an external form was deleted.
type ExternalFormDeletedEvent struct {
	FormID    string    `json:"form_id"`
	FormName  string    `json:"form_name"`
	DeletedAt time.Time `json:"deleted_at"`
}

// ExternalFormSubmittedEvent: an external form was submitted.
type ExternalFormSubmittedEvent struct {
	FormID                 string    `json:"form_id"`
	FormName               string    `json:"form_name"`
	SubmissionID           string    `json:"submission_id"`
	SubmittedAt            time.Time `json:"submitted_at"`
	TriggeredRunID         *string   `json:"triggered_run_id" nullable:"true" doc:"The run the submission started, or null."`
	TriggeredExecutionType *string   `json:"triggered_execution_type" nullable:"true" doc:"workflow_run when it started one, or null."`
	HasTriggeredWorkflow   bool      `json:"has_triggered_workflow"`
	SubmittedBy            string    `json:"submitted_by,omitempty" doc:"The signed-in person who submitted it (a form that requires sign-in)."`
}

// DocumentUploadedEvent: a document was uploaded.
type DocumentUploadedEvent struct {
	DocumentID  string `json:"document_id"`
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
}

// DocumentVersionCreatedEvent: a document got a new version.
type DocumentVersionCreatedEvent struct {
	DocumentID  string `json:"document_id"`
	Version     int    `json:"version"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
}

// DocumentDeletedEvent: a document was deleted.
type DocumentDeletedEvent struct {
	DocumentID string `json:"document_id"`
}

// DocumentExpiredEvent: a document reached its expiry and was deleted.
type DocumentExpiredEvent struct {
	DocumentID string    `json:"document_id"`
	Name       string    `json:"name"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// StepStartedEvent: a step started.
type StepStartedEvent struct {
	RunID     string `json:"run_id"`
	StepIndex int    `json:"step_index"`
	StepType  string `json:"step_type"`
}

// StepCompletedEvent: a step completed.
type StepCompletedEvent struct {
	RunID     string `json:"run_id"`
	StepIndex int    `json:"step_index"`
}

// StepFailedEvent: a step failed (its run fails with it).
type StepFailedEvent struct {
	RunID     string    `json:"run_id"`
	StepIndex int       `json:"step_index"`
	Error     StepError `json:"error"`
}

// LoopStartedEvent: a loop step started.
type LoopStartedEvent struct {
	RunID      string `json:"run_id"`
	StepID     string `json:"step_id"`
	StepIndex  int    `json:"step_index"`
	Mode       string `json:"mode" doc:"foreach, or agent."`
	TotalItems int    `json:"total_items"`
	AgentRunID string `json:"agent_run_id,omitempty" doc:"The agent run of an agent loop."`
}

// LoopFailedEvent: a loop step failed.
type LoopFailedEvent struct {
	RunID     string `json:"run_id"`
	StepID    string `json:"step_id"`
	StepIndex int    `json:"step_index"`
	Mode      string `json:"mode"`
	Error     string `json:"error"`
}

// agentOutcome is the payload of an agent run entering a status.
type agentOutcome struct {
	AgentRunID   string  `json:"agent_run_id"`
	Status       string  `json:"status" enum:"completed,paused,cancelled,failed,budget_exceeded"`
	Iterations   int     `json:"iterations"`
	FinalAnswer  string  `json:"final_answer,omitempty"`
	Confidence   float64 `json:"confidence,omitempty"`
	PausedReason string  `json:"paused_reason,omitempty"`
}

// AgentStartedEvent: an agent run started.
type AgentStartedEvent struct {
	AgentRunID string `json:"agent_run_id"`
}

// AgentCompletedEvent: an agent run completed.
type AgentCompletedEvent agentOutcome

// AgentPausedEvent: an agent run paused (for a person, or for its parent run).
type AgentPausedEvent agentOutcome

// AgentCancelledEvent: an agent run was cancelled.
type AgentCancelledEvent agentOutcome

// AgentFailedEvent: an agent run failed, or exceeded its budget.
type AgentFailedEvent agentOutcome

// FormPauseCreatedEvent: a form step paused its run.
type FormPauseCreatedEvent struct {
	FormPauseID  string     `json:"form_pause_id"`
	RunID        string     `json:"run_id"`
	StepID       string     `json:"step_id"`
	ExpectedKeys []string   `json:"expected_keys" nullable:"false"`
	ExpiresAt    *time.Time `json:"expires_at" nullable:"true" doc:"When the pause expires, or null when it does not."`
	AssigneeRole string     `json:"assignee_role,omitempty" doc:"The role the form is assigned to, when the step names one."`
}

// FormSubmittedEvent: a paused run's form was submitted.
type FormSubmittedEvent struct {
	FormPauseID  string `json:"form_pause_id"`
	SubmissionID string `json:"submission_id"`
	RunID        string `json:"run_id"`
	StepID       string `json:"step_id"`
	ClaimedBy    string `json:"claimed_by,omitempty"`
}

// FormExpiredEvent: a paused run's form expired.
type FormExpiredEvent struct {
	RunID  string `json:"run_id"`
	StepID string `json:"step_id"`
}

// FormReminderEvent: a reminder of a form still unanswered.
type FormReminderEvent struct {
	RunID         string     `json:"run_id"`
	StepID        string     `json:"step_id"`
	FormPauseID   string     `json:"form_pause_id"`
	ReminderIndex int        `json:"reminder_index"`
	ExpiresAt     *time.Time `json:"expires_at" nullable:"true"`
}

// MatcherStartedEvent: a large matcher step started.
type MatcherStartedEvent struct {
	RunID     string `json:"run_id"`
	StepIndex int    `json:"step_index"`
	LeftSize  int    `json:"left_size"`
	RightSize int    `json:"right_size"`
}

// MatcherCompletedEvent: a matcher step completed.
type MatcherCompletedEvent struct {
	RunID               string         `json:"run_id"`
	StepIndex           int            `json:"step_index"`
	SchemaVersion       string         `json:"schema_version"`
	MatchedCount        int            `json:"matched_count"`
	UnmatchedLeftCount  int            `json:"unmatched_left_count"`
	UnmatchedRightCount int            `json:"unmatched_right_count"`
	Policy              map[string]any `json:"policy" doc:"The effective configuration, defaults filled in."`
}

// MatcherFailedEvent: a matcher step failed.
type MatcherFailedEvent struct {
	RunID     string `json:"run_id"`
	StepIndex int    `json:"step_index"`
	Error     string `json:"error"`
}

// NWayMatcherStartedEvent: an nway_match step started.
type NWayMatcherStartedEvent struct {
	RunID     string         `json:"run_id"`
	StepIndex int            `json:"step_index"`
	LegCounts map[string]int `json:"leg_counts" doc:"The records of each leg, by its key."`
}

// NWayCounts are an nway_match's groups by outcome.
type NWayCounts struct {
	Groups     int `json:"groups"`
	Full       int `json:"full"`
	MissingLeg int `json:"missing_leg"`
	Variance   int `json:"variance"`
	Orphan     int `json:"orphan"`
}

// NWayMatcherCompletedEvent: an nway_match step completed.
type NWayMatcherCompletedEvent struct {
	RunID           string     `json:"run_id"`
	StepIndex       int        `json:"step_index"`
	SchemaVersion   string     `json:"schema_version"`
	Counts          NWayCounts `json:"counts"`
	ResultReference string     `json:"result_reference" doc:"Where the match groups are: /runs/{run_id}/context/matchGroups."`
}

// NWayMatcherFailedEvent: an nway_match step failed.
type NWayMatcherFailedEvent struct {
	RunID     string `json:"run_id"`
	StepIndex int    `json:"step_index"`
	Error     string `json:"error"`
}

// PlaybookRequestListedEvent: a playbook request was listed. Not emitted by this build
// (playbooks do not exist yet): declared as the spec's table gives it.
type PlaybookRequestListedEvent struct {
	RequestID string `json:"request_id"`
	PackageID string `json:"package_id"`
	Key       string `json:"key"`
	Code      string `json:"code"`
	Title     string `json:"title"`
	ListedBy  string `json:"listed_by"`
}

// PlaybookRequestAwaitingAdminEvent: a playbook request awaits an administrator. Not
// emitted by this build.
type PlaybookRequestAwaitingAdminEvent struct {
	RequestID     string  `json:"request_id"`
	PackageID     string  `json:"package_id"`
	Title         string  `json:"title"`
	Code          string  `json:"code"`
	DeadlineHours float64 `json:"deadline_hours"`
}

// PlaybookRequestReturnedEvent: a playbook request was returned. Not emitted by this build.
type PlaybookRequestReturnedEvent struct {
	RequestID string `json:"request_id"`
	Title     string `json:"title"`
	Notes     string `json:"notes"`
	PackageID string `json:"package_id,omitempty"`
}

// WorkflowCreationStatusEvent: a workflow drafted from a description was published, or
// could not be.
type WorkflowCreationStatusEvent struct {
	ProcessID    string `json:"process_id"`
	Status       string `json:"status" enum:"published" doc:"published: the drafted workflow is live."`
	WorkflowID   string `json:"workflow_id,omitempty"`
	WorkflowName string `json:"workflow_name,omitempty"`
	Error        string `json:"error,omitempty"`
}

// GenerationResult is a finished generation's attempts (and errors, when it failed).
type GenerationResult struct {
	Attempts int      `json:"attempts"`
	Errors   []string `json:"errors,omitempty"`
}

// LLMGenerationStatusEvent: a generation (a workflow drafted by the model) changed status.
type LLMGenerationStatusEvent struct {
	GenerationID string                   `json:"generation_id"`
	Status       svctype.GenerationStatus `json:"status"`
	Result       *GenerationResult        `json:"result,omitempty"`
}

// LLMKeyMissingEvent: a model step found no api:llm_api_key in the organization's config.
type LLMKeyMissingEvent struct {
	RunID   string `json:"run_id"`
	Event   string `json:"event" doc:"The step type that needed the key."`
	Message string `json:"message"`
}

// CustomTableDroppedFieldsEvent: a custom-table write carried columns its table does not
// declare; they were dropped.
type CustomTableDroppedFieldsEvent struct {
	RunID     string   `json:"run_id"`
	StepIndex int      `json:"step_index"`
	Table     string   `json:"table"`
	Dropped   []string `json:"dropped" nullable:"false"`
}
