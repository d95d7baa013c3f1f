package svctype

// Metrics: what the engine counts for an operator. Each feature declares its own metrics
// (a MetricDesc, like an event in the catalogue) and records them through the Meter it is
// given; the host decides where they go (hosts/metrics: Prometheus). The engine itself
// imports no metrics library.

// MetricKind says how a metric's values are kept.
type MetricKind int

const (
	// Counter: Record adds the value (never negative).
	Counter MetricKind = iota + 1
	// Gauge: Record sets the value.
	Gauge
	// Histogram: Record observes the value (seconds, for durations).
	Histogram
)

// MetricDesc declares one metric: its full name (svcflow_...), help text, kind, label
// names, and a histogram's bucket bounds (nil: the host's default).
type MetricDesc struct {
	Name    string
	Help    string
	Kind    MetricKind
	Labels  []string
	Buckets []float64
}

// Meter records metrics. Record gives one value of m with label values in m.Labels'
// order. It must be cheap and safe for concurrent use, and it never fails: a meter that
// cannot record drops the value.
type Meter interface {
	Record(m *MetricDesc, v float64, labels ...string)
}

// NopMeter records nothing: the default.
type NopMeter struct{}

// Record does nothing.
func (NopMeter) Record(*MetricDesc, float64, ...string) {}
