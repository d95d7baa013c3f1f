// Package storage declares what svcflow needs from a database: the run core's part (Runs,
// Store) and each feature's part (Actions, Approvals, Webhooks, ...), as the store
// implements them and engine/store/storetest checks them. It is a leaf: it imports only the
// shared types, so the run core (engine/core), every feature package and the bun
// implementation (engine/store) depend on it and never on each other.
//
// A feature does not take these parts whole: it declares, in its own package, the few
// methods it calls (its Store, and its Tx for what it does in a transaction), and the
// composition root checks at compile time that Full and Tx implement them. One bun
// implementation serves every part, so a run's step and a feature's writes share one
// transaction: the Tx the run core opens and hands to a feature's hooks is every part
// (All), which the feature narrows to its own Tx with a conversion the compiler checks.
//
// Every method that touches a tenant resource takes the org id and puts it in its query.
package storage

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Sentinel errors of every store. Check with errors.Is.
var (
	// ErrNotFound: the resource does not exist in this organization.
	ErrNotFound = svctype.ErrNotFound
	// ErrConflict: a unique name is taken, or the row changed under a compare-and-swap.
	ErrConflict = svctype.ErrConflict
	// ErrLeaseLost: the job's lease expired or the job was removed.
	ErrLeaseLost = svctype.ErrLeaseLost
	// ErrInvalidCursor: a paging cursor that the listing did not issue.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrTryAgain: the database aborted the transaction to settle a conflict with another
	// one (PostgreSQL's deadlock or serialization failure): nothing of it was kept, and the
	// same work may be tried again at once. Not the work's fault: a step that meets it is
	// tried again, it does not fail its run.
	ErrTryAgain = errors.New("the database aborted the transaction over a conflict with another; try again")
	// ErrSchemaBehind: the database answers, but lacks migrations this build has (a
	// process of an older build migrated it, or none did yet): Ready's answer.
	ErrSchemaBehind = errors.New("database schema is behind this build")
)

// Readiness is whether a store can serve this build now: what a host's /readyz asks.
type Readiness interface {
	// Ready runs a trivial query (on the read pool, where there is one) within ctx and
	// checks that every migration this build knows is applied: nil when both hold,
	// ErrSchemaBehind (wrapped) when migrations are missing, the query's error otherwise.
	// It writes nothing, so a probe never waits for SQLite's one writer.
	Ready(ctx context.Context) error
}

// Store is what the run core needs from a database.
type Store interface {
	Runs
	// InTx runs fn in one transaction: committed when fn returns nil, rolled back otherwise.
	// The Tx passed to fn must not be used after fn returns.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// ClaimJobs leases up to n jobs whose run_at has come and whose lease is free or expired,
	// oldest run_at first, for lease. Each claimed job gets a fresh LeaseToken and Attempts+1.
	// PostgreSQL claims with FOR UPDATE SKIP LOCKED so many workers share the table.
	ClaimJobs(ctx context.Context, n int, lease time.Duration) ([]svctype.Job, error)
	// ExtendLeases pushes lease_until to now+lease for the given jobs that still hold token;
	// a job is named by its OrgID, ID and LeaseToken together.
	ExtendLeases(ctx context.Context, jobs []svctype.Job, lease time.Duration) error
	// Migrate brings the schema up to date; it is safe to call on every start and from
	// several processes at once.
	Migrate(ctx context.Context) error
	Readiness
	Close() error
}

// Tx is a store bound to one transaction: every data operation (All). The run core uses its
// own part (Runs) and hands the value to the features it calls in that transaction (pause
// kinds, sinks, cancel and delete hooks, step sources), which narrow it to the Tx their
// package declares: an assignment the compiler checks, where a store that lacks a part does
// not build.
type Tx interface {
	All
}

// StepCommit is what a step's commit writes once the step has run, in this order: the
// lease of its job kept for Lease more (RenewJob, when Renew is set), the whole context
// values (PutContext), the step record (PutStep, when Step is set), the run (UpdateRun),
// the events (AppendEvents, which numbers them) and, when the run ends, the deletion of its
// job (CompleteJob, when Complete is set). Renew and Complete are never both set.
type StepCommit struct {
	OrgID    string
	Renew    *svctype.Job
	Lease    time.Duration
	Context  []ContextPut
	Step     *svctype.StepRecord
	Run      *svctype.Run
	Events   []svctype.Event
	Complete *svctype.Job
	// Next, beside Complete, asks for the freed slot's next job in the same statement
	// (NextClaim). A store that cannot leaves it untouched.
	Next *NextClaim
}

