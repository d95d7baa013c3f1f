package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// ClaimBatch is how many jobs Work claims at a time.
const ClaimBatch = 16

// MaxAttempts is how many times in a row a run's job may be claimed without committing a
// step before the run fails, naming the step: a step that crashes its worker every time,
// or meets a store error every time, must not be retried forever. Every committed step
// (and every committed foreach element) starts the count again, so a run that makes
// progress never reaches it, however often it is handed between workers.
const MaxAttempts = 25

// Work claims and runs due jobs until none is left, or ctx is done, and returns how many it
// ran. Tests, examples and one-shot tools use it; long-running hosts use hosts/worker.
func (e *Core) Work(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		jobs, err := e.store.ClaimJobs(ctx, ClaimBatch, e.lease)
		if err != nil {
			return n, err
		}
		if len(jobs) == 0 {
			return n, nil
		}
		for i := range jobs {
			if err := e.RunJob(ctx, &jobs[i]); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// RunJob does the work of one claimed job. For a run it commits one step after another until
// the run ends, pauses, or ctx is cancelled (then the job is released for any worker). ctx
// is checked between steps only: a step in progress is finished and committed (drain).
// ErrLeaseLost is not an error here: the run was cancelled or another worker owns the job.
// An error advancing a run is logged with its run_id before it is returned; the job keeps
// its lease until it lapses, and the next claim goes on from what the database holds.
func (e *Core) RunJob(ctx context.Context, job *svctype.Job) error {
	var err error
	switch job.Kind {
	case svctype.JobRunStep:
		err = e.advanceRun(ctx, job)
		var reload *runReloadError
		if err != nil && (!errors.Is(err, ErrLeaseLost) || errors.As(err, &reload)) {
			e.log.Error("advancing run failed; its job is claimed again when the lease lapses", "run_id", job.RunID, "org_id", job.OrgID, "job_id", job.ID, "err", err)
			return err
		}
	case svctype.JobSchedule:
		err = e.fireSchedule(context.WithoutCancel(ctx), job)
	default:
		if h, ok := e.jobHandler(job.Kind); ok {
			err = h(svctype.WithOrg(context.WithoutCancel(ctx), job.OrgID), job)
			break
		}
		err = e.store.InTx(context.WithoutCancel(ctx), func(ctx context.Context, tx storage.Tx) error {
			e.log.Warn("dropping job of unknown kind", "kind", job.Kind, "job_id", job.ID)
			return tx.CompleteJob(ctx, job)
		})
	}
	if errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return err
}

// runState is a run being advanced by one worker: its definition and its context as of the
// last commit.
type runState struct {
	run  *svctype.Run
	ent  *defEntry
	vars expr.Vars
	// calls are the calls made for the unit of work in progress (io.go), by idempotency
	// key; they are dropped when the unit commits or fails.
	calls map[string]*callResult
	// reads are the read-only steps run ahead of their transaction (workAhead), by the
	// same key; dropped with calls.
	reads map[string]*aheadRead
}

// aheadRead is a step run ahead of its transaction: its resolved properties, its output
// (normalized), the events it emitted, and the JSON of each ContextOutputs entry, encoded
// there too so that the transaction only writes bytes.
type aheadRead struct {
	props   map[string]any
	out     any
	events  []svctype.Event
	encoded map[string]encoded
}

func (e *Core) loadRun(ctx context.Context, job *svctype.Job) (*runState, error) {
	run, err := e.store.GetRun(ctx, job.OrgID, job.RunID)
	if err != nil {
		return nil, err
	}
	ent, err := e.entry(run)
	if err != nil {
		return nil, err
	}
	raw, err := e.store.GetContext(ctx, job.OrgID, job.RunID)
	if err != nil {
		return nil, err
	}
	vars := expr.Vars(decodeContext(raw))
	return &runState{run: run, ent: ent, vars: vars}, nil
}

func (e *Core) advanceRun(ctx context.Context, job *svctype.Job) error {
	commitCtx := context.WithoutCancel(ctx)
	claimed := time.Now()
	st := e.states.take(job.ID, job.Claims)
	var err error
	if st == nil {
		st, err = e.loadRun(commitCtx, job)
	}
	if errors.Is(err, ErrNotFound) {
		return e.store.InTx(commitCtx, func(ctx context.Context, tx storage.Tx) error { return tx.CompleteJob(ctx, job) })
	}
	if err != nil {
		return err
	}
	if st.run.Status != svctype.RunRunning {
		return e.store.InTx(commitCtx, func(ctx context.Context, tx storage.Tx) error { return tx.CompleteJob(ctx, job) })
	}
	// Whatever ends or pauses the run below (a commit, a failure) wakes its waiters. A run
	// handed back to the queue is running, and its state may already be another worker's:
	// not read again here.
	yielded := false
	defer func() {
		if !yielded && st.run.Status != svctype.RunRunning {
			e.meter.Record(MetricRunsLeft, 1, string(st.run.Status))
			if st.run.Status.Terminal() {
				e.traceRunEnd(st.run)
			}
			e.RunChanged(st.run.OrgID, st.run.ID)
		}
	}()
	commitCtx, slice := e.startSlice(commitCtx, job, st)
	units := 0
	defer func() { endSlice(slice, st, units, yielded, ctx.Err() != nil) }()
	if job.Attempts > MaxAttempts {
		// Every worker that took this run lost it without committing (crashes, or an error
		// of the store): stop retrying and say so, rather than loop forever.
		i := min(st.run.Cursor.Step, len(st.ent.def.Actions)-1)
		step := &svctype.Step{Type: "run"}
		if i >= 0 {
			step = &st.ent.def.Actions[i]
		}
		return e.failRun(commitCtx, job, st, max(i, 0), step,
			fmt.Errorf("gave up after %d attempts to run this step; the workers' logs say why", job.Attempts-1))
	}
	// Every commit that ends or pauses the run also completes its job.
	stepped := false
	for st.run.Status == svctype.RunRunning {
		if ctx.Err() != nil {
			// Draining: hand the run to whichever worker claims it next, at its place in
			// the queue.
			return e.store.InTx(commitCtx, func(ctx context.Context, tx storage.Tx) error {
				return tx.RenewJob(ctx, job, 0)
			})
		}
		// Every claim commits at least one unit of work before its slice can end it, so a
		// run always progresses (and its attempts restart) however short the slice.
		if stepped && time.Since(claimed) >= e.slice {
			yielded = true
			return e.yieldRun(commitCtx, job, st)
		}
		began := time.Now()
		at := st.run.Cursor.Step
		stepCtx, span := e.startStep(commitCtx, st)
		chained, err := e.stepOnce(stepCtx, job, st)
		endStep(span, st, err)
		if err != nil {
			return err
		}
		for _, s := range chained {
			e.traceChained(commitCtx, st, at, s)
		}
		stepped, units = true, units+1
		took, typ := time.Since(began), e.stepType(st)
		if len(chained) > 0 {
			typ = st.ent.def.Actions[at].Type // the unit's first step names it
		}
		e.meter.Record(MetricStepSeconds, took.Seconds(), typ)
		if e.obs != nil {
			e.obs(typ, took)
		}
	}
	return nil
}

// keepLease renews job's lease inside a step's transaction and, because it commits with the
// step, restarts the job's attempt count: Attempts counts the claims since the last commit.
func (e *Core) keepLease(ctx context.Context, tx storage.Tx, job *svctype.Job) error {
	job.Attempts = 0
	return tx.RenewJob(ctx, job, e.lease)
}

// yieldRun hands a run that has used its slice back to the queue, behind the jobs that are
// due now, so that every queued run (of this organization or another) gets its turn before
// this one continues. Its state stays in memory for this process's next claim of it.
func (e *Core) yieldRun(ctx context.Context, job *svctype.Job, st *runState) error {
	job.RunAt = time.Time{} // the store's now: after every job due now
	err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.RenewJob(ctx, job, 0)
	})
	if err == nil {
		e.states.put(job.ID, job.Claims, st)
		e.Notify()
	}
	return err
}

