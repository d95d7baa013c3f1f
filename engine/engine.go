// Package engine is svcflow's runtime as a library: workflows, runs, the executor that
// advances a run one committed step at a time, and the registry of step kinds. It declares
// the storage it needs (Store) and never speaks HTTP to its callers; hosts/ wraps it.
//
// A step commits its output, its table writes, its events and the run's next position in one
// transaction. A step that calls another system (a registered http, db or llm action, a
// kind with an IO half) makes the call outside any transaction and outside its worker's
// step slot, with an idempotency key and a recorded intent, and commits only the result
// (io.go). Organization secrets (org config) are resolved only into such calls.
package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/agent"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

// Config assembles an Engine.
type Config struct {
	// Store is required.
	Store Store
	// Env holds the step kinds; nil means NewEnvironment() (every built-in).
	Env *Environment
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Lease is how long a claimed job stays with its worker without a heartbeat
	// (default 15s): a worker killed mid-run leaves its jobs claimable after at most this.
	Lease time.Duration
	// Blobs keeps document content; nil keeps it in the database (table document_blobs),
	// written in the same transaction as its version row. documents.NewDirBlobs(dir) keeps
	// it in a directory instead.
	Blobs documents.BlobStore
	// StepObserver, when set, is told how long each committed unit of run work took (one
	// step, or one foreach element), transaction included: metrics and benchmarks use it.
	StepObserver func(stepType string, d time.Duration)
	// Slice is how long a worker keeps advancing one run before it hands the run back to
	// the queue (at a step boundary) so that queued runs, of any organization, take their
	// turn (default 100ms). A run that ends within its slice never goes back to the queue.
	Slice time.Duration
	// IOConcurrency is how many calls of steps' IO halves (HTTP actions, queries, model
	// calls) may be in flight at once in this process (default DefaultIOConcurrency). A call
	// holds no step slot of its worker, so this is much larger than the slots.
	IOConcurrency int
	// IOPerOrg caps the calls in flight of one organization (default DefaultIOPerOrg), so
	// that one organization's slow third party cannot take every place.
	IOPerOrg int
	// CallTimeout bounds one call of an IO half (default DefaultCallTimeout); kinds set
	// their own shorter timeouts (an HTTP action's per-request timeout).
	CallTimeout time.Duration
	// DeliveryTimeout bounds one webhook delivery attempt (default events.ResponseTimeout,
	// the spec's 10 s): a 2xx must arrive within it. Tests shorten it.
	DeliveryTimeout time.Duration
	// AllowPrivateTargets lets actions reach loopback, private, link-local and metadata
	// addresses (and local databases); off, such a call fails with target_not_allowed. For
	// single-tenant deployments and tests only.
	AllowPrivateTargets bool
	// ModelFactory builds the model client the llm action calls, from the organization's
	// api:llm_base_url and api:llm_api_key and the guarded HTTP client; nil means the
	// OpenAI-compatible client of agent/llm.
	ModelFactory func(baseURL, apiKey string, hc *http.Client) (agent.Model, error)
	// WaitPoll is how often the status of runs that callers wait for is re-read, to catch a
	// change that no notification reported (default 500ms).
	WaitPoll time.Duration
	// Keyring seals and opens org config values (secrets.NewKeyring, secrets.OpenKeyring);
	// nil leaves org config unavailable: its calls fail with secrets.ErrNoMasterKey.
	Keyring *secrets.Keyring
	// OAuth configures OAuth connections and the built-in OAuth tools (oauth.go); the zero
	// value uses the real providers.
	OAuth OAuthOptions
}

