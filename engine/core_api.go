package engine

import (
	"context"
	"encoding/json"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/storage"
)

// The run core's types and limits, by their engine names (engine/core documents each).
type (
	WorkflowInput  = core.WorkflowInput
	ExecuteOptions = core.ExecuteOptions
	Actor          = core.Actor
	StepSummary    = core.StepSummary
	StatusOptions  = core.StatusOptions
	RunStatusDoc   = core.RunStatusDoc
	ListedRun      = core.ListedRun
	Evidence       = core.Evidence
	EvidenceEffect = core.EvidenceEffect
	ContextValue   = core.ContextValue
	ContextStream  = core.ContextStream
	Environment    = core.Environment
	Slot           = core.Slot
)

const (
	IdempotencyWindow    = core.IdempotencyWindow
	EvidenceExceptions   = core.EvidenceExceptions
	ClaimBatch           = core.ClaimBatch
	MaxAttempts          = core.MaxAttempts
	MaxCallTries         = core.MaxCallTries
	DefaultIOConcurrency = core.DefaultIOConcurrency
	DefaultIOPerOrg      = core.DefaultIOPerOrg
	DefaultCallTimeout   = core.DefaultCallTimeout
	MaxWait              = core.MaxWait
	DefaultContextLimit  = core.DefaultContextLimit
	MaxContextLimit      = core.MaxContextLimit
	EventValueNodes      = core.EventValueNodes
	LargeValueBytes      = core.LargeValueBytes
	PartBytes            = core.PartBytes
	StreamPartsRead      = core.StreamPartsRead
	DefaultMaxIterations = core.DefaultMaxIterations
	MaxIterations        = core.MaxIterations
	ForeachBatch         = core.ForeachBatch
	ForeachBatchTime     = core.ForeachBatchTime
	LoopStep             = core.LoopStep
	EventRunStarted      = core.EventRunStarted
	EventRunCompleted    = core.EventRunCompleted
	EventRunFailed       = core.EventRunFailed
	EventRunCancelled    = core.EventRunCancelled
	EventStepStarted     = core.EventStepStarted
	EventStepDone        = core.EventStepDone
	EventStepFailed      = core.EventStepFailed
	EventLoopStarted     = core.EventLoopStarted
	EventLoopFailed      = core.EventLoopFailed
)

// NewEnvironment returns an environment with every built-in step kind registered.
func NewEnvironment() *Environment { return core.NewEnvironment() }

// NewEmptyEnvironment returns an environment with no step kinds at all.
func NewEmptyEnvironment() *Environment { return core.NewEmptyEnvironment() }

// WithSlot returns ctx carrying the slot a worker runs a job in.
func WithSlot(ctx context.Context, s Slot) context.Context { return core.WithSlot(ctx, s) }

// NextClaim is the claim a worker makes with the commit that ends a job's run.
type NextClaim = storage.NextClaim

// WithNextClaim returns ctx carrying the claim a worker makes with its job's last commit.
func WithNextClaim(ctx context.Context, nc *NextClaim) context.Context {
	return core.WithNextClaim(ctx, nc)
}

// DefinitionSchema returns the JSON Schema that workflow definitions are validated with.
func DefinitionSchema() json.RawMessage { return core.DefinitionSchema() }

// DefinitionSchemaPath is where the hosts serve DefinitionSchema, and the schema's $id.
const DefinitionSchemaPath = core.DefinitionSchemaPath