// scope returns the variables a step at index sees.
func (e *Core) scope(st *runState, index int) expr.Vars {
	v := make(expr.Vars, len(st.vars)+4)
	maps.Copy(v, st.vars)
	v["__run_id"] = st.run.ID
	v["__workflow_id"] = st.run.WorkflowID
	v["__step"] = index
	v["now"] = e.now().UTC().Format(time.RFC3339Nano)
	return v
}

// stepFailure is a step's own error: the run fails with it, the step's work is rolled back.
type stepFailure struct{ err error }

func (f *stepFailure) Error() string { return f.err.Error() }
func (f *stepFailure) Unwrap() error { return f.err }

// commit holds what one step commit writes besides the step's own table effects.
type commit struct {
	rec     svctype.StepRecord
	events  []svctype.Event
	outputs map[string]any
	// encoded holds outputs' JSON encoded ahead of the transaction, by key.
	encoded map[string]encoded
	// inner marks the steps of a foreach element: they emit no step.* events of their own.
	inner bool
	// at is the position of the step executing inside foreach elements ("2/5/0": step 2,
	// element 5, sub-step 0), empty at the top level; it makes the calls' idempotency keys.
	at string
	// earlier are the commits of the steps before this one in the same transaction
	// (chainSteps): their outputs are not in the run's variables until it commits.
	earlier []*commit
	// renew says the lease of the unit's job is kept by the commit's writes
	// (storage.StepCommit.Renew), not at the unit's start (keepLease).
	renew bool
}