// Engine runs workflows for many organizations against one Store.
type Engine struct {
	store Store
	env   *Environment
	eval  *expr.Evaluator
	log   *slog.Logger
	now   func() time.Time
	lease time.Duration
	obs   func(string, time.Duration)
	blobs documents.BlobStore
	keys  *secrets.Keyring
	oauth *oauthService // OAuth connections and tools (oauth.go)

	defs    *defCache
	tables  tableCache
	actions actionCache // registered actions runs looked up (actions.go)
	// webhooks caches each organization's webhook targets (webhooks.go); resolve, when
	// set, replaces the name lookup of a target's host (tests).
	webhooks webhookCache
	resolve  func(ctx context.Context, host string) ([]netip.Addr, error)
	// states holds the state of runs this process started or handed back, until it
	// claims their job again.
	states *runCache
	slice  time.Duration
	io     *ioPool
	// callTimeout bounds one call of an IO half.
	callTimeout time.Duration
	// catchAlls caches each organization's catch-all webhook address (deliveries.go).
	catchAlls catchAllCache
	// deliveryTimeout bounds one delivery attempt (delivery_send.go).
	deliveryTimeout time.Duration
	// allowPrivate and out: how actions reach other systems (actionrun.go).
	allowPrivate bool
	out          outside
	// secrets returns an org config value in plaintext, for IO halves (StepCall.Secret).
	secrets  func(ctx context.Context, orgID, key string) (string, error)
	waits    waitHub
	waitPoll time.Duration
	// watchOnce subscribes to status changes of other processes on the first wait,
	// jobsOnce to jobs enqueued by other processes on the first Wakeup.
	watchOnce sync.Once
	jobsOnce  sync.Once
	// jobHandlers run job kinds other than run steps and schedules (document expiry, and
	// later deliveries and timers); features register theirs in New.
	jobHandlers map[string]func(ctx context.Context, job *svctype.Job) error

	mu      sync.Mutex
	wakeups []chan struct{}
}

// stateCacheSize bounds the run states kept between a hand-back and the next claim.
const stateCacheSize = 1024

// New returns an engine over cfg.Store.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: Config.Store is required")
	}
	e := &Engine{store: cfg.Store, env: cfg.Env, log: cfg.Logger, now: cfg.Now, lease: cfg.Lease, obs: cfg.StepObserver, blobs: cfg.Blobs, keys: cfg.Keyring,
		slice: cfg.Slice, waitPoll: cfg.WaitPoll, states: newRunCache(stateCacheSize),
		io: newIOPool(cfg.IOConcurrency, cfg.IOPerOrg), callTimeout: cfg.CallTimeout, allowPrivate: cfg.AllowPrivateTargets}
	e.out.model = cfg.ModelFactory
	e.deliveryTimeout = cfg.DeliveryTimeout
	if e.deliveryTimeout <= 0 {
		e.deliveryTimeout = events.ResponseTimeout
	}
	if e.callTimeout <= 0 {
		e.callTimeout = DefaultCallTimeout
	}
	if e.slice <= 0 {
		e.slice = 100 * time.Millisecond
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
	e.oauth = newOAuthService(cfg.OAuth)
	e.registerOAuthTools(cfg.OAuth.APIs)
	e.eval = expr.New()
	e.defs = newDefCache(1024)
	e.jobHandlers = map[string]func(context.Context, *svctype.Job) error{}
	for _, f := range features {
		f(e)
	}
	return e, nil
}

// Store returns the engine's store (for embedding programs that want InTx).
func (e *Engine) Store() Store { return e.store }

// Environment returns the engine's step registry.
func (e *Engine) Environment() *Environment { return e.env }

// RegisterStep adds a step kind to the engine's environment.
func (e *Engine) RegisterStep(kind string, fn svctype.StepFunc) { e.env.RegisterStep(kind, fn) }

// Evaluator returns the expression evaluator, where later features register prefix
// resolvers (doc:, orgconfig:).
func (e *Engine) Evaluator() *expr.Evaluator { return e.eval }

// Lease returns the job lease duration.
func (e *Engine) Lease() time.Duration { return e.lease }

// Wakeup returns a channel that receives (without blocking the sender) whenever new work
// is enqueued by this engine, so an in-process worker need not wait for its next poll, and
// a function that stops the notifications.
//
// Jobs made claimable by other processes wake it too when the store reports them
// (PostgreSQL LISTEN/NOTIFY); otherwise the worker finds them at its next poll.
func (e *Engine) Wakeup() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	e.wakeups = append(e.wakeups, ch)
	e.mu.Unlock()
	e.jobsOnce.Do(func() {
		if w, ok := e.store.(JobWatcher); ok {
			w.WatchJobs(e.notify)
		}
	})
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.wakeups = slices.DeleteFunc(e.wakeups, func(c chan struct{}) bool { return c == ch })
	}
}

