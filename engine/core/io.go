package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Steps that reach the outside world.
//
// A step kind with an IO half (svctype.StepKind.IO) makes its call outside any transaction
// and commits only the result, the way Temporal runs activities outside workflow state. A
// unit of run work (a step, or a foreach element) runs in its transaction as usual until
// it meets an IO step whose result it does not have yet; the transaction rolls back (it
// wrote nothing that lasts), and the executor then
//
//  1. records the call's intent in a short transaction of its own (OpenCall: the run, the
//     call's idempotency key, the try count, the claim), which also checks the job's lease;
//  2. gives its step slot back to the worker, waits for a place in the I/O pool (its own
//     limit, much larger than the step slots, with a cap per organization), makes the call
//     with the idempotency key, and takes a step slot again;
//  3. runs the unit's transaction again: the IO step finds its result, the kind's Run half
//     (when it has one) applies it, and the result, the cursor move and the intent's removal
//     commit together.
//
// A worker that stops between the call and the commit leaves the intent open: whoever
// claims the run next makes the call once more with the same key (the receiver can tell),
// and the evidence lists every try. A claim makes a given call at most once; after
// MaxCallTries tries without a committed result the step fails as "outcome unknown" rather
// than call a third party forever. No transaction, and so not the SQLite writer, is held
// while a call is in flight.

// MaxCallTries is how many claims may make the same call before its step fails with the
// outcome unknown.
const MaxCallTries = 3

// Default I/O pool sizes (Config.IOConcurrency, Config.IOPerOrg).
const (
	DefaultIOConcurrency = 512
	DefaultIOPerOrg      = 256
)

// DefaultCallTimeout bounds one call of an IO half (Config.CallTimeout).
const DefaultCallTimeout = 5 * time.Minute

// needIO stops a unit of work at an IO step whose result it does not have: the unit's
// transaction rolls back, the call is made, and the unit runs again.
type needIO struct {
	key  string
	kind svctype.StepKind
	call *svctype.StepCall
}

func (n *needIO) Error() string { return "step call " + n.key + " has not been made yet" }

// callResult is a call made for the unit in progress.
type callResult struct {
	stepType string
	out      any
	err      error
	intent   *svctype.CallIntent
}

// effect is the evidence of the call: its key and every try.
func (r *callResult) effect() svctype.Effect {
	d := map[string]any{"idempotency_key": r.intent.Key, "tries": r.intent.Tries, "attempts": r.intent.Attempts}
	if r.err != nil {
		d["error"] = r.err.Error()
	}
	return svctype.Effect{Kind: "call", Target: r.stepType, Detail: d}
}

// callKey is the idempotency key of the call at position (see StepCall.IdempotencyKey).
func callKey(runID, position string) string { return runID + "/" + position }

// position is where in the run a step executes: its top-level index, and inside foreach
// elements the element and sub-step indexes.
func (c *commit) position(index int) string {
	if c.at != "" {
		return c.at
	}
	return strconv.Itoa(index)
}

// Slot is the step slot a job runs in, as its worker counts them. The executor releases it
// while a call is in flight, so that slow calls do not keep fast runs waiting, and takes
// one again before committing the result.
type Slot interface {
	Release()
	Reacquire()
}

type slotKey struct{}

