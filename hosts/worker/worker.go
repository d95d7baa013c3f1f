// Package worker claims jobs from the engine's jobs table and runs them: run steps and
// schedules now, and later timers and webhook deliveries. Many workers, in one process or
// many, share one database; a job is leased to one worker at a time and its lease is kept
// alive by a heartbeat, so a worker that dies leaves its jobs to others within one lease.
// A queued job costs nothing here: a goroutine exists only for a job being worked.
package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Options tunes a Worker.
type Options struct {
	// Concurrency is how many jobs run at once (default 4): the step slots. A job whose step
	// has a call in flight (engine.Config.IOConcurrency) gives its slot back meanwhile.
	Concurrency int
	// Poll is the longest wait between claims when idle (default 250ms); jobs enqueued by
	// the same process wake the worker at once.
	Poll   time.Duration
	Logger *slog.Logger
}

// Worker runs jobs for one engine.
type Worker struct {
	eng  *engine.Engine
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	inflight map[int64]svctype.Job
}

// New returns a worker; Run starts it.
func New(eng *engine.Engine, opts Options) *Worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Worker{eng: eng, opts: opts, log: opts.Logger, inflight: map[int64]svctype.Job{}}
}

// Run claims and runs jobs until ctx is done, then drains: it claims nothing more, lets
// every job in progress finish the step it is in (its run is released for the next worker
// at the step boundary) and returns nil once all have stopped.
func (w *Worker) Run(ctx context.Context) error {
	slots := make(chan struct{}, w.opts.Concurrency)
	wake, unsubscribe := w.eng.Wakeup()
	defer unsubscribe()
	var wg sync.WaitGroup
	hbCtx, stopHeartbeat := context.WithCancel(context.WithoutCancel(ctx))
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); w.heartbeat(hbCtx) }()
	defer func() {
		wg.Wait()
		stopHeartbeat()
		<-hbDone
	}()

	// freed is signalled when a job ends, so a full worker claims again at once.
	freed := make(chan struct{}, 1)
	// quiet is signalled instead when the job's last commit asked for the slot's next job
	// and the database had none: the worker claims then only if it was woken (or its poll
	// came) while it had no slot to claim for, since that claim found nothing a moment ago.
	quiet := make(chan struct{}, 1)
	// A job that ends its run claims its slot's next job with its last commit
	// (engine.NextClaim, PostgreSQL): one job, for the one slot, none once draining, and
	// only while jobs are likely waiting (backlog): the last claim took all it asked for,
	// or a wake-up came while no slot was free. Otherwise the claim would mostly find
	// nothing, and cost the server its work in every run's last statement.
	var backlog atomic.Bool
	wantNext := func() int {
		if ctx.Err() != nil || !backlog.Load() {
			return 0
		}
		return 1
	}
	// run works a job in a slot the caller holds (and counted in wg), then the jobs its
	// commits claimed for the slot.
	run := func(job svctype.Job) {
		w.track(job, true)
		go func() {
			foundNone := false
			defer func() {
				w.track(job, false)
				<-slots
				wg.Done()
				signal := freed
				if foundNone {
					signal = quiet
				}
				select {
				case signal <- struct{}{}:
				default:
				}
			}()
			for {
				next := &engine.NextClaim{Want: wantNext, Lease: w.eng.Lease()}
				jobCtx := engine.WithNextClaim(engine.WithSlot(ctx, jobSlot{slots: slots, freed: freed}), next)
				if err := w.eng.RunJob(jobCtx, &job); err != nil {
					// The lease lapses and the job is claimed again.
					w.log.Error("job failed; it will be retried after its lease", "job_id", job.ID, "kind", job.Kind, "run_id", job.RunID, "err", err)
				}
				if next.Tried {
					w.recordClaim(len(next.Jobs))
					backlog.Store(len(next.Jobs) > 0)
				}
				if len(next.Jobs) == 0 {
					foundNone = next.Tried
					return
				}
				// Leased to this worker by a committed statement: run, or (draining) handed
				// back by RunJob at once.
				w.track(job, false)
				job = next.Jobs[0]
				w.track(job, true)
			}
		}()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	// missed: a wake-up or the poll came while no slot was free.
	missed := false
	for {
		select {
		case <-ctx.Done():
			w.log.Info("worker draining", "in_flight", w.inflightCount())
			return nil
		case <-timer.C:
		case <-wake:
		case <-freed:
		case <-quiet:
			if !missed {
				continue
			}
		}
		free := w.opts.Concurrency - len(slots)
		missed = free <= 0
		if missed {
			backlog.Store(true)
		}
		claimed := 0
		if free > 0 {
			jobs, err := w.eng.Store().ClaimJobs(context.WithoutCancel(ctx), free, w.eng.Lease())
			if err != nil {
				w.log.Error("claiming jobs", "err", err)
			}
			claimed = len(jobs)
			if err == nil {
				w.recordClaim(claimed)
				backlog.Store(claimed == free)
			}
			for _, job := range jobs {
				slots <- struct{}{}
				wg.Add(1)
				run(job)
			}
		}
		switch {
		case claimed > 0 && claimed == free:
			resetTimer(timer, 0) // more may be waiting
		default:
			resetTimer(timer, w.opts.Poll)
		}
	}
}

// jobSlot is a job's place among the worker's Concurrency slots. The engine releases it
// while the job's step has a call in flight (an HTTP action, a model call), so the worker
// claims other jobs meanwhile, and takes one again, waiting its turn, to commit the result.
type jobSlot struct {
	slots chan struct{}
	freed chan struct{}
}

func (s jobSlot) Release() {
	<-s.slots
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

func (s jobSlot) Reacquire() { s.slots <- struct{}{} }

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// recordClaim counts a claim that leased n jobs.
func (w *Worker) recordClaim(n int) {
	outcome := "jobs"
	if n == 0 {
		outcome = "empty"
	}
	w.eng.Meter().Record(MetricClaims, 1, outcome)
	w.eng.Meter().Record(MetricJobsClaimed, float64(n))
}

func (w *Worker) track(job svctype.Job, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if on {
		w.inflight[job.ID] = job
	} else {
		delete(w.inflight, job.ID)
	}
}

func (w *Worker) inflightCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
}

// heartbeat extends the leases of jobs in progress every third of a lease.
func (w *Worker) heartbeat(ctx context.Context) {
	t := time.NewTicker(w.eng.Lease() / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		jobs := make([]svctype.Job, 0, len(w.inflight))
		for _, j := range w.inflight {
			jobs = append(jobs, j)
		}
		w.mu.Unlock()
		if len(jobs) == 0 {
			continue
		}
		if err := w.eng.Store().ExtendLeases(ctx, jobs, w.eng.Lease()); err != nil {
			w.log.Warn("extending leases", "err", err)
		}
	}
}