func (e *Engine) notify() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ch := range e.wakeups {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// features are the parts of the engine, each in its own file, that hook themselves into New
// (prefix resolvers, job handlers).
var features []func(*Engine)

var orgPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// ValidOrgID reports whether id can name an organization: 1-128 characters of
// [A-Za-z0-9_.:-].
func ValidOrgID(id string) bool { return orgPattern.MatchString(id) }

func checkOrg(orgID string) error {
	if !ValidOrgID(orgID) {
		return ErrInvalidOrg
	}
	return nil
}

// CreateWorkflow validates and stores a new workflow (version 1).
func (e *Engine) CreateWorkflow(ctx context.Context, orgID string, in WorkflowInput) (*svctype.Workflow, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	c, err := e.checkWorkflow(ctx, orgID, in)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC()
	w := &svctype.Workflow{
		ID: "wfl-" + uuid.NewString(), OrgID: orgID, Name: in.Name, Version: 1,
		Definition: compact(in.Definition), Warnings: c.warnings, CreatedAt: now, UpdatedAt: now,
	}
	err = e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.CreateWorkflow(ctx, w); err != nil {
			return err
		}
		return e.scheduleTx(ctx, tx, w, c.def)
	})
	if err != nil {
		return nil, err
	}
	e.notify()
	return w, nil
}

// UpdateWorkflow validates and stores a new version of a workflow; runs already started
// keep the version they started with.
func (e *Engine) UpdateWorkflow(ctx context.Context, orgID, id string, in WorkflowInput) (*svctype.Workflow, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	c, err := e.checkWorkflow(ctx, orgID, in)
	if err != nil {
		return nil, err
	}
	var w *svctype.Workflow
	err = e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		cur, err := tx.GetWorkflow(ctx, orgID, id)
		if err != nil {
			return err
		}
		w = &svctype.Workflow{
			ID: id, OrgID: orgID, Name: in.Name, Version: cur.Version + 1,
			Definition: compact(in.Definition), Warnings: c.warnings,
			CreatedAt: cur.CreatedAt, UpdatedAt: e.now().UTC(),
		}
		if err := tx.UpdateWorkflow(ctx, w); err != nil {
			return err
		}
		return e.scheduleTx(ctx, tx, w, c.def)
	})
	if err != nil {
		return nil, err
	}
	e.notify()
	return w, nil
}

// GetWorkflow returns the current version of a workflow.
func (e *Engine) GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetWorkflow(ctx, orgID, id)
}

// ListWorkflows pages an organization's workflows.
func (e *Engine) ListWorkflows(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Workflow], error) {
	if err := checkOrg(orgID); err != nil {
		return svctype.Page[svctype.Workflow]{}, err
	}
	return e.store.ListWorkflows(ctx, orgID, opts)
}

// DeleteWorkflow removes a workflow, its versions and its schedule. Its runs stay readable;
// runs still in progress finish on the version they started with.
func (e *Engine) DeleteWorkflow(ctx context.Context, orgID, id string) error {
	if err := checkOrg(orgID); err != nil {
		return err
	}
	return e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.DeleteWorkflow(ctx, orgID, id); err != nil {
			return err
		}
		return tx.DeleteJobs(ctx, orgID, svctype.JobSchedule, "", id)
	})
}

// Execute starts a run of the workflow's current version and returns it in status running;
// a worker executes it. With opts.IdempotencyKey, a call repeating a key seen in the last
// IdempotencyWindow returns the run that key started.
//
// The run's job goes into the jobs table like every other job, and workers claim it in
// turn (fairly across organizations, in order of acceptance within one): a run started
// here gets no shortcut past runs queued earlier or by other processes. What this process
// does keep is the run's state, so that when its own worker claims the job it need not
// read the run back.
func (e *Engine) Execute(ctx context.Context, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions) (*svctype.Run, error) {
	for attempt := 0; attempt < 3; attempt++ {
		var run *svctype.Run
		var job *svctype.Job
		err := e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			run, job, err = e.executeTx(ctx, tx, orgID, workflowID, input, opts)
			return err
		})
		// Two first calls with one key raced: the loser's insert conflicted, so the key's run
		// now exists; look again.
		if errors.Is(err, errKeyRace) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if job != nil {
			e.started(run, job, nil)
		}
		return run, nil
	}
	return nil, fmt.Errorf("execute: idempotency key %q kept conflicting", opts.IdempotencyKey)
}

var errKeyRace = errors.New("idempotency key race")

// storableTime reports whether a time given by a caller can be stored and answered back:
// between 1970 and 9999 (a year past 9999 has no RFC 3339 form, and PostgreSQL refuses
// year 0).
func storableTime(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1970 && y <= 9999
}