// setEncoded gives the JSON of the output that setOutput will set under key, encoded
// before the transaction.
func (c *commit) setEncoded(key string, b encoded) {
	if c.encoded == nil {
		c.encoded = map[string]encoded{}
	}
	c.encoded[key] = b
}

// complete records a step's status in c and, when it completed, its output under key.
func (c *commit) complete(status svctype.StepStatus, key string, out any) {
	c.rec.Status = status
	if status == svctype.StepCompleted {
		applyOutput(c.setOutput, key, out)
		c.rec.Output = summarize(out)
	}
}

func (c *commit) setOutput(key string, v any) {
	if key == "" {
		return
	}
	if c.outputs == nil {
		c.outputs = map[string]any{}
	}
	c.outputs[key] = v
}

// stepOnce commits the next unit of work of a run: the top-level gate, one step and the
// quick steps after it (chainSteps), or one batch of a foreach. It returns the steps
// committed with the unit's first.
func (e *Core) stepOnce(ctx context.Context, job *svctype.Job, st *runState) ([]chainedStep, error) {
	def := st.ent.def
	i := st.run.Cursor.Step
	if i >= len(def.Actions) {
		return nil, e.commitStep(ctx, job, st, &commit{})
	}
	step := &def.Actions[i]
	if _, pauses := e.stepPause(step); step.Type == LoopStep && !pauses {
		return nil, e.loopOnce(ctx, job, st, i, step)
	}
	started := e.now().UTC()
	rec := svctype.StepRecord{RunID: st.run.ID, Index: i, Type: step.Type, Status: svctype.StepCompleted, StartedAt: &started}
	c := &commit{}
	if err := e.workAhead(ctx, job, st, step, i); err != nil {
		return nil, e.afterCommit(ctx, job, st, c, i, step, err)
	}
	began := time.Now() // the chain's time counts from here: its work outside is done
	snapshot := *st.run
	var chained []chainedStep
	stop := len(def.Actions)
	for {
		err := e.unit(ctx, job, st, func(ctx context.Context, tx storage.Tx) error {
			chained = nil
			if err := e.stepUnit(ctx, tx, job, st, step, i, rec, c); err != nil {
				return err
			}
			return e.chainSteps(ctx, tx, job, st, began, stop, c, &chained)
		})
		var broken *chainBroken
		if errors.As(err, &broken) {
			// A step after the first did not commit with it (it failed, or the store
			// refused its writes): the unit rolled back whole. It runs again with its
			// chain stopping before that step, which then fails, or succeeds, in a unit
			// of its own, as it would have without chains.
			*st.run = snapshot
			stop = broken.index
			continue
		}
		if err = e.afterCommit(ctx, job, st, c, i, step, err); err != nil {
			return nil, err
		}
		for _, s := range chained {
			e.applyOutputs(st, s.c)
		}
		return chained, nil
	}
}

// stepUnit runs step i of the run in tx and writes its commit, as c.
func (e *Core) stepUnit(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, step *svctype.Step, i int, rec svctype.StepRecord, c *commit) error {
	def := st.ent.def
	*c = commit{rec: rec}
	// A store that commits a step in one statement keeps the job's lease in it: one
	// statement fewer a step. The gate may end the run before any step: it renews first.
	_, oneStatement := tx.(storage.StepCommitter)
	c.renew = oneStatement && !(i == 0 && def.Condition != nil)
	if !c.renew {
		if err := e.keepLease(ctx, tx, job); err != nil {
			return err
		}
	}
	if i == 0 && def.Condition != nil {
		ok, err := e.gate(ctx, tx, job, st, c)
		if err != nil || !ok {
			return err
		}
	}
	vars := e.scope(st, i)
	out, key, status, err := e.execStep(ctx, tx, st, step, i, vars, c)
	if paused, keep := isPause(err); paused {
		if c.renew {
			// The job's row before the run's, as a cancel takes them: pauseRun
			// updates the run before it completes the job.
			if err := e.keepLease(ctx, tx, job); err != nil {
				return err
			}
		}
		return e.pauseRun(ctx, tx, job, st, c, keep)
	}
	if err != nil {
		return &stepFailure{err}
	}
	c.complete(status, key, out)
	return e.writeCommit(ctx, tx, job, st, c, i+1)
}