// WithSlot returns ctx carrying the slot a worker runs a job in.
func WithSlot(ctx context.Context, s Slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

func slotFrom(ctx context.Context) Slot {
	s, _ := ctx.Value(slotKey{}).(Slot)
	return s
}

type nextClaimKey struct{}

// WithNextClaim returns ctx carrying the claim a worker makes when the job it runs in ctx
// ends its run (storage.NextClaim): the commit that completes the job asks for it.
func WithNextClaim(ctx context.Context, nc *storage.NextClaim) context.Context {
	return context.WithValue(ctx, nextClaimKey{}, nc)
}

func nextClaimFrom(ctx context.Context) *storage.NextClaim {
	nc, _ := ctx.Value(nextClaimKey{}).(*storage.NextClaim)
	return nc
}

// ioPool limits the calls in flight: all together, and per organization so that one
// organization's slow calls cannot take every place.
type ioPool struct {
	all     chan struct{}
	perOrg  int
	waiting atomic.Int64 // calls in acquire, not yet given a place

	mu   sync.Mutex
	orgs map[string]*orgGate
}

type orgGate struct {
	sem  chan struct{}
	refs int
}

func newIOPool(total, perOrg int) *ioPool {
	if total <= 0 {
		total = DefaultIOConcurrency
	}
	if perOrg <= 0 {
		perOrg = DefaultIOPerOrg
	}
	return &ioPool{all: make(chan struct{}, total), perOrg: min(perOrg, total), orgs: map[string]*orgGate{}}
}

// acquire waits for a place for orgID (its own first, then one of the pool's) and returns
// its release.
func (p *ioPool) acquire(ctx context.Context, orgID string) (func(), error) {
	p.mu.Lock()
	g := p.orgs[orgID]
	if g == nil {
		g = &orgGate{sem: make(chan struct{}, p.perOrg)}
		p.orgs[orgID] = g
	}
	g.refs++
	p.mu.Unlock()
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	drop := func() {
		p.mu.Lock()
		if g.refs--; g.refs == 0 {
			delete(p.orgs, orgID)
		}
		p.mu.Unlock()
	}
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	select {
	case p.all <- struct{}{}:
	case <-ctx.Done():
		<-g.sem
		drop()
		return nil, ctx.Err()
	}
	return func() {
		<-p.all
		<-g.sem
		drop()
	}, nil
}

// InFlight reports how many calls of IO halves are in flight in this process.
func (e *Core) InFlight() int { return len(e.io.all) }

// IOWaiting reports how many calls of IO halves wait for a place in this process's I/O
// pool (their organization's cap, or the pool's).
func (e *Core) IOWaiting() int { return int(e.io.waiting.Load()) }

// makeCall makes the call n names for the unit in progress and records it in calls. It
// returns an error only when the call could not be attempted because of the store or the
// lease; the call's own failure is recorded in calls and fails the step when the unit
// runs again.
func (e *Core) makeCall(ctx context.Context, job *svctype.Job, st *runState, n *needIO) error {
	var before, intent *svctype.CallIntent
	err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.RenewJob(ctx, job, e.lease); err != nil {
			return err
		}
		var err error
		before, intent, err = tx.OpenCall(ctx, st.run.OrgID, st.run.ID, n.key, job.LeaseToken, e.now())
		return err
	})
	if err != nil {
		return err
	}
	res := &callResult{stepType: n.call.Type, intent: intent}
	if st.calls == nil {
		st.calls = map[string]*callResult{}
	}
	st.calls[n.key] = res
	switch {
	case before != nil && before.Claim == job.LeaseToken:
		// This claim made the call already and did not commit it (a unit that failed to
		// commit is not run again by the same claim, so this is a bug): never call twice.
		res.err = fmt.Errorf("call %s was already made by this claim; not calling again", n.key)
		return nil
	case intent.Tries > MaxCallTries:
		res.err = fmt.Errorf("%w: the call was made %d times by workers that stopped before committing its result; not calling again",
			ErrOutcomeUnknown, intent.Tries-1)
		return nil
	}
	call := n.call.Detached()
	call.IdempotencyKey, call.Try = n.key, intent.Tries
	if err := e.OutsideCall(ctx, st.run.OrgID, e.callTimeout, func(ctx context.Context) {
		res.out, res.err = n.kind.IO(ctx, call)
	}); err != nil {
		res.err = err
	}
	return nil
}