// started hands a run committed with its first job to this process's worker: its state
// (the run, its definition, its context: the input and extra) is kept for the job's first
// claim, which then reads nothing back, and the worker is woken.
func (e *Engine) started(run *svctype.Run, job *svctype.Job, extra expr.Vars) {
	if ent, err := e.entry(run); err == nil {
		var in any
		_ = json.Unmarshal(run.Input, &in)
		vars := expr.Vars{"input": in}
		maps.Copy(vars, extra)
		own := *run // the worker changes its copy; the caller keeps this one
		e.states.put(job.ID, job.Claims, &runState{run: &own, ent: ent, vars: vars})
	}
	e.notify()
}

// ExecuteTx is Execute inside the caller's transaction: the run exists only if tx commits.
// An in-process worker learns of it at its next poll.
func (e *Engine) ExecuteTx(ctx context.Context, tx Tx, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions) (*svctype.Run, error) {
	run, _, err := e.executeTx(ctx, tx, orgID, workflowID, input, opts)
	return run, err
}

// executeTx starts a run in tx and returns it with its job (nil when an idempotency key
// named an existing run).
func (e *Engine) executeTx(ctx context.Context, tx Tx, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions) (*svctype.Run, *svctype.Job, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, nil, err
	}
	input, err := normalizeInput(input)
	if err != nil {
		return nil, nil, err
	}
	now := e.now().UTC()
	if opts.IdempotencyKey != "" {
		if len(opts.IdempotencyKey) > 255 {
			return nil, nil, Invalid("/Idempotency-Key", "at most 255 characters")
		}
		id, err := tx.RunIDForIdempotencyKey(ctx, orgID, opts.IdempotencyKey, now)
		if err == nil {
			run, err := tx.GetRun(ctx, orgID, id)
			return run, nil, err
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, nil, err
		}
	}
	w, err := tx.GetWorkflow(ctx, orgID, workflowID)
	if err != nil {
		return nil, nil, err
	}
	job := &svctype.Job{OrgID: w.OrgID, Kind: svctype.JobRunStep, RunAt: now}
	run, err := e.startRunTx(ctx, tx, w, input, opts.IdempotencyKey, now, job)
	if errors.Is(err, ErrConflict) && opts.IdempotencyKey != "" {
		return nil, nil, errKeyRace
	}
	return run, job, err
}

func normalizeInput(input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 || string(input) == "null" {
		return json.RawMessage(`{}`), nil
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return nil, Invalid("/input", "is not valid JSON")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, Invalid("/input", "must be an object")
	}
	return compact(input), nil
}

// startRunTx inserts the run, its input, its first job and workflow_run_started.
func (e *Engine) startRunTx(ctx context.Context, tx Tx, w *svctype.Workflow, input json.RawMessage, key string, now time.Time, job *svctype.Job) (*svctype.Run, error) {
	run := &svctype.Run{
		ID: "run-" + uuid.NewString(), OrgID: w.OrgID, WorkflowID: w.ID, WorkflowVersion: w.Version,
		Status: svctype.RunRunning, Input: input, Definition: w.Definition,
		IdempotencyKey: key, CreatedAt: now, UpdatedAt: now,
	}
	if err := tx.CreateRun(ctx, run, now.Add(IdempotencyWindow)); err != nil {
		return nil, err
	}
	if err := tx.PutContext(ctx, w.OrgID, run.ID, "input", input); err != nil {
		return nil, err
	}
	if job == nil {
		job = &svctype.Job{OrgID: w.OrgID, Kind: svctype.JobRunStep, RunAt: now}
	}
	job.RunID = run.ID
	if err := tx.EnqueueJob(ctx, job); err != nil {
		return nil, err
	}
	ev := e.event(run, EventRunStarted, map[string]any{
		"run_id": run.ID, "workflow_id": w.ID, "input_payload": json.RawMessage(input),
	})
	if err := e.appendEvents(ctx, tx, []svctype.Event{ev}, nil); err != nil {
		return nil, err
	}
	return run, nil
}

// event builds an outbox entry for a run.
func (e *Engine) event(run *svctype.Run, name string, payload map[string]any) svctype.Event {
	b, err := json.Marshal(payload)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"run_id": run.ID, "error": "payload not encodable: " + err.Error()})
	}
	return svctype.Event{
		DeliveryID: "dlv_" + uuid.NewString(), OrgID: run.OrgID, RunID: run.ID,
		Event: name, Timestamp: e.now().UTC(), Payload: b,
	}
}