// gate evaluates definition.condition before the first step. When false the run ends as
// condition_not_met inside tx and gate returns false.
func (e *Core) gate(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, c *commit) (bool, error) {
	cond, err := st.ent.condition(st.ent.def, st.ent.def.Condition)
	if err == nil {
		var ok bool
		ok, err = cond.Eval(ctx, e.scope(st, 0))
		if err == nil {
			c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "workflow_condition", Result: ok})
			if ok {
				return true, nil
			}
		}
	}
	if err != nil {
		return false, &stepFailure{fmt.Errorf("definition.condition: %w", err)}
	}
	c.rec.Status = svctype.StepSkipped
	if c.rec.Type != "" { // a workflow without steps has no step to mark
		if err := tx.PutStep(ctx, st.run.OrgID, &c.rec); err != nil {
			return false, err
		}
	}
	e.finish(st.run, svctype.RunConditionNotMet, "definition.condition evaluated false")
	if err := tx.UpdateRun(ctx, st.run); err != nil {
		return false, err
	}
	if err := e.Emit(ctx, tx, []svctype.Event{e.Event(st.run, EventRunCompleted, map[string]any{
		"run_id": st.run.ID, "workflow_id": st.run.WorkflowID,
		"result": map[string]any{"status": svctype.RunConditionNotMet},
	})}, nil); err != nil {
		return false, err
	}
	return false, tx.CompleteJob(ctx, job)
}

// execStep runs one step (filter, onFalse, kind) inside tx and returns its output, the
// context key for it, and the step status.
func (e *Core) execStep(ctx context.Context, tx storage.Tx, st *runState, step *svctype.Step, index int, vars expr.Vars, c *commit) (any, string, svctype.StepStatus, error) {
	if step.Filter != nil {
		cond, err := st.ent.condition(step, step.Filter.Condition)
		if err != nil {
			return nil, "", "", fmt.Errorf("filter.condition: %w", err)
		}
		ok, err := cond.Eval(ctx, vars)
		if err != nil {
			return nil, "", "", fmt.Errorf("filter.condition: %w", err)
		}
		c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "filter", Result: ok})
		if !ok {
			if step.OnFalse == nil {
				return nil, "", svctype.StepSkipped, nil
			}
			c.rec.Decisions = append(c.rec.Decisions, svctype.Decision{Kind: "on_false", Result: step.OnFalse.Type})
			return e.execStep(ctx, tx, st, step.OnFalse, index, vars, c)
		}
	}
	if k, ok := e.stepPause(step); ok {
		return nil, "", "", e.pause(ctx, tx, st, k, step, index, vars, c)
	}
	if step.Type == LoopStep {
		// A loop nested in a foreach element runs inline, checkpointed with its element.
		out, err := e.inlineLoop(ctx, tx, st, step, index, vars, c)
		return out, loopResultKey(step), svctype.StepCompleted, err
	}
	kind, ok, err := e.lookupKind(ctx, tx, st.run.OrgID, step.Type)
	if err != nil {
		return nil, "", "", err
	}
	if !ok {
		return nil, "", "", fmt.Errorf("step type %q is neither a built-in primitive nor a registered action", step.Type)
	}
	read := st.reads[callKey(st.run.ID, c.position(index))]
	if c.inner {
		read = nil
	}
	var pm map[string]any
	if read != nil {
		pm = read.props
	} else {
		var err error
		if pm, err = e.resolveProps(ctx, st.run.OrgID, kind, step.Properties, vars, !c.inner); err != nil {
			if kind.FailedEvent != "" {
				err = svctype.FailWithEvent(err, kind.FailedEvent, nil)
			}
			return nil, "", "", err
		}
	}
	if c.rec.InputSummary == nil {
		c.rec.InputSummary = summarize(pm)
	}
	if !c.inner {
		c.events = append(c.events, e.Event(st.run, EventStepStarted, map[string]any{
			"run_id": st.run.ID, "step_index": index, "step_type": step.Type,
		}))
	}
	call := e.stepCall(st, step, index, pm, vars, c)
	call.Tables = cachedTables{TableStore: tx, cache: &e.tables}
	var out any
	if read != nil {
		// Run ahead of this transaction (workAhead): its output and its events.
		// Its events happened before this transaction began: stamped no earlier than the
		// step.started event just made, so that a run's events keep their order in time.
		at := e.now().UTC()
		if n := len(c.events); n > 0 {
			at = c.events[n-1].Timestamp
		}
		for _, ev := range read.events {
			if ev.Timestamp.Before(at) {
				ev.Timestamp = at
			}
			c.events = append(c.events, ev)
		}
		for k, b := range read.encoded {
			if k != step.OutputKey {
				c.setEncoded(k, b)
			}
		}
		c.events = append(c.events, e.Event(st.run, EventStepDone, map[string]any{"run_id": st.run.ID, "step_index": index}))
		return read.out, step.OutputKey, svctype.StepCompleted, nil
	} else if kind.IO != nil {
		key := callKey(st.run.ID, c.position(index))
		r, ok := st.calls[key]
		if !ok {
			call.Secret = e.secretFor(st.run.OrgID)
			return nil, "", "", &needIO{key: key, kind: kind, call: call}
		}
		c.rec.Effects = append(c.rec.Effects, r.effect())
		if r.err != nil {
			return nil, "", "", r.err
		}
		call.IdempotencyKey, call.Try, call.IOResult = key, r.intent.Tries, r.out
		out = r.out
	}
	if kind.Run != nil {
		var err error
		if out, err = kind.Run(ctx, call); err != nil {
			return nil, "", "", err
		}
	}
	if co, ok := out.(svctype.ContextOutputs); ok {
		for k, v := range co {
			co[k] = normalize(v)
		}
	} else {
		out = normalize(out)
	}
	if !c.inner {
		c.events = append(c.events, e.Event(st.run, EventStepDone, map[string]any{"run_id": st.run.ID, "step_index": index}))
	}
	return out, step.OutputKey, svctype.StepCompleted, nil
}