// NextClaim is a claim made by the commit that ends a job: its worker's slot frees as the
// run ends, and the claim the worker would send next goes in the commit's statement
// instead (PostgreSQL), with the same round robin and lease checks as ClaimJobs. The store
// fills Tried and Jobs once the transaction has committed, never before: a claim rolled
// back with its transaction leased nothing.
type NextClaim struct {
	// Want is how many jobs to claim, asked when the statement is built (0: none, as when
	// the worker drains).
	Want  func() int
	Lease time.Duration
	// Tried says the claim went with a committed statement; Jobs is what it leased.
	Tried bool
	Jobs  []svctype.Job
}

// ContextPut is one whole context value of a StepCommit.
type ContextPut struct {
	Key   string
	Value json.RawMessage
}

// StepCommitter is a Tx that writes a StepCommit in one round trip to its database (one
// statement on PostgreSQL), with the checks and errors of the calls it stands for. On an
// error the caller rolls the transaction back: unlike the calls, which stop at the first
// failing check, the statement may have written the rest. It takes the job's row before
// the run's, as a cancel does. A Tx without it is sent those calls one by one (CommitStep).
type StepCommitter interface {
	CommitStep(ctx context.Context, c *StepCommit) error
}

// RunLoader is a Store that reads a run and its whole context in one round trip to its
// database (one statement on PostgreSQL): what a worker reads to take up a run that
// another process started or left. A Store without it is sent GetRun, then GetContext
// (LoadRun).
type RunLoader interface {
	LoadRun(ctx context.Context, orgID, runID string) (*svctype.Run, map[string]json.RawMessage, error)
}

// LoadRun reads a run and its context through s: in one round trip when s is a
// RunLoader, else by GetRun and GetContext. ErrNotFound without the run.
func LoadRun(ctx context.Context, s Store, orgID, runID string) (*svctype.Run, map[string]json.RawMessage, error) {
	if l, ok := s.(RunLoader); ok {
		return l.LoadRun(ctx, orgID, runID)
	}
	return LoadRunApart(ctx, s, orgID, runID)
}

// LoadRunApart reads a run and its context by GetRun, then GetContext: two reads.
func LoadRunApart(ctx context.Context, s Store, orgID, runID string) (*svctype.Run, map[string]json.RawMessage, error) {
	run, err := s.GetRun(ctx, orgID, runID)
	if err != nil {
		return nil, nil, err
	}
	raw, err := s.GetContext(ctx, orgID, runID)
	if err != nil {
		return nil, nil, err
	}
	return run, raw, nil
}

// CommitStep writes c through tx: in one round trip when tx is a StepCommitter, else as
// the calls c stands for, in order.
func CommitStep(ctx context.Context, tx Tx, c *StepCommit) error {
	if sc, ok := tx.(StepCommitter); ok {
		return sc.CommitStep(ctx, c)
	}
	return CommitStepByCalls(ctx, tx, c)
}

// StepsCommitter is a Tx that writes the commits of several steps of one run, in the order
// the steps ran, in one round trip to its database (one statement on PostgreSQL), with the
// effect of CommitStep on each in turn: the lease is checked once, the run written as the
// last commit leaves it, a context key written by two commits keeps the later value, and
// the events are numbered in order. A check that fails fails the whole, which the caller
// rolls back: which commit it concerned is not told.
type StepsCommitter interface {
	CommitSteps(ctx context.Context, cs []*StepCommit) error
}

// CommitSteps writes cs, commits of one run's steps in the order they ran, through tx: in
// one round trip when tx is a StepsCommitter, else CommitStep on each in turn.
func CommitSteps(ctx context.Context, tx Tx, cs []*StepCommit) error {
	if sc, ok := tx.(StepsCommitter); ok && len(cs) > 1 {
		return sc.CommitSteps(ctx, cs)
	}
	for _, c := range cs {
		if err := CommitStep(ctx, tx, c); err != nil {
			return err
		}
	}
	return nil
}