// GetRun returns a run.
func (e *Engine) GetRun(ctx context.Context, orgID, runID string) (*svctype.Run, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetRun(ctx, orgID, runID)
}

// RunStatus returns the status document of a run: its status, context and steps.
func (e *Engine) RunStatus(ctx context.Context, orgID, runID string) (*RunStatusDoc, error) {
	return e.RunStatusWith(ctx, orgID, runID, StatusOptions{})
}

// RunStatusWith is RunStatus tuned by opts.
func (e *Engine) RunStatusWith(ctx context.Context, orgID, runID string, opts StatusOptions) (*RunStatusDoc, error) {
	run, err := e.GetRun(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	def, err := e.definition(run)
	if err != nil {
		return nil, err
	}
	var runCtx map[string]any
	if !opts.OmitContext {
		rawCtx, err := e.store.GetContext(ctx, orgID, runID)
		if err != nil {
			return nil, err
		}
		runCtx = decodeContext(rawCtx)
		runCtx[runIDKey] = run.ID
	}
	statuses, err := e.store.StepStatuses(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	return &RunStatusDoc{
		ID: run.ID, Status: run.Status, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion,
		Reason: run.Reason, Context: runCtx, Steps: stepSummaries(def, statuses),
		CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt, FinishedAt: run.FinishedAt,
	}, nil
}

func stepSummaries(def *svctype.Definition, statuses map[int]svctype.StepStatus) []StepSummary {
	out := make([]StepSummary, len(def.Actions))
	for i, a := range def.Actions {
		out[i] = StepSummary{Index: i, Type: a.Type, Status: svctype.StepPending}
		if st, ok := statuses[i]; ok {
			out[i].Status = st
		}
	}
	return out
}

func decodeContext(raw map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(raw)+1)
	for k, v := range raw {
		var x any
		if err := json.Unmarshal(v, &x); err == nil {
			out[k] = x
		}
	}
	return out
}

// Evidence returns the run record: each step's input summary, output, effects and
// decisions, and every effect in order.
func (e *Engine) Evidence(ctx context.Context, orgID, runID string) (*Evidence, error) {
	run, err := e.GetRun(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	recs, err := e.store.ListSteps(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	ev := &Evidence{
		RunID: run.ID, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion,
		Status: run.Status, Reason: run.Reason, Input: run.Input, Steps: recs,
		Effects: []EvidenceEffect{}, Decisions: []svctype.Decision{}, Counts: map[string]int{},
	}
	for _, r := range recs {
		ev.Counts["steps_"+string(r.Status)]++
		for _, eff := range r.Effects {
			ev.Effects = append(ev.Effects, EvidenceEffect{StepIndex: r.Index, Effect: eff})
		}
		ev.Decisions = append(ev.Decisions, r.Decisions...)
	}
	ev.Counts["effects"] = len(ev.Effects)
	// What a reconciliation found, read from the two context keys that say it (not the
	// whole context, which may hold every group).
	found, err := e.store.GetContext(ctx, orgID, runID, "matchGroupCounts", "matchGroupExceptions")
	if err != nil {
		return nil, err
	}
	var groups map[string]int
	if json.Unmarshal(found["matchGroupCounts"], &groups) == nil {
		for k, n := range groups {
			ev.Counts["match_"+k] = n
		}
	}
	var exceptions []json.RawMessage
	if json.Unmarshal(found["matchGroupExceptions"], &exceptions) == nil {
		ev.Counts["exceptions"] = len(exceptions)
		ev.Exceptions = exceptions[:min(len(exceptions), EvidenceExceptions)]
	}
	if ev.Exceptions == nil {
		ev.Exceptions = []json.RawMessage{}
	}
	return ev, nil
}

// ListRuns pages an organization's runs, newest first.
func (e *Engine) ListRuns(ctx context.Context, orgID string, f RunFilter) (svctype.Page[svctype.Run], error) {
	if err := checkOrg(orgID); err != nil {
		return svctype.Page[svctype.Run]{}, err
	}
	if f.Status != "" && !f.Status.Valid() {
		return svctype.Page[svctype.Run]{}, Invalid("/status", "unknown run status %q", f.Status)
	}
	return e.store.ListRuns(ctx, orgID, f)
}

// RunEvents pages a run's outbox events, oldest first.
func (e *Engine) RunEvents(ctx context.Context, orgID, runID string, opts svctype.ListOptions) (svctype.Page[svctype.Event], error) {
	if _, err := e.GetRun(ctx, orgID, runID); err != nil {
		return svctype.Page[svctype.Event]{}, err
	}
	return e.store.ListRunEvents(ctx, orgID, runID, opts)
}

// CancelRun ends a running or paused run as cancelled; a run that already ended is
// ErrConflict. A worker in the middle of one of its steps loses its lease and that step's
// uncommitted work is discarded.
func (e *Engine) CancelRun(ctx context.Context, orgID, runID, reason string, actor Actor) (*svctype.Run, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if actor.Type == "" {
		actor.Type = "api"
	}
	var run *svctype.Run
	err := e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		run, err = tx.GetRun(ctx, orgID, runID)
		if err != nil {
			return err
		}
		if run.Status.Terminal() {
			return fmt.Errorf("%w: run %s already ended as %s", ErrConflict, run.ID, run.Status)
		}
		if err := tx.DeleteJobs(ctx, orgID, svctype.JobRunStep, run.ID, ""); err != nil {
			return err
		}
		if run.Status == svctype.RunPaused {
			if err := e.closePause(ctx, tx, run, actor); err != nil {
				return err
			}
		}
		e.finish(run, svctype.RunCancelled, reason)
		if err := tx.UpdateRun(ctx, run); err != nil {
			return err
		}
		return e.appendEvents(ctx, tx, []svctype.Event{e.event(run, EventRunCancelled, map[string]any{
			"run_id": run.ID, "workflow_id": run.WorkflowID, "reason": reason, "actor": actor,
		})}, nil)
	})
	if err != nil {
		return nil, err
	}
	e.runChanged(orgID, runID)
	return run, nil
}

func (e *Engine) finish(run *svctype.Run, status svctype.RunStatus, reason string) {
	now := e.now().UTC()
	run.Status, run.Reason, run.UpdatedAt, run.FinishedAt = status, reason, now, &now
}

// CreateTable declares a custom table.
func (e *Engine) CreateTable(ctx context.Context, orgID, name string, fields map[string]string) (*svctype.Table, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if ps := tables.Check(name, fields); len(ps) > 0 {
		ve := &ValidationError{}
		for _, p := range ps {
			ve.Problems = append(ve.Problems, Problem{p.Pointer, p.Message})
		}
		return nil, ve
	}
	return tables.Create(ctx, e.store, orgID, name, fields, e.now())
}

// ListTables pages an organization's custom tables.
func (e *Engine) ListTables(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Table], error) {
	if err := checkOrg(orgID); err != nil {
		return svctype.Page[svctype.Table]{}, err
	}
	return e.store.ListTables(ctx, orgID, opts)
}