// stepCall is what a step kind gets; its Emit and AddEffect write into c (nothing when c is
// nil), and it has no Tables: the caller in a transaction sets them.
func (e *Core) stepCall(st *runState, step *svctype.Step, index int, pm map[string]any, vars expr.Vars, c *commit) *svctype.StepCall {
	var call *svctype.StepCall
	if c == nil {
		call = svctype.NewStepCall(nil, nil)
	} else {
		call = svctype.NewStepCall(
			func(name string, payload map[string]any) {
				if payload == nil {
					payload = map[string]any{}
				}
				fillStepFields(name, payload, map[string]any{"run_id": st.run.ID, "step_index": index})
				c.events = append(c.events, e.Event(st.run, name, payload))
			},
			func(eff svctype.Effect) { c.rec.Effects = append(c.rec.Effects, eff) },
		)
	}
	call.OrgID, call.RunID, call.WorkflowID = st.run.OrgID, st.run.ID, st.run.WorkflowID
	call.Index, call.Type, call.Properties, call.Raw, call.Vars = index, step.Type, pm, step.Properties, vars
	call.Resolve = func(ctx context.Context, v any, vars map[string]any) (any, error) {
		return e.eval.Resolve(svctype.WithOrg(ctx, st.run.OrgID), v, vars)
	}
	call.Logger = e.log.With("org_id", st.run.OrgID, "run_id", st.run.ID, "step_index", index, "step_type", step.Type)
	return call
}

