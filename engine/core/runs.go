package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// Execute starts a run of the workflow's current version and returns it in status running;
// a worker executes it. With opts.IdempotencyKey, a call repeating a key seen in the last
// IdempotencyWindow returns the run that key started.
//
// The run's job goes into the jobs table like every other job, and workers claim it in
// turn (fairly across organizations, in order of acceptance within one): a run started
// here gets no shortcut past runs queued earlier or by other processes. What this process
// does keep is the run's state, so that when its own worker claims the job it need not
// read the run back.
func (e *Core) Execute(ctx context.Context, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions) (*svctype.Run, error) {
	for attempt := 0; attempt < 3; attempt++ {
		var run *svctype.Run
		var job *svctype.Job
		err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			var err error
			run, job, err = e.StartTx(ctx, tx, orgID, workflowID, input, opts)
			if err == nil && job != nil && opts.started != nil {
				opts.started(run)
			}
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
			e.Started(run, job, nil)
		}
		return run, nil
	}
	return nil, fmt.Errorf("execute: idempotency key %q kept conflicting", opts.IdempotencyKey)
}

var errKeyRace = errors.New("idempotency key race")

// Started hands a run committed with its first job (StartTx) to this process's worker: its
// state (the run, its definition, its context: the input and extra) is kept for the job's
// first claim, which then reads nothing back, and the worker is woken.
func (e *Core) Started(run *svctype.Run, job *svctype.Job, extra expr.Vars) {
	if ent, err := e.entry(run); err == nil {
		vars := expr.Vars{"input": inputVar(run.Input)}
		maps.Copy(vars, extra)
		own := *run // the worker changes its copy; the caller keeps this one
		e.states.put(job.ID, job.Claims, &runState{run: &own, ent: ent, vars: vars})
	}
	e.Notify()
}

// ExecuteTx is Execute inside the caller's transaction: the run exists only if tx commits.
// An in-process worker learns of it at its next poll.
func (e *Core) ExecuteTx(ctx context.Context, tx storage.Tx, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions) (*svctype.Run, error) {
	run, _, err := e.StartTx(ctx, tx, orgID, workflowID, input, opts)
	return run, err
}

// StartTx starts a run in tx and returns it with its job (nil when an idempotency key
// named an existing run). After the commit, hand a run with a job to Started.
func (e *Core) StartTx(ctx context.Context, tx storage.Tx, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions) (*svctype.Run, *svctype.Job, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, nil, err
	}
	input, err := normalizeInput(input)
	if err != nil {
		return nil, nil, err
	}
	now := e.now().UTC()
	var request string
	if opts.IdempotencyKey != "" {
		if len(opts.IdempotencyKey) > 255 {
			return nil, nil, Invalid("/Idempotency-Key", "at most 255 characters")
		}
		if request, err = idempotencyRequest(workflowID, input); err != nil {
			return nil, nil, err
		}
		id, kept, err := tx.RunIDForIdempotencyKey(ctx, orgID, opts.IdempotencyKey, now)
		if err == nil {
			if kept != "" && kept != request {
				return nil, nil, ErrIdempotencyKeyReused
			}
			run, err := tx.GetRun(ctx, orgID, id)
			return run, nil, err
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, nil, err
		}
	}
	var w *svctype.Workflow
	if opts.WorkflowVersion > 0 {
		w, err = tx.GetWorkflowVersion(ctx, orgID, workflowID, opts.WorkflowVersion)
	} else {
		w, err = tx.GetWorkflow(ctx, orgID, workflowID)
	}
	if err != nil {
		return nil, nil, err
	}
	job := &svctype.Job{OrgID: w.OrgID, Kind: svctype.JobRunStep, RunAt: now}
	run, err := e.startRunTx(ctx, tx, w, input, idempotency{opts.IdempotencyKey, request}, now, job)
	if errors.Is(err, ErrConflict) && opts.IdempotencyKey != "" {
		return nil, nil, errKeyRace
	}
	return run, job, err
}

// idempotencyRequest is the digest kept with an Idempotency-Key: the workflow and the
// input, its objects' keys sorted, so that the same request written in another key order
// is the same request. Only a keyed call pays for it.
func idempotencyRequest(workflowID string, input json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber() // numbers as written: 1.0 and 1 are two requests, as their bytes are
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", Invalid("/input", "is not valid JSON")
	}
	h := sha256.New()
	h.Write([]byte(workflowID))
	h.Write([]byte{0})
	enc := json.NewEncoder(h)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// idempotency is the key a run is started with and the digest of its request.