// OutsideCall runs call, a call to another system, the way every such call runs: with the
// worker's step slot given back meanwhile (taken again, in turn, before returning), in a
// place of orgID in the I/O pool, bounded by timeout. It is finished even when the worker
// drains (like any step in progress); the worker's heartbeat keeps the job's lease. The
// error is the I/O pool's only (no place within the timeout); the call reports its own.
func (e *Core) OutsideCall(ctx context.Context, orgID string, timeout time.Duration, call func(ctx context.Context)) error {
	// The call's context names its organization (svctype.OrgFrom): what it meters, logs or
	// traces is the organization's.
	callCtx, cancel := context.WithTimeout(svctype.WithOrg(context.WithoutCancel(ctx), orgID), timeout)
	defer cancel()
	if slot := slotFrom(ctx); slot != nil {
		slot.Release()
		defer slot.Reacquire()
	}
	release, err := e.io.acquire(callCtx, orgID)
	if err != nil {
		return fmt.Errorf("waiting for a place in the I/O pool: %w", err)
	}
	defer release()
	call(callCtx)
	return nil
}

// unit runs the transaction of one unit of run work (a step, a foreach element, a loop's
// start), making between tries the calls its IO steps need: fn runs again, from the run as
// it was, each time it stops at a call not made yet. The calls' intents are closed in the
// transaction that commits the unit.
func (e *Core) unit(ctx context.Context, job *svctype.Job, st *runState, fn func(ctx context.Context, tx storage.Tx) error) error {
	snapshot := *st.run
	aborted := 0
	for {
		err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := fn(ctx, tx); err != nil {
				return err
			}
			if len(st.calls) > 0 {
				return tx.CloseCalls(ctx, st.run.OrgID, st.run.ID)
			}
			return nil
		})
		if errors.Is(err, storage.ErrTryAgain) {
			// The database chose this transaction to end a deadlock: nothing of it was
			// kept, and the step is not at fault (were it failed, its run would fail for
			// another transaction's timing). It runs again from the run as it was.
			*st.run = snapshot
			if aborted++; aborted < unitTries {
				continue
			}
			return &abortedUnit{runID: st.run.ID, tries: aborted, err: err}
		}
		var n *needIO
		if !errors.As(err, &n) {
			if err == nil {
				st.calls, st.reads = nil, nil
			}
			return err
		}
		*st.run = snapshot
		if err := e.makeCall(ctx, job, st, n); err != nil {
			return err
		}
	}
}

// unitTries is how many times unit runs a transaction the database aborts over a
// conflict with another (storage.ErrTryAgain) before it leaves the job to be claimed again.
const unitTries = 5

// abortedUnit is a unit whose transaction the database aborted unitTries times over
// conflicts with others. It hides the step's error that carried the abort: the run does not
// fail; its job is claimed again when the lease lapses.
type abortedUnit struct {
	runID string
	tries int
	err   error
}

func (a *abortedUnit) Error() string {
	return fmt.Sprintf("run %s: the database aborted the step's transaction %d times over conflicts with others (last: %v)", a.runID, a.tries, a.err)
}

func (a *abortedUnit) Unwrap() error { return storage.ErrTryAgain }

// StepKindOf returns the step kind a step of stepType runs for orgID (the Environment's, or
// one a step source defines), read through tx (nil: outside a transaction): what an agent's
// tool runs.
func (e *Core) StepKindOf(ctx context.Context, tx storage.Tx, orgID, stepType string) (svctype.StepKind, bool, error) {
	return e.lookupKind(ctx, tx, orgID, stepType)
}

// lookupKind returns the step kind of a step type: a kind of the Environment, or one the
// organization defines (its registered action of that name), read through tx (nil:
// outside a transaction, each source through its own store).
func (e *Core) lookupKind(ctx context.Context, tx storage.Tx, orgID, stepType string) (svctype.StepKind, bool, error) {
	if kind, ok := e.env.Lookup(stepType); ok {
		return kind, true, nil
	}
	for _, src := range e.sources() {
		kind, ok, err := src.StepKind(ctx, tx, orgID, stepType)
		if err != nil || ok {
			return kind, ok, err
		}
	}
	return svctype.StepKind{}, false, nil
}