// CommitStepByCalls writes c as the calls it stands for, one after another.
func CommitStepByCalls(ctx context.Context, tx Runs, c *StepCommit) error {
	if c.Renew != nil {
		if c.Complete != nil {
			return errors.New("storage: a step commit both renews and completes its job")
		}
		if err := tx.RenewJob(ctx, c.Renew, c.Lease); err != nil {
			return err
		}
	}
	for _, p := range c.Context {
		if err := tx.PutContext(ctx, c.OrgID, c.Run.ID, p.Key, p.Value); err != nil {
			return err
		}
	}
	if c.Step != nil {
		if err := tx.PutStep(ctx, c.OrgID, c.Step); err != nil {
			return err
		}
	}
	if err := tx.UpdateRun(ctx, c.Run); err != nil {
		return err
	}
	if err := tx.AppendEvents(ctx, c.Events); err != nil {
		return err
	}
	if c.Complete != nil {
		return tx.CompleteJob(ctx, c.Complete)
	}
	return nil
}

// RunStart is what starting a run writes, in this order: the run (CreateRun, with
// KeyExpires), its input as the context key "input" (PutContext), its first job
// (EnqueueJob, which sets the job's ID) and its events (AppendEvents).
type RunStart struct {
	Run        *svctype.Run
	KeyExpires time.Time
	Input      json.RawMessage
	Job        *svctype.Job
	Events     []svctype.Event
}

// RunStarter is a Tx that writes a RunStart in one round trip to its database (one
// statement on PostgreSQL), with the checks and errors of the calls it stands for. On an
// error the caller rolls the transaction back, as with StepCommitter.
type RunStarter interface {
	StartRun(ctx context.Context, r *RunStart) error
}

// StartRun writes r through tx: in one round trip when tx is a RunStarter, else as the
// calls r stands for, in order.
func StartRun(ctx context.Context, tx Tx, r *RunStart) error {
	if rs, ok := tx.(RunStarter); ok {
		return rs.StartRun(ctx, r)
	}
	return StartRunByCalls(ctx, tx, r)
}

// StartRunByCalls writes r as the calls it stands for, one after another.
func StartRunByCalls(ctx context.Context, tx Runs, r *RunStart) error {
	if err := tx.CreateRun(ctx, r.Run, r.KeyExpires); err != nil {
		return err
	}
	if err := tx.PutContext(ctx, r.Run.OrgID, r.Run.ID, "input", r.Input); err != nil {
		return err
	}
	if err := tx.EnqueueJob(ctx, r.Job); err != nil {
		return err
	}
	return tx.AppendEvents(ctx, r.Events)
}

// Full is every part at once: the store the composition root (engine.New) runs with.
type Full interface {
	Store
	All
}

// All is every data operation: what a Full store and its Tx offer.
type All interface {
	Runs
	svctype.TableStore
	Actions
	ActionsByName
	WorkflowsByID
	Agents
	Deliveries
	Approvals
	FormPauses
	OrgFeatures
	FormSchemas
	OAuth
	Webhooks
	ExternalForms
	OrgConfig
	Documents
	Authoring
	RunOperations
}

// RunFilter narrows ListRuns: a run is listed when it passes every filter that is set. It
// is the one description of "these runs" (the runs list, and operations on every run that
// matches a filter).
type RunFilter struct {
	WorkflowID string
	// Statuses keeps the runs in any of these statuses (every status when empty).
	Statuses []svctype.RunStatus
	// CreatedAfter keeps the runs created at or after it, CreatedBefore those created
	// before it; a zero time does not filter.
	CreatedAfter, CreatedBefore time.Time
	// RunID keeps the run of this id when it is a whole run id, else the runs whose id
	// starts with it.
	RunID string
	// Key keeps the runs that a search key of their workflow found this value in
	// (PutRunSearchKeys), through the search key index.
	Key string
	svctype.ListOptions
}

