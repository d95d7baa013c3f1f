package svctype

import (
	"encoding/json"
	"time"
)

// RunRetry links a run to the failed run it retries: the new run (RunID) started at the
// failed run's step FromStep, with the failed run's workflow version, input and committed
// work. A failed run is retried at most once; a retry that fails is retried in its turn.
type RunRetry struct {
	OrgID     string    `json:"-"`
	RunID     string    `json:"run_id"`
	RetryOf   string    `json:"retry_of"`
	FromStep  int       `json:"from_step"`
	Reason    string    `json:"reason"`
	Actor     Actor     `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
}

// RunOperationAction is what a run operation does to each run it matches.
type RunOperationAction string

// Run operation actions.
const (
	RunOperationCancel RunOperationAction = "cancel"
	RunOperationRetry  RunOperationAction = "retry"
)

// RunOperationStatus is where a run operation stands.
type RunOperationStatus string

// Run operation statuses: pending until a worker counts its runs, running while it works
// through them, completed once every matched run was acted on or skipped.
const (
	RunOperationPending   RunOperationStatus = "pending"
	RunOperationRunning   RunOperationStatus = "running"
	RunOperationCompleted RunOperationStatus = "completed"
)

// RunOperationFilter is the runs a run operation matches: the fields of the runs listing's
// filter it was given, as JSON (kept as sent, so a filter field added to the listing later
// needs no schema change).
type RunOperationFilter = json.RawMessage

// RunOperationError is one run an operation could not act on, and why.
type RunOperationError struct {
	RunID   string `json:"run_id"`
	Message string `json:"message"`
}

// RunOperation is an action (cancel, retry) taken on every run that matched a filter when
// it was created, in batches by a worker. Matched is known once the worker counted the
// runs; Done runs were acted on, Skipped runs needed nothing (already ended, already
// retried), Failed runs refused (Errors says why, the first MaxRunOperationErrors of them).
// Cursor is the worker's place in the listing.
type RunOperation struct {
	ID        string              `json:"id"`
	OrgID     string              `json:"-"`
	Action    RunOperationAction  `json:"action"`
	Filter    RunOperationFilter  `json:"filter"`
	Reason    string              `json:"reason"`
	Actor     Actor               `json:"actor"`
	Status    RunOperationStatus  `json:"status"`
	Matched   int                 `json:"matched"`
	Done      int                 `json:"done"`
	Skipped   int                 `json:"skipped"`
	Failed    int                 `json:"failed"`
	Errors    []RunOperationError `json:"errors"`
	Cursor    string              `json:"-"`
	CreatedAt time.Time           `json:"created_at"`
	UpdatedAt time.Time           `json:"updated_at"`
	// FinishedAt is set when the operation completed.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// MaxRunOperationErrors bounds the errors a run operation keeps; Failed counts them all.
const MaxRunOperationErrors = 100

// PlannedCall is an outside call a step will make when it runs: what a retry's plan lists
// so that a person sees its blast radius before asking for it. Kind is http, database,
// model, agent, email, webhook or outside (a call of a kind the plan cannot describe
// further); Method and Host name an HTTP call's target (Host may be an orgconfig:
// reference or a template, as the definition writes it).
type PlannedCall struct {
	Kind   string `json:"kind"`
	Method string `json:"method,omitempty"`
	Host   string `json:"host,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// PlannedStep is a step a retry will run again: Path is its place in the definition
// ("3", "3/steps/0" inside a loop, "3/onFalse" its branch), Calls the outside calls it
// makes, Pauses whether it waits for a person, and for a foreach, FromElement the first
// element run again (those before it are reused).
type PlannedStep struct {
	Path        string        `json:"path"`
	Index       int           `json:"index"`
	Type        string        `json:"type"`
	Calls       []PlannedCall `json:"calls"`
	Pauses      bool          `json:"pauses,omitempty"`
	FromElement *int          `json:"from_element,omitempty"`
}
