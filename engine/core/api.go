package core

import (
	"encoding/json"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// WorkflowInput is the body of a workflow create or update.
type WorkflowInput struct {
	Name       string          `json:"name"`
	Definition json.RawMessage `json:"definition"`
}

// ExecuteOptions tunes Execute.
type ExecuteOptions struct {
	// IdempotencyKey, when set, makes a retry within IdempotencyWindow return the run the
	// first call started instead of starting another; the key repeated with another
	// workflow or input is ErrIdempotencyKeyReused.
	IdempotencyKey string
	// WorkflowVersion, when above 0, runs that version of the workflow (one it had and
	// still keeps: ErrNotFound otherwise) instead of its current one.
	WorkflowVersion int
	// started is called inside the transaction that starts a new run, before its commit
	// (ExecuteAndWait registers its waiter there); again if the transaction runs again.
	started func(*svctype.Run)
}

// IdempotencyWindow is how long an Idempotency-Key names its run.
const IdempotencyWindow = 24 * time.Hour

// Actor is who did something: {type: api|user|system, id}.
type Actor = svctype.Actor

// StepSummary is one entry of a run status document's steps.
type StepSummary struct {
	Index  int                `json:"index"`
	Type   string             `json:"type"`
	Status svctype.StepStatus `json:"status"`
}

// StatusOptions tunes RunStatusWith.
type StatusOptions struct {
	// OmitContext leaves the context out of the document (Context is nil) and does not
	// read it: a poller that wants the status of a run with a large context.
	OmitContext bool
}

// RunStatusDoc is GET /runs/:runId/status. Context is nil, and absent from the JSON, when
// StatusOptions.OmitContext asked so.
type RunStatusDoc struct {
	ID              string            `json:"id"`
	Status          svctype.RunStatus `json:"status"`
	WorkflowID      string            `json:"workflow_id"`
	WorkflowVersion int               `json:"workflow_version"`
	Reason          string            `json:"reason,omitempty"`
	Context         map[string]any    `json:"context,omitzero"`
	Steps           []StepSummary     `json:"steps"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	FinishedAt      *time.Time        `json:"finished_at,omitempty"`
}

// Evidence is GET /runs/:runId/evidence: the durable record of a run.
type Evidence struct {
	RunID           string               `json:"run_id"`
	WorkflowID      string               `json:"workflow_id"`
	WorkflowVersion int                  `json:"workflow_version"`
	Status          svctype.RunStatus    `json:"status"`
	Reason          string               `json:"reason,omitempty"`
	Input           json.RawMessage      `json:"input"`
	Steps           []svctype.StepRecord `json:"steps"`
	// Effects lists every step's effects in the order they happened.
	Effects   []EvidenceEffect   `json:"effects"`
	Decisions []svctype.Decision `json:"decisions"`
	// Counts: steps by status, effects, and for a run that matched (nway_match) its group
	// counts (match_groups, match_full, ...) and exceptions.
	Counts map[string]int `json:"counts"`
	// Exceptions are the run's non-full match results (matchGroupExceptions), the first
	// EvidenceExceptions of them; counts.exceptions says how many there are.
	Exceptions []json.RawMessage `json:"exceptions"`
	// Retry says, for a run that retries a failed one, which run, from which step, why
	// and who asked; RetriedBy, for a failed run that was retried, the run that retries it.
	Retry     *svctype.RunRetry `json:"retry,omitempty"`
	RetriedBy *svctype.RunRetry `json:"retried_by,omitempty"`
}

// EvidenceExceptions bounds the exceptions an evidence document lists.
const EvidenceExceptions = 100

// EvidenceEffect is an effect with the step that made it.
type EvidenceEffect struct {
	StepIndex int `json:"step_index"`
	svctype.Effect
}