// Runs is the run core's data: workflows, runs, their context, step records, foreach
// progress, the outbox, the jobs table and outbound call intents.
type Runs interface {
	// Workflows. CreateWorkflow inserts version 1 (ErrConflict when the name is taken in the
	// org); UpdateWorkflow stores w as a new version w.Version (the caller increments it) and
	// makes it current (ErrNotFound, ErrConflict on a taken name). Get returns the current
	// version; GetWorkflowVersion a given one (kept after updates so runs can name theirs).
	// DeleteWorkflow removes the workflow, its versions and the form schemas generated for
	// them; runs stay.
	CreateWorkflow(ctx context.Context, w *svctype.Workflow) error
	UpdateWorkflow(ctx context.Context, w *svctype.Workflow) error
	GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error)
	GetWorkflowVersion(ctx context.Context, orgID, id string, version int) (*svctype.Workflow, error)
	ListWorkflows(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Workflow], error)
	DeleteWorkflow(ctx context.Context, orgID, id string) error

	// Runs. CreateRun inserts a run (Definition included). When run.IdempotencyKey is set,
	// the key is recorded until keyExpires; if an unexpired record of that key already exists
	// in the org, CreateRun inserts nothing and returns ErrConflict.
	// RunIDForIdempotencyKey returns the run id recorded for an unexpired key and the
	// IdempotencyRequest of that run's start ('' when none was kept), or ErrNotFound.
	CreateRun(ctx context.Context, run *svctype.Run, keyExpires time.Time) error
	RunIDForIdempotencyKey(ctx context.Context, orgID, key string, now time.Time) (runID, request string, err error)
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	// UpdateRun writes Status, Cursor, Reason, UpdatedAt and FinishedAt of an existing run.
	// A store that implements RunStatusWatcher announces, at commit, a status other than
	// running to the watchers of every process.
	UpdateRun(ctx context.Context, run *svctype.Run) error
	// RunStatuses returns the status of each of the org's runs in ids that exists.
	RunStatuses(ctx context.Context, orgID string, ids []string) (map[string]svctype.RunStatus, error)
	// ListRuns pages runs newest first (created_at, then id), without their Definition; the
	// cursor is opaque to callers. A run id prefix is at most 40 bytes of [a-z0-9-].
	ListRuns(ctx context.Context, orgID string, f RunFilter) (svctype.Page[svctype.Run], error)
	// WorkflowNames returns the current name of each of the org's workflows in ids that
	// exists (what a runs list shows beside each run).
	WorkflowNames(ctx context.Context, orgID string, ids []string) (map[string]string, error)
	// PutRunSearchKeys indexes the run runID (created at createdAt) under each of values,
	// what its workflow's search keys found in its input; a value repeated is kept once.
	// It is written in the transaction that creates the run.
	PutRunSearchKeys(ctx context.Context, orgID, runID string, createdAt time.Time, values []string) error

	// Run context, stored one row per key: PutContext inserts or replaces one key.
	// GetContext returns every key, or only the given keys (those that exist).
	// A large array is stored in parts instead (PutContextParts): GetContext still returns
	// it whole; ContextSlice reads only the parts a page needs, and ContextBrief leaves
	// every value over a size out, saying only what it is.
	PutContext(ctx context.Context, orgID, runID, key string, value json.RawMessage) error
	GetContext(ctx context.Context, orgID, runID string, keys ...string) (map[string]json.RawMessage, error)
	// PutContextParts inserts or replaces one key whose value is the JSON array made of
	// parts: each part a JSON array of per consecutive elements (the last may hold fewer),
	// length elements in all. The parts are taken one at a time, each written before the
	// next is asked for (a part's bytes may be reused for the next); an error the sequence
	// yields ends it and is returned.
	PutContextParts(ctx context.Context, orgID, runID, key string, parts iter.Seq2[json.RawMessage, error], length, per int) error
	// ContextSlice reads key so that the elements [from, to) of an array are at hand: the
	// value Whole, or only the parts that hold those elements. A missing key (or run) is
	// a slice with Found false. Parts (here and from ContextParts) are read-only: they may
	// share the driver's memory.
	ContextSlice(ctx context.Context, orgID, runID, key string, from, to int) (ContextSlice, error)
	// ContextParts reads the parts first..last of a key stored in parts, in order (what a
	// whole value streamed out reads, a few parts at a time); an error unless each is there.
	ContextParts(ctx context.Context, orgID, runID, key string, first, last int) ([]json.RawMessage, error)
	// ContextBrief returns every key of a run whose value is at most maxBytes, and for the
	// others (larger, or stored in parts) what they are, without reading them.
	ContextBrief(ctx context.Context, orgID, runID string, maxBytes int64) (map[string]json.RawMessage, map[string]ContextRef, error)

	// Step records, one per top-level step index: PutStep inserts or replaces.
	PutStep(ctx context.Context, orgID string, rec *svctype.StepRecord) error
	ListSteps(ctx context.Context, orgID, runID string) ([]svctype.StepRecord, error)
	// StepStatuses returns each recorded step's status by index: what a status poll needs,
	// without the records' JSON columns.
	StepStatuses(ctx context.Context, orgID, runID string) (map[int]svctype.StepStatus, error)

	// Foreach progress: one output per element, inserted or replaced by (run, step, item).
	PutLoopItem(ctx context.Context, orgID, runID string, step, item int, output json.RawMessage) error
	// PutLoopItems puts the outputs of elements first, first+1, ... in one statement a few
	// hundred: what a batch of foreach elements commits.
	PutLoopItems(ctx context.Context, orgID, runID string, step, first int, outputs []json.RawMessage) error
	ListLoopItems(ctx context.Context, orgID, runID string, step int) ([]json.RawMessage, error)

	// Outbox. AppendEvents assigns Seq in order. ListRunEvents pages a run's events oldest first.
	AppendEvents(ctx context.Context, events []svctype.Event) error
	ListRunEvents(ctx context.Context, orgID, runID string, opts svctype.ListOptions) (svctype.Page[svctype.Event], error)

	// Jobs. Leases are set and compared on the store's clock only (ClaimJobs, RenewJob,
	// ExtendLeases all take a duration), so an engine with an injected clock cannot hold a
	// lease that the store already considers expired. A job is named by its OrgID and ID
	// together: another organization's job is never touched. EnqueueJob inserts a job (ID
	// assigned). RenewJob verifies that the job still holds job.LeaseToken (else
	// ErrLeaseLost), and sets its run_at (the store's now when zero), payload and attempts,
	// and keeps the lease for lease more, or frees it when lease is 0.
	// CompleteJob deletes a job that still holds its token (else ErrLeaseLost).
	// DeleteJobs removes an org's jobs of a kind for a run or a workflow (whichever id is set).
	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
	DeleteJobs(ctx context.Context, orgID, kind, runID, workflowID string) error

	// Retries (svctype.RunRetry). PutRunRetry records that r.RunID retries r.RetryOf, in
	// the transaction that starts r.RunID: ErrConflict when r.RetryOf was retried already.
	// RunRetries returns the record of runID's retry of another run (of) and that of the
	// run retrying runID (by), each nil when there is none.
	PutRunRetry(ctx context.Context, r *svctype.RunRetry) error
	RunRetries(ctx context.Context, orgID, runID string) (of, by *svctype.RunRetry, err error)

	// Outbound call intents (svctype.CallIntent). OpenCall records a try of call key made
	// under claim (a job's lease token) and returns the intent before this try (nil when it
	// was not open) and after it; CloseCalls removes every open intent of a run.
	OpenCall(ctx context.Context, orgID, runID, key, claim string, at time.Time) (before, now *svctype.CallIntent, err error)
	CloseCalls(ctx context.Context, orgID, runID string) error
}