// writeCommit writes a finished top-level step and moves the cursor to next, ending the run
// when next is past the last step.
func (e *Core) writeCommit(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, c *commit, next int) error {
	orgID, runID := st.run.OrgID, st.run.ID
	// The commit's writes go to the store together (storage.CommitStep: one statement on
	// PostgreSQL); a large value's parts go first, on their own.
	sc := &storage.StepCommit{OrgID: orgID, Run: st.run}
	for k, v := range c.outputs {
		b, ok := c.encoded[k]
		var err error
		if !ok {
			b, err = encodeOutput(v)
		}
		if err != nil {
			return &stepFailure{fmt.Errorf("output %q is not JSON: %w", k, err)}
		}
		if !b.large() && len(b.whole) <= LargeValueBytes {
			sc.Context = append(sc.Context, storage.ContextPut{Key: k, Value: b.whole})
			continue
		}
		if err := putValue(ctx, tx, orgID, runID, k, b); err != nil {
			return err
		}
	}
	if c.rec.Type != "" {
		now := e.now().UTC()
		c.rec.FinishedAt = &now
		sc.Step = &c.rec
	}
	st.run.Cursor = svctype.Cursor{Step: next}
	st.run.UpdatedAt = e.now().UTC()
	done := next >= len(st.ent.def.Actions)
	if done {
		e.finish(st.run, svctype.RunCompleted, "")
		c.events = append(c.events, e.Event(st.run, EventRunCompleted, map[string]any{
			"run_id": runID, "workflow_id": st.run.WorkflowID,
			"result": map[string]any{"status": svctype.RunCompleted, "outputs": e.outputs(st, c)},
		}))
		sc.Complete = job
	} else if c.renew {
		job.Attempts = 0
		sc.Renew, sc.Lease = job, e.lease
	}
	sc.Events = c.events
	if err := storage.CommitStep(ctx, tx, sc); err != nil {
		return err
	}
	return e.sink(ctx, tx, c.events, nil)
}

// outputs is the run's context after c, without the input, as events carry it: a value
// larger than EventValueNodes JSON values is carried as a reference to the route that
// serves it ({result_reference, truncated, length?}), so that ending a run whose matcher
// produced 50,000 pairs does not copy them into the outbox (and every webhook body).
func (e *Core) outputs(st *runState, c *commit) map[string]any {
	out := make(map[string]any, len(st.vars)+len(c.outputs))
	put := func(k string, v any) {
		if k == "input" {
			return
		}
		if !withinNodes(v, EventValueNodes) {
			ref := map[string]any{"result_reference": "/runs/" + st.run.ID + "/context/" + k, "truncated": true}
			if n, ok := arrayLength(v); ok {
				ref["length"] = n
			}
			out[k] = ref
			return
		}
		// Small enough to carry: a value held as bytes is carried decoded, as it would be
		// had it never been (the event is the same whichever worker ended the run).
		out[k] = materialize(v)
	}
	for k, v := range st.vars {
		put(k, v)
	}
	for _, p := range c.earlier {
		for k, v := range p.outputs {
			put(k, v)
		}
	}
	for k, v := range c.outputs {
		put(k, v)
	}
	return out
}

// EventValueNodes is how many JSON values (objects, arrays, scalars, nested) one context
// value may hold to be carried whole in workflow_run_completed and workflow_run_failed.
const EventValueNodes = 10_000

// withinNodes reports whether v holds at most budget JSON values, stopping early.
func withinNodes(v any, budget int) bool {
	left := budget
	var walk func(v any) bool
	walk = func(v any) bool {
		left--
		if left < 0 {
			return false
		}
		switch x := v.(type) {
		case svctype.EncodedArray:
			if x.Len() > left {
				return false
			}
			return walk(materialize(x))
		case *expr.Lazy:
			// Count its values in its bytes, up to the budget, without decoding them.
			n := 0
			var count func(r gjson.Result) bool
			count = func(r gjson.Result) bool {
				n++
				if n > left+1 {
					return false
				}
				if r.IsObject() || r.IsArray() {
					ok := true
					r.ForEach(func(_, el gjson.Result) bool { ok = count(el); return ok })
					return ok
				}
				return true
			}
			ok := count(gjson.ParseBytes(x.Raw()))
			left -= n - 1
			return ok && left >= 0
		case map[string]any:
			for _, el := range x {
				if !walk(el) {
					return false
				}
			}
		case []any:
			if len(x) > left {
				return false
			}
			for _, el := range x {
				if !walk(el) {
					return false
				}
			}
		}
		return true
	}
	return walk(v)
}

// commitStep commits c as the step that ends the run (used when the cursor is already past
// the last step, e.g. an empty workflow).
func (e *Core) commitStep(ctx context.Context, job *svctype.Job, st *runState, c *commit) error {
	snapshot := *st.run
	err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := e.keepLease(ctx, tx, job); err != nil {
			return err
		}
		if st.run.Cursor.Step == 0 && st.ent.def.Condition != nil {
			// A workflow without steps still has its gate.
			if ok, err := e.gate(ctx, tx, job, st, c); err != nil || !ok {
				return err
			}
		}
		return e.writeCommit(ctx, tx, job, st, c, st.run.Cursor.Step)
	})
	if err != nil {
		*st.run = snapshot
	}
	var sf *stepFailure
	if errors.As(err, &sf) {
		return e.failRun(ctx, job, st, st.run.Cursor.Step, &svctype.Step{Type: "definition.condition"}, sf.err)
	}
	return err
}

