// Package core is svcflow's run kernel: workflows, runs, the executor that advances a run
// one committed step at a time (foreach included), steps that call other systems (intents,
// the I/O pool, the step slot given back), waiting for a run, schedules, definition checks
// and job dispatch. It knows no feature by name. Features plug in through the registry on
// a Core (registry.go): step kinds (Environment), step call hooks, pause kinds, loop modes,
// job handlers, event sinks, step sources, cancel hooks, the secret source, and the
// evaluator's prefix resolvers.
//
// A step commits its output, what its kind wrote in the step's transaction (custom-table
// rows), its events and the run's next position in one transaction. A step that calls another system makes the call outside any transaction
// and outside its worker's step slot, with an idempotency key and a recorded intent, and
// commits only the result (io.go). It must not do I/O of its own beyond its store.
package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
)

// Config assembles a Core.
type Config struct {
	// Store is required.
	Store storage.Store
	// Env holds the step kinds; nil means NewEnvironment() (every built-in).
	Env *Environment
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// After is the clock's timer, time.After when nil: a status wait's deadline
	// (WaitRun, ExecuteAndWait) passes when it fires. A test's clock fires it when moved.
	After func(time.Duration) <-chan time.Time
	// Lease is how long a claimed job stays with its worker without a heartbeat
	// (default 15s): a worker killed mid-run leaves its jobs claimable after at most this.
	Lease time.Duration
	// StepObserver, when set, is told how long each committed unit of run work took (one
	// step, or one foreach element), transaction included: metrics and benchmarks use it.
	StepObserver func(stepType string, d time.Duration)
	// Meter records the core's metrics (runs, step durations) and is what every feature
	// records its own through (Core.Meter); nil records nothing.
	Meter svctype.Meter
	// TracerProvider makes the spans of runs and steps (tracing.go), and features make
	// theirs through it (Core.Tracer); nil traces nothing.
	TracerProvider trace.TracerProvider
	// Slice is how long a worker keeps advancing one run before it hands the run back to
	// the queue (at a step boundary) so that queued runs, of any organization, take their
	// turn (default 100ms). A run that ends within its slice never goes back to the queue.
	Slice time.Duration
	// ChainTime is how long a unit of run work may go on running and committing, in its
	// transaction, the quick steps that follow its first (steps that run wholly inside a
	// transaction: no outside call, pause, loop or read run ahead), bounded by Slice too
	// (default DefaultChainTime). Negative commits every step in a transaction of its own.
	ChainTime time.Duration
	// IOConcurrency is how many outside calls (step calls, webhook deliveries) may be in
	// flight at once in this process (default DefaultIOConcurrency). A call holds no step
	// slot of its worker, so this is much larger than the slots.
	IOConcurrency int
	// IOPerOrg caps the calls in flight of one organization (default DefaultIOPerOrg), so
	// that one organization's slow third party cannot take every place.
	IOPerOrg int
	// CallTimeout bounds one call of an IO half (default DefaultCallTimeout); kinds set
	// their own shorter timeouts (an HTTP action's per-request timeout).
	CallTimeout time.Duration
	// WaitPoll is how often the status of runs that callers wait for is re-read, to catch a
	// change that no notification reported (default 500ms).
	WaitPoll time.Duration
}

// Core runs workflows for many organizations against one store.
type Core struct {
	store storage.Store
	env   *Environment
	eval  *expr.Evaluator
	log   *slog.Logger
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	lease time.Duration
	obs   func(string, time.Duration)
	meter svctype.Meter
	// tracer makes spans when tracing is on (tracing.Enabled), else it is nil.
	tracer trace.Tracer

	defs *defCache
	// states holds the state of runs this process started or handed back, until it
	// claims their job again.
	states *runCache
	slice  time.Duration
	// chainTime bounds a unit's chain of quick steps (chain.go); negative: none.
	chainTime time.Duration
	io        *ioPool
	// callTimeout bounds one call of an IO half.
	callTimeout time.Duration
	waits       waitHub
	waitPoll    time.Duration
	// watchOnce subscribes to status changes of other processes on the first wait,
	// jobsOnce to jobs enqueued by other processes on the first Wakeup.
	watchOnce sync.Once
	jobsOnce  sync.Once

	reg registry

	mu      sync.Mutex
	wakeups []chan struct{}
}

// stateCacheSize and stateCacheBytes bound the run states kept between a start or a
// hand-back and the next claim. At 1,024 states, make bench-runs (3,000 runs started ahead
// of a worker that takes them oldest first) read two runs in three back from the store: a
// burst of starts outgrew the cache and the oldest, claimed next, had been dropped. A small
// run's state is about 2 KiB; the bytes bound keeps large ones from holding memory.
const (
	stateCacheSize  = 16384
	stateCacheBytes = 64 << 20
)