// RunStatusWatcher is implemented by stores that can report status changes committed by
// other processes. WatchRunStatus calls fn (from one goroutine) for every run whose status
// left running (ended or paused) in any process, until stop is called or the store closes.
type RunStatusWatcher interface {
	WatchRunStatus(fn func(orgID, runID string)) (stop func())
}

// JobWatcher is implemented by stores that can report jobs made claimable by other
// processes: WatchJobs calls fn for each, until stop is called or the store closes.
type JobWatcher interface {
	WatchJobs(fn func()) (stop func())
}

// ContextSlice is one context key read for a page of its elements (Runs.ContextSlice).
type ContextSlice struct {
	Found bool
	// Whole is the value, when it is stored whole (an array or not).
	Whole json.RawMessage
	// Parts are the JSON arrays that hold the asked elements of a value stored in parts;
	// Start is the index of Parts[0]'s first element, Length the array's length, Per the
	// elements of every part but the array's last, Count how many parts there are and
	// Size their bytes together (Per, Count and Size set even when no element is asked).
	Parts  []json.RawMessage
	Start  int
	Length int
	Per    int
	Count  int
	Size   int64
}

// ContextRef is a context value ContextBrief did not read: its size in bytes (0 when the
// store does not know it: a value written before sizes were kept), and its length when it
// is an array stored in parts.
type ContextRef struct {
	Size   int64
	Length int
	Parts  bool
}

// Parts is a PutContextParts sequence of parts already encoded.
func Parts(parts ...json.RawMessage) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		for _, p := range parts {
			if !yield(p, nil) {
				return
			}
		}
	}
}