// ReadRows returns a table's rows matching where (column -> value), at most limit.
func (e *Engine) ReadRows(ctx context.Context, orgID, table string, where map[string]any, limit int) ([]svctype.Row, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if _, err := e.store.GetTable(ctx, orgID, table); err != nil {
		return nil, err
	}
	return e.store.ReadRows(ctx, orgID, table, where, limit)
}

// ListRows pages a table's rows matching where (column -> value), oldest first: the rows
// route. ErrNotFound when the organization has no such table.
func (e *Engine) ListRows(ctx context.Context, orgID, table string, where map[string]any, opts svctype.ListOptions) (svctype.Page[svctype.Row], error) {
	if err := checkOrg(orgID); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	if _, err := e.store.GetTable(ctx, orgID, table); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	return e.store.ListRows(ctx, orgID, table, where, opts)
}

// UpdateRows merges set into the rows matching where (integrators advance exception rows
// this way) and returns how many it changed. Only declared columns may be set. Setting a key
// column of an upserted row moves the row to its new key; ErrConflict, with nothing changed,
// when two upserted rows would then share a key.
func (e *Engine) UpdateRows(ctx context.Context, orgID, table string, where, set map[string]any) (int, error) {
	if err := checkOrg(orgID); err != nil {
		return 0, err
	}
	t, err := e.store.GetTable(ctx, orgID, table)
	if err != nil {
		return 0, err
	}
	if len(set) == 0 {
		return 0, Invalid("/set", "required: at least one column to set")
	}
	_, dropped := tables.Split(t, set)
	if len(dropped) > 0 {
		return 0, Invalid("/set", "columns %v are not declared by table %q", dropped, table)
	}
	return e.store.UpdateRows(ctx, orgID, table, where, set)
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return json.RawMessage(buf.Bytes())
}