// New returns a core over cfg.Store with nothing registered but cfg.Env's step kinds.
func New(cfg Config) (*Core, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: Config.Store is required")
	}
	e := &Core{store: cfg.Store, env: cfg.Env, log: cfg.Logger, now: cfg.Now, after: cfg.After, lease: cfg.Lease, obs: cfg.StepObserver, meter: cfg.Meter,
		slice: cfg.Slice, chainTime: cfg.ChainTime, waitPoll: cfg.WaitPoll, states: newRunCache(stateCacheSize, stateCacheBytes),
		io: newIOPool(cfg.IOConcurrency, cfg.IOPerOrg), callTimeout: cfg.CallTimeout}
	if e.callTimeout <= 0 {
		e.callTimeout = DefaultCallTimeout
	}
	if e.slice <= 0 {
		e.slice = 100 * time.Millisecond
	}
	if e.chainTime == 0 {
		e.chainTime = DefaultChainTime
	}
	if e.after == nil {
		e.after = time.After
	}
	if e.waitPoll <= 0 {
		e.waitPoll = 500 * time.Millisecond
	}
	if e.env == nil {
		e.env = NewEnvironment()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.lease <= 0 {
		e.lease = 15 * time.Second
	}
	if e.meter == nil {
		e.meter = svctype.NopMeter{}
	}
	if tracing.Enabled(cfg.TracerProvider) {
		e.tracer = cfg.TracerProvider.Tracer(tracing.ScopeName)
	}
	e.eval = expr.New()
	e.defs = newDefCache(1024)
	e.reg = newRegistry()
	return e, nil
}

// Meter returns the meter features record their metrics through.
func (e *Core) Meter() svctype.Meter { return e.meter }

// Tracer returns the tracer features make their spans with, nil when tracing is off: a
// feature checks for nil and then makes no span at all.
func (e *Core) Tracer() trace.Tracer { return e.tracer }

// Store returns the core's store (for embedding programs that want InTx).
func (e *Core) Store() storage.Store { return e.store }

// Environment returns the core's step registry.
func (e *Core) Environment() *Environment { return e.env }

// RegisterStep adds a step kind to the core's environment.
func (e *Core) RegisterStep(kind string, fn svctype.StepFunc) { e.env.RegisterStep(kind, fn) }

// Evaluator returns the expression evaluator, where features register prefix resolvers
// (doc:).
func (e *Core) Evaluator() *expr.Evaluator { return e.eval }

// Lease returns the job lease duration.
func (e *Core) Lease() time.Duration { return e.lease }

// Now returns the core's clock's time.
func (e *Core) Now() time.Time { return e.now() }

// Logger returns the core's logger.
func (e *Core) Logger() *slog.Logger { return e.log }

// Wakeup returns a channel that receives (without blocking the sender) whenever new work
// is enqueued by this engine, so an in-process worker need not wait for its next poll, and
// a function that stops the notifications.
//
// Jobs made claimable by other processes wake it too when the store reports them
// (PostgreSQL LISTEN/NOTIFY); otherwise the worker finds them at its next poll.
func (e *Core) Wakeup() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	e.wakeups = append(e.wakeups, ch)
	e.mu.Unlock()
	e.jobsOnce.Do(func() {
		if w, ok := e.store.(storage.JobWatcher); ok {
			w.WatchJobs(e.Notify)
		}
	})
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.wakeups = slices.DeleteFunc(e.wakeups, func(c chan struct{}) bool { return c == ch })
	}
}

// Notify wakes this process's workers: call it after committing a job that is due now.
func (e *Core) Notify() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ch := range e.wakeups {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

var orgPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// ValidOrgID reports whether id can name an organization: 1-128 characters of
// [A-Za-z0-9_.:-].
func ValidOrgID(id string) bool { return orgPattern.MatchString(id) }

// CheckOrg is ErrInvalidOrg when orgID cannot name an organization: every call that takes
// an org id checks it first.
func CheckOrg(orgID string) error {
	if !ValidOrgID(orgID) {
		return ErrInvalidOrg
	}
	return nil
}

// StorableTime reports whether a time given by a caller can be stored and answered back:
// between 1970 and 9999 (a year past 9999 has no RFC 3339 form, and PostgreSQL refuses
// year 0).
func StorableTime(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1970 && y <= 9999
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return json.RawMessage(buf.Bytes())
}