// afterCommit applies a committed step to the in-memory state, or fails the run when the
// step itself failed.
func (e *Core) afterCommit(ctx context.Context, job *svctype.Job, st *runState, c *commit, i int, step *svctype.Step, err error) error {
	var sf *stepFailure
	switch {
	case err == nil:
		e.applyOutputs(st, c)
		return nil
	case errors.As(err, &sf):
		return e.failRun(ctx, job, st, i, step, sf.err)
	default:
		// The transaction rolled back: reload the run so memory matches the database. When
		// that fails too, memory may not match it: the caller stops advancing the run (st
		// is dropped) and the job is claimed again when its lease lapses.
		fresh, lerr := e.loadRun(ctx, job)
		if lerr != nil {
			return &runReloadError{runID: st.run.ID, commit: err, reload: lerr}
		}
		*st = *fresh
		return err
	}
}

// applyOutputs sets a committed step's outputs in the run's variables.
func (e *Core) applyOutputs(st *runState, c *commit) {
	if st.run.Status != svctype.RunRunning {
		// Ended or paused: no step reads these variables again (a paused run is loaded
		// from the store when it resumes). A large output stored in parts would be joined
		// into one buffer for nothing (a matcher's million pairs: 170 MB more at the
		// run's end).
		return
	}
	for k, v := range c.outputs {
		st.vars[k] = varValue(v, c.encoded[k])
	}
}

// runReloadError is a step commit that failed followed by a reload of its run that failed:
// both errors are kept (errors.Is finds either), and the message says what the worker did.
type runReloadError struct {
	runID  string
	commit error
	reload error
}

func (e *runReloadError) Error() string {
	return fmt.Sprintf("run %s: committing a step failed (%v) and reloading the run failed too (%v): "+
		"stopped advancing it; its job is claimed again when the lease lapses", e.runID, e.commit, e.reload)
}

func (e *runReloadError) Unwrap() []error { return []error{e.commit, e.reload} }

// failRun ends the run as failed in a transaction of its own; the failing step's work was
// rolled back, earlier steps' committed effects stay.
func (e *Core) failRun(ctx context.Context, job *svctype.Job, st *runState, i int, step *svctype.Step, cause error) error {
	reason := fmt.Sprintf("step %d (%s): %s", i, step.Type, cause.Error())
	calls := st.calls
	st.calls = nil
	return e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.RenewJob(ctx, job, e.lease); err != nil {
			return err
		}
		now := e.now().UTC()
		rec := svctype.StepRecord{RunID: st.run.ID, Index: i, Type: step.Type, Status: svctype.StepFailed, Error: cause.Error(), FinishedAt: &now}
		if step.Type == LoopStep && st.run.Cursor.Loop != nil {
			// The elements committed before the failure made their effects (their rows are
			// in the tables): the failed step's record keeps them, as endLoop would have.
			items, err := tx.ListLoopItems(ctx, st.run.OrgID, st.run.ID, i)
			if err != nil {
				return err
			}
			for _, r := range items {
				var it loopItem
				if err := json.Unmarshal(r, &it); err != nil {
					return fmt.Errorf("loop item: %w", err)
				}
				rec.Effects = append(rec.Effects, it.Effects...)
			}
		}
		for _, key := range slices.Sorted(maps.Keys(calls)) {
			rec.Effects = append(rec.Effects, calls[key].effect())
		}
		if err := tx.PutStep(ctx, st.run.OrgID, &rec); err != nil {
			return err
		}
		if len(calls) > 0 {
			if err := tx.CloseCalls(ctx, st.run.OrgID, st.run.ID); err != nil {
				return err
			}
		}
		e.finish(st.run, svctype.RunFailed, reason)
		if err := tx.UpdateRun(ctx, st.run); err != nil {
			return err
		}
		events := []svctype.Event{}
		var withEvent *svctype.StepFailedError
		if errors.As(cause, &withEvent) && withEvent.Event != "" {
			payload := maps.Clone(withEvent.Payload)
			if payload == nil {
				payload = map[string]any{}
			}
			fillStepFields(withEvent.Event, payload, map[string]any{"run_id": st.run.ID, "step_index": i, "error": cause.Error()})
			events = append(events, e.Event(st.run, withEvent.Event, payload))
		}
		if step.Type == LoopStep {
			mode, _ := step.Properties["mode"].(string)
			events = append(events, e.Event(st.run, EventLoopFailed, map[string]any{
				"run_id": st.run.ID, "step_id": strconv.Itoa(i), "step_index": i, "mode": mode, "error": cause.Error(),
			}))
		}
		events = append(events,
			e.Event(st.run, EventStepFailed, map[string]any{
				"run_id": st.run.ID, "step_index": i, "error": map[string]any{"message": cause.Error()},
			}),
			e.Event(st.run, EventRunFailed, map[string]any{
				"run_id": st.run.ID, "workflow_id": st.run.WorkflowID, "reason": reason, "context": e.outputs(st, &commit{}),
			}))
		if err := e.Emit(ctx, tx, events, nil); err != nil {
			return err
		}
		return tx.CompleteJob(ctx, job)
	})
}

