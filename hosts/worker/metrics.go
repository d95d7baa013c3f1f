package worker

import "github.com/svcflow/svcflow/engine/svctype"

// MetricClaims counts a worker's claims by what they found: "jobs" (at least one) or
// "empty". Empty claims cost the database a query each; many of them per job say the
// workers poll or are woken more than there is work.
var MetricClaims = &svctype.MetricDesc{Name: "svcflow_worker_claims_total", Kind: svctype.Counter,
	Help: "Claims of jobs by this process's worker, by outcome: jobs (at least one claimed) or empty.", Labels: []string{"outcome"}}

// MetricJobsClaimed counts the jobs this process's worker claimed.
var MetricJobsClaimed = &svctype.MetricDesc{Name: "svcflow_worker_jobs_claimed_total", Kind: svctype.Counter,
	Help: "Jobs claimed by this process's worker."}

// Metrics lists the worker's metrics, for the host to register beside engine.Metrics().
func Metrics() []*svctype.MetricDesc { return []*svctype.MetricDesc{MetricClaims, MetricJobsClaimed} }