type idempotency struct{ key, request string }

func normalizeInput(input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 || string(input) == "null" {
		return json.RawMessage(`{}`), nil
	}
	// Checked, not decoded: Started decodes it once for the worker (an 8 MB input cost a
	// quarter of a second more to decode here). Compacting checks it as well: one pass.
	if trimmed := bytes.TrimLeft(input, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(input) {
			return nil, Invalid("/input", "is not valid JSON")
		}
		return nil, Invalid("/input", "must be an object")
	}
	var buf bytes.Buffer
	buf.Grow(len(input))
	if err := json.Compact(&buf, input); err != nil {
		return nil, Invalid("/input", "is not valid JSON")
	}
	// A number is kept as the text it came with (docs/decisions.md, "Numbers kept
	// exactly"), but one no float64 holds is refused: a step that computes with it could
	// not, and a client that sent 1e400 meant something else.
	if ptr, found := jsonnum.OutOfRange(buf.Bytes()); found {
		return nil, Invalid("/input"+ptr, "number out of range (larger than a 64-bit float holds)")
	}
	return buf.Bytes(), nil
}

// startRunTx inserts the run, its input, its first job and workflow_run_started.
func (e *Core) startRunTx(ctx context.Context, tx storage.Tx, w *svctype.Workflow, input json.RawMessage, key idempotency, now time.Time, job *svctype.Job) (*svctype.Run, error) {
	run := &svctype.Run{
		ID: "run-" + uuid.NewString(), OrgID: w.OrgID, WorkflowID: w.ID, WorkflowVersion: w.Version,
		Status: svctype.RunRunning, Input: input, Definition: w.Definition,
		IdempotencyKey: key.key, IdempotencyRequest: key.request, CreatedAt: now, UpdatedAt: now,
	}
	// A large input is stored once, as the context key input: the run's row and
	// workflow_run_started carry a reference to it (on SQLite, a row is rewritten whole at
	// every update of its status, an 8 MB input with it).
	shown := input
	if len(input) > LargeValueBytes {
		shown, _ = json.Marshal(largeRef(run.ID, "input", storage.ContextRef{Size: int64(len(input))}))
		run.Input = shown
	}
	if job == nil {
		job = &svctype.Job{OrgID: w.OrgID, Kind: svctype.JobRunStep, RunAt: now}
	}
	job.RunID = run.ID
	evs := []svctype.Event{e.Event(run, EventRunStarted, events.WorkflowRunStartedEvent{
		RunID: run.ID, WorkflowID: w.ID, InputPayload: json.RawMessage(shown),
	})}
	// One statement on PostgreSQL (storage.RunStarter): the run, its input, its job, its
	// event.
	err := storage.StartRun(ctx, tx, &storage.RunStart{
		Run: run, KeyExpires: now.Add(IdempotencyWindow), Input: input, Job: job, Events: evs,
	})
	run.Input = input // for Started: the worker's first claim reads nothing back
	if err != nil {
		return nil, err
	}
	if err := e.putSearchKeys(ctx, tx, run); err != nil {
		return nil, err
	}
	if err := e.sink(ctx, tx, evs, nil); err != nil {
		return nil, err
	}
	// Counted in the transaction: every way a run starts (execute, a schedule, a form)
	// comes through here; a transaction that then rolls back counts one too many.
	e.meter.Record(MetricRunsStarted, 1)
	return run, nil
}

// GetRun returns a run.
func (e *Core) GetRun(ctx context.Context, orgID, runID string) (*svctype.Run, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetRun(ctx, orgID, runID)
}

// RunStatus returns the status document of a run: its status, context and steps.
func (e *Core) RunStatus(ctx context.Context, orgID, runID string) (*RunStatusDoc, error) {
	return e.RunStatusWith(ctx, orgID, runID, StatusOptions{})
}

// RunStatusWith is RunStatus tuned by opts.
func (e *Core) RunStatusWith(ctx context.Context, orgID, runID string, opts StatusOptions) (*RunStatusDoc, error) {
	run, err := e.GetRun(ctx, orgID, runID)
	if err != nil {
		return nil, err
	}
	return e.statusDoc(ctx, run, opts)
}

