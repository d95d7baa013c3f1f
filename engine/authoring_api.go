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
)

// Process studio errors.
var (
	ErrBundlePublished     = authoring.ErrAlreadyPublished
	ErrProcessNotPublished = authoring.ErrNotPublished
	ErrNoDraftingModelKey  = authoring.ErrNoModelKey
)
