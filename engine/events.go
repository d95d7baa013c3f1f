package engine

// Events this package emits (spec section 6). Payload fields are the spec's, exactly.
const (
	EventRunStarted   = "workflow_run_started"   // run_id, workflow_id, input_payload
	EventRunCompleted = "workflow_run_completed" // run_id, workflow_id, result
	EventRunFailed    = "workflow_run_failed"    // run_id, workflow_id, reason, context
	EventRunCancelled = "workflow_run_cancelled" // run_id, workflow_id, reason, actor
	EventStepStarted  = "step.started"           // run_id, step_index, step_type
	EventStepDone     = "step.completed"         // run_id, step_index
	EventStepFailed   = "step.failed"            // run_id, step_index, error {message}
	EventLoopStarted  = "loop.started"           // run_id, step_id, step_index, mode, total_items
	EventLoopFailed   = "loop.failed"            // run_id, step_id, step_index, mode, error
)