// statusDoc is the status document of run, as read or as the commit that ended it wrote it
// (storedRun): its context and step statuses are read.
func (e *Core) statusDoc(ctx context.Context, run *svctype.Run, opts StatusOptions) (*RunStatusDoc, error) {
	orgID, runID := run.OrgID, run.ID
	def, err := e.definition(run)
	if err != nil {
		return nil, err
	}
	var runCtx map[string]any
	if !opts.OmitContext {
		rawCtx, large, err := e.store.ContextBrief(ctx, orgID, runID, LargeValueBytes)
		if err != nil {
			return nil, err
		}
		runCtx = decodeContext(rawCtx)
		for k, ref := range large {
			runCtx[k] = largeRef(run.ID, k, ref)
		}
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

// inputVar is the run's input as its variable: decoded, or a large one kept as its bytes
// and decoded when a step reads into it.
func inputVar(input json.RawMessage) any {
	if len(input) > LargeValueBytes {
		return expr.NewLazy(input)
	}
	var in any
	if err := jsonnum.Unmarshal(input, &in); err != nil {
		// Checked at the start (normalizeInput); a run stored before that check may
		// hold what does not decode, and its steps read an input of nothing.
		return nil
	}
	return in
}

func decodeContext(raw map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(raw)+1)
	for k, v := range raw {
		if len(v) > LargeValueBytes {
			out[k] = expr.NewLazy(v) // decoded when a step reads into it
			continue
		}
		var x any
		if err := jsonnum.Unmarshal(v, &x); err == nil {
			out[k] = x
		}
	}
	return out
}

// Evidence returns the run record: each step's input summary, output, effects and
// decisions, and every effect in order.
func (e *Core) Evidence(ctx context.Context, orgID, runID string) (*Evidence, error) {
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
	if ev.Retry, ev.RetriedBy, err = e.store.RunRetries(ctx, orgID, runID); err != nil {
		return nil, err
	}
	return ev, nil
}

// ListRuns pages an organization's runs, newest first.
func (e *Core) ListRuns(ctx context.Context, orgID string, f storage.RunFilter) (svctype.Page[svctype.Run], error) {
	if err := CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Run]{}, err
	}
	if err := CheckRunFilter(f); err != nil {
		return svctype.Page[svctype.Run]{}, err
	}
	return e.store.ListRuns(ctx, orgID, f)
}

// RunEvents pages a run's outbox events, oldest first.
func (e *Core) RunEvents(ctx context.Context, orgID, runID string, opts svctype.ListOptions) (svctype.Page[svctype.Event], error) {
	if _, err := e.GetRun(ctx, orgID, runID); err != nil {
		return svctype.Page[svctype.Event]{}, err
	}
	return e.store.ListRunEvents(ctx, orgID, runID, opts)
}

// CancelRun ends a running or paused run as cancelled; a run that already ended is
// ErrConflict. A worker in the middle of one of its steps loses its lease and that step's
// uncommitted work is discarded.
func (e *Core) CancelRun(ctx context.Context, orgID, runID, reason string, actor Actor) (*svctype.Run, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	if actor.Type == "" {
		actor.Type = "api"
	}
	var run *svctype.Run
	err := e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
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
		for _, hook := range e.cancelHooks() {
			if err := hook(ctx, tx, run, actor); err != nil {
				return err
			}
		}
		e.finish(run, svctype.RunCancelled, reason)
		if err := e.cancelSteps(ctx, tx, run); err != nil {
			return err
		}
		if err := tx.UpdateRun(ctx, run); err != nil {
			return err
		}
		return e.Emit(ctx, tx, []svctype.Event{e.Event(run, EventRunCancelled, events.WorkflowRunCancelledEvent{
			RunID: run.ID, WorkflowID: run.WorkflowID, Reason: reason, Actor: events.RunActor(actor),
		})}, nil)
	})
	if err != nil {
		return nil, err
	}
	e.meter.Record(MetricRunsLeft, 1, string(svctype.RunCancelled))
	e.traceRunEnd(run)
	e.RunChanged(orgID, runID)
	return run, nil
}

func (e *Core) finish(run *svctype.Run, status svctype.RunStatus, reason string) {
	now := e.now().UTC()
	run.Status, run.Reason, run.UpdatedAt, run.FinishedAt = status, reason, now, &now
}