// summaryLimit bounds the input summary and output copy kept in a step record.
const summaryLimit = 4 << 10

// summarize keeps v for the evidence when its JSON is small, else a marker with its size.
func summarize(v any) json.RawMessage {
	switch x := v.(type) {
	case svctype.EncodedArray:
		out, _ := json.Marshal(map[string]any{"truncated": true, "length": x.Len()})
		return out
	case *expr.Lazy:
		out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(x.Raw())})
		return out
	case svctype.RawJSON:
		out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(x)})
		return out
	case svctype.SourceRecords:
		out, _ := json.Marshal(map[string]any{"truncated": true, "length": x.Len(), "bytes": x.Size()})
		return out
	case svctype.ContextOutputs:
		m := make(map[string]json.RawMessage, len(x))
		for k, el := range x {
			m[k] = summarize(el)
		}
		out, _ := json.Marshal(m)
		return out
	case []any:
		// A long array is summarised by its length without encoding it.
		if len(x) > 256 {
			out, _ := json.Marshal(map[string]any{"truncated": true, "length": len(x)})
			return out
		}
	case map[string]any:
		// An object holding a long array (a matcher's resolved legs) is summarised member by
		// member, so that the array is not encoded only to be found too long.
		for _, el := range x {
			arr, ok := el.([]any)
			_, raw := el.(svctype.RawJSON)
			_, src := el.(svctype.SourceRecords)
			if raw || src || ok && len(arr) > 256 {
				return summarize(svctype.ContextOutputs(x))
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) <= summaryLimit {
		return b
	}
	m := map[string]any{"truncated": true, "bytes": len(b)}
	if arr, ok := v.([]any); ok {
		m["length"] = len(arr)
	}
	out, _ := json.Marshal(m)
	return out
}

// normalize turns a step's Go output into plain JSON values (maps, slices, float64) so that
// paths see the same shapes in memory as after a reload from the database.
func normalize(v any) any {
	switch v.(type) {
	case *expr.Lazy, svctype.EncodedArray:
		return v // JSON already, kept as bytes
	case nil, string, bool, float64, json.Number, map[string]any, []any:
		if !containsGoTypes(v) {
			return v
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := jsonnum.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func containsGoTypes(v any) bool {
	switch x := v.(type) {
	case nil, string, bool, float64, json.Number, *expr.Lazy, svctype.EncodedArray:
		return false
	case map[string]any:
		for _, el := range x {
			if containsGoTypes(el) {
				return true
			}
		}
		return false
	case []any:
		for _, el := range x {
			if containsGoTypes(el) {
				return true
			}
		}
		return false
	}
	return true
}

// stepType names the step a run's cursor was on, for observers.
func (e *Core) stepType(st *runState) string {
	i := st.run.Cursor.Step - 1
	if st.run.Cursor.Loop != nil {
		i++
	}
	if i >= 0 && i < len(st.ent.def.Actions) {
		return st.ent.def.Actions[i].Type
	}
	return ""
}

// applyOutput stores a step's output: each entry of a ContextOutputs under its own key, and
// the output itself under the step's outputKey.
func applyOutput(set func(key string, v any), key string, out any) {
	if co, ok := out.(svctype.ContextOutputs); ok {
		for k, v := range co {
			set(k, v)
		}
		out = map[string]any(co)
	}
	set(key, out)
}
