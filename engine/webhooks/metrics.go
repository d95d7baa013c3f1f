package webhooks

import (
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Webhook delivery metrics (svctype.Meter), recorded in the transaction that records the
// attempt or the circuit's change.
var (
	// MetricAttempts counts delivery attempts by outcome: succeeded, retry, failed, skipped
	// (an open circuit).
	MetricAttempts = &svctype.MetricDesc{Name: "svcflow_webhook_attempts_total", Kind: svctype.Counter,
		Labels: []string{"outcome"}, Help: "Webhook delivery attempts, by outcome (succeeded, retry, failed, skipped by an open circuit)."}
	// MetricCircuitTransitions counts target circuits entering a state: open, half_open,
	// closed.
	MetricCircuitTransitions = &svctype.MetricDesc{Name: "svcflow_webhook_circuit_transitions_total", Kind: svctype.Counter,
		Labels: []string{"state"}, Help: "Webhook target circuits entering a state (open, half_open, closed)."}
)

// Metrics lists the webhooks' metric declarations.
func Metrics() []*svctype.MetricDesc {
	return []*svctype.MetricDesc{MetricAttempts, MetricCircuitTransitions}
}

func circuitStateName(s events.CircuitState) string {
	if s == "" {
		return string(events.CircuitClosed)
	}
	return string(s)
}
