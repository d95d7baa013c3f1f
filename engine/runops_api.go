package engine

import "github.com/svcflow/svcflow/engine/runops"

// Retries and run operations (engine/runops), by their engine names.
type (
	RetryPlan           = runops.RetryPlan
	RunOperationInput   = runops.OperationInput
	RunOperationPayload = runops.OperationPayload
)

const (
	EventRunRetried   = runops.EventRunRetried
	JobRunOperation   = runops.JobRunOperation
	RunOperationBatch = runops.OperationBatch
	MaxRetryReason    = runops.MaxReason
)

// RunOperationFilter decodes the runs filter a run operation keeps.
var RunOperationFilter = runops.OperationFilter
