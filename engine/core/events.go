package core

import "github.com/svcflow/svcflow/engine/events"

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

// fillStepFields adds to the payload of an event a step emits the fields the engine knows
// (run_id, step_index, error) where the step left them out, but only those the event's
// catalogue entry lists: llm_key_missing carries run_id and no step_index. An event the
// catalogue does not know (a registered kind's own) gets them all.
func fillStepFields(event string, payload, known map[string]any) {
	spec, inCatalogue := events.Lookup(event)
	for k, v := range known {
		if _, set := payload[k]; set || (inCatalogue && !lists(spec, k)) {
			continue
		}
		payload[k] = v
	}
}

// lists reports whether one of spec's field sets names field.
func lists(spec *events.Spec, field string) bool {
	for _, fields := range append([][]events.Field{spec.Fields}, spec.Variants...) {
		for _, f := range fields {
			if f.Name == field {
				return true
			}
		}
	}
	return false
}
