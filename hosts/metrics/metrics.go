// Package metrics exports what svcflow counts in Prometheus's text format: the engine's
// metrics (engine.Metrics: runs, step durations, webhook attempts, circuits, model tokens),
// the jobs table's state read at each scrape, and the hosts' own (the gateway's rate-limited
// requests). It implements svctype.Meter over prometheus/client_golang.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svcflow/svcflow/engine/svctype"
)

// JobStatser is the store's count of jobs by state (store.Store.JobStats).
type JobStatser interface {
	JobStats(ctx context.Context) (map[string]int, error)
}

// Registry is a Prometheus registry with every declared metric registered: the engine's
// and the hosts'. It is a svctype.Meter.
type Registry struct {
	reg        *prometheus.Registry
	counters   map[*svctype.MetricDesc]*prometheus.CounterVec
	gauges     map[*svctype.MetricDesc]*prometheus.GaugeVec
	histograms map[*svctype.MetricDesc]*prometheus.HistogramVec
	log        *slog.Logger
}

var _ svctype.Meter = (*Registry)(nil)

// New registers descs (each once; engine.Metrics() and the hosts' declarations), Go's
// runtime and process collectors, and, when jobs is not nil, the jobs table's state
// (svcflow_jobs{state}), read at each scrape with a 5 s bound, and on SQLite the time its
// writer was held (svcflow_sqlite_writer_busy_seconds_total).
func New(log *slog.Logger, jobs JobStatser, descs ...*svctype.MetricDesc) *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), log: log,
		counters:   map[*svctype.MetricDesc]*prometheus.CounterVec{},
		gauges:     map[*svctype.MetricDesc]*prometheus.GaugeVec{},
		histograms: map[*svctype.MetricDesc]*prometheus.HistogramVec{}}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, d := range descs {
		switch d.Kind {
		case svctype.Counter:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
			r.reg.MustRegister(v)
			r.counters[d] = v
		case svctype.Gauge:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
			r.reg.MustRegister(v)
			r.gauges[d] = v
		case svctype.Histogram:
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help, Buckets: d.Buckets}, d.Labels)
			r.reg.MustRegister(v)
			r.histograms[d] = v
		}
	}
	if jobs != nil {
		r.reg.MustRegister(&jobsCollector{jobs: jobs, log: log})
	}
	if w, ok := jobs.(WriterBusier); ok {
		if _, sqlite := w.WriterBusy(); sqlite {
			r.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "svcflow_sqlite_writer_busy_seconds_total",
				Help: "Seconds SQLite's one writer was held (transactions and claims); its rate near 1 means writes queue for it.",
			}, func() float64 {
				busy, _ := w.WriterBusy()
				return busy.Seconds()
			}))
		}
	}
	return r
}

// WriterBusier is the store's time its SQLite writer was held (store.Store.WriterBusy);
// ok is false on PostgreSQL, where the metric is not registered.
type WriterBusier interface {
	WriterBusy() (busy time.Duration, ok bool)
}

// Record records one value of m; a metric that was not declared to New, or label values
// that do not fit it, are dropped (and logged at debug level), never a panic.
func (r *Registry) Record(m *svctype.MetricDesc, v float64, labels ...string) {
	var err error
	switch m.Kind {
	case svctype.Counter:
		if c, ok := r.counters[m]; ok {
			var ctr prometheus.Counter
			if ctr, err = c.GetMetricWithLabelValues(labels...); err == nil && v >= 0 {
				ctr.Add(v)
			}
			break
		}
		err = errUndeclared
	case svctype.Gauge:
		if g, ok := r.gauges[m]; ok {
			var gg prometheus.Gauge
			if gg, err = g.GetMetricWithLabelValues(labels...); err == nil {
				gg.Set(v)
			}
			break
		}
		err = errUndeclared
	case svctype.Histogram:
		if h, ok := r.histograms[m]; ok {
			var o prometheus.Observer
			if o, err = h.GetMetricWithLabelValues(labels...); err == nil {
				o.Observe(v)
			}
			break
		}
		err = errUndeclared
	}
	if err != nil && r.log != nil {
		r.log.Debug("metric dropped", "metric", m.Name, "err", err)
	}
}

type undeclared struct{}

func (undeclared) Error() string { return "not declared to metrics.New" }

var errUndeclared error = undeclared{}

// Handler serves the registry in Prometheus's text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg, ErrorHandling: promhttp.ContinueOnError})
}

// jobsCollector reads the jobs table's state at each scrape.
type jobsCollector struct {
	jobs JobStatser
	log  *slog.Logger
}

var jobsDesc = prometheus.NewDesc("svcflow_jobs", "Jobs in the jobs table, by state: queued (due), scheduled (not yet due), leased, lease_expired (held by a worker that stopped renewing it).", []string{"state"}, nil)

func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stats, err := c.jobs.JobStats(ctx)
	if err != nil {
		if c.log != nil {
			c.log.Warn("metrics: jobs not counted", "err", err)
		}
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	for _, state := range []string{"queued", "scheduled", "leased", "lease_expired"} {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(stats[state]), state)
	}
}
