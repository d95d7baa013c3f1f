package core

import "github.com/svcflow/svcflow/engine/svctype"

// The run core's metrics (svctype.Meter). Recorded after the commit they count, by the
// process that made it.
var (
	// MetricRunsStarted counts runs started (executed, scheduled, or by an external form).
	MetricRunsStarted = &svctype.MetricDesc{Name: "svcflow_runs_started_total", Kind: svctype.Counter,
		Help: "Runs started."}
	// MetricRunsLeft counts runs leaving status running, by the status they entered:
	// completed, failed, cancelled, paused, rejected, condition_not_met.
	MetricRunsLeft = &svctype.MetricDesc{Name: "svcflow_runs_left_running_total", Kind: svctype.Counter,
		Labels: []string{"status"}, Help: "Runs that left status running, by the status they entered."}
	// MetricStepSeconds is how long each committed unit of run work took (one step, or one
	// foreach element or batch), transaction included.
	MetricStepSeconds = &svctype.MetricDesc{Name: "svcflow_step_duration_seconds", Kind: svctype.Histogram,
		Labels: []string{"step_type"}, Help: "Duration of committed units of run work (a step, a foreach batch), transaction included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}
)

// Metrics lists the core's metric declarations.
func Metrics() []*svctype.MetricDesc {
	return []*svctype.MetricDesc{MetricRunsStarted, MetricRunsLeft, MetricStepSeconds}
}
