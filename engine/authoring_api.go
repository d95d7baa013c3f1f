package engine

import "github.com/svcflow/svcflow/engine/authoring"

// The process studio (engine/authoring).
type (
	// Compose is a compose request of a process's next bundle.
	Compose = authoring.Compose
	// PublishResult is what a publication did.
	PublishResult = authoring.Published
	// DSL is a workflow bundle document.
	DSL = authoring.DSL
	// LLMOptions are a drafting request's model options.
	LLMOptions = authoring.LLMOptions
	// WorkflowOwnedError refuses deleting a workflow a process publishes (an ErrConflict).
	WorkflowOwnedError = authoring.WorkflowOwnedError
	// FromPrompt is a create-from-prompt request; CreatedFromPrompt what it made.
	FromPrompt        = authoring.FromPrompt
	CreatedFromPrompt = authoring.CreatedFromPrompt
	// DraftFailedError is a drafted bundle that did not validate, twice: nothing was
	// created. Its Problems are "pointer: message" lines.
	DraftFailedError = authoring.ErrDraftFailed
)

// Process studio errors.
var (
	ErrBundlePublished     = authoring.ErrAlreadyPublished
	ErrProcessNotPublished = authoring.ErrNotPublished
	ErrNoDraftingModelKey  = authoring.ErrNoModelKey
)