// workAhead does, before a top-level step's first transaction, what the step can do
// without one: the call of a kind with an IO half whose call has not been made (the unit
// then makes it before its transaction instead of opening one only to roll it back), or the
// read of a ReadOnly kind (so that its read does not hold the SQLite writer, nor a
// PostgreSQL transaction, for its length: Run reads committed data through the store, and
// the transaction that follows commits the output, kept in st.reads for it alone). One
// pass finds the step's kind for both. Anything unusual (the workflow's gate, a filter
// that fails to evaluate, properties that do not resolve, a read that fails) is left to
// the transaction, which does and reports it as it always does.
//
// A read in a foreach element stays in the element's transaction: it must see the rows the
// batch's earlier elements wrote, which are not committed yet.
//
// rec is the step's record in memory: a call made here sets its resolved input's summary,
// which a failed call leaves in the failed step's record.
func (e *Core) workAhead(ctx context.Context, job *svctype.Job, st *runState, step *svctype.Step, index int, rec *svctype.StepRecord) error {
	c := &commit{}
	kind, call, key, ok := e.ahead(ctx, st, step, index, c, func(k svctype.StepKind, s *svctype.Step) bool {
		return k.IO != nil || k.ReadOnly != nil && k.Run != nil && k.ReadOnly(s.Properties)
	})
	if !ok {
		return nil
	}
	if kind.IO != nil {
		if _, done := st.calls[key]; done {
			return nil
		}
		call.Secret = e.secretFor(st.run.OrgID)
		rec.InputSummary = summarize(call.Properties)
		return e.makeCall(ctx, job, st, &needIO{key: key, kind: kind, call: call})
	}
	e.BindStepCall(nil, call)
	out, err := kind.Run(ctx, call)
	if err != nil {
		return nil
	}
	read := &aheadRead{props: call.Properties, events: c.events}
	if co, ok := out.(svctype.ContextOutputs); ok {
		read.encoded = make(map[string]encoded, len(co))
		for k, v := range co {
			co[k] = normalize(v)
			if read.encoded[k], err = encodeOutput(co[k]); err != nil {
				return nil // the transaction runs the step again and reports it
			}
		}
		read.out = co
	} else {
		read.out = normalize(out)
	}
	if st.reads == nil {
		st.reads = map[string]*aheadRead{}
	}
	st.reads[key] = read
	return nil
}

// kindContext is ctx for resolving a step's properties: the run's organization, and the
// kind's own doc: row limit.
func kindContext(ctx context.Context, orgID string, kind svctype.StepKind) context.Context {
	ctx = svctype.WithOrg(ctx, orgID)
	if kind.DocRows > 0 {
		ctx = svctype.WithDocRows(ctx, kind.DocRows)
	}
	return ctx
}

// ahead finds what a top-level step will run, outside its transaction, when want says the
// kind (after the step's filter) is worth it: the kind, its call with resolved properties,
// and its call key.
func (e *Core) ahead(ctx context.Context, st *runState, step *svctype.Step, index int, c *commit, want func(svctype.StepKind, *svctype.Step) bool) (svctype.StepKind, *svctype.StepCall, string, bool) {
	var none svctype.StepKind
	if index == 0 && st.ent.def.Condition != nil {
		return none, nil, "", false
	}
	vars := e.scope(st, index)
	for step.Filter != nil {
		cond, err := st.ent.condition(step, step.Filter.Condition)
		if err != nil {
			return none, nil, "", false
		}
		ok, err := cond.Eval(ctx, vars)
		if err != nil || (!ok && step.OnFalse == nil) {
			return none, nil, "", false
		}
		if ok {
			break
		}
		step = step.OnFalse
	}
	if _, pauses := e.stepPause(step); pauses || step.Type == LoopStep {
		return none, nil, "", false
	}
	kind, ok, err := e.lookupKind(ctx, nil, st.run.OrgID, step.Type)
	if err != nil || !ok || !want(kind, step) {
		return none, nil, "", false
	}
	key := callKey(st.run.ID, strconv.Itoa(index))
	pm, err := e.resolveProps(ctx, st.run.OrgID, kind, step.Properties, vars, true)
	if err != nil {
		return none, nil, "", false
	}
	if kind.IO != nil {
		c = nil // an IO half's events are the transaction's, after the call
	}
	return kind, e.stepCall(st, step, index, pm, vars, c), key, true
}
