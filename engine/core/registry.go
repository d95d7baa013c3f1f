package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/svcflow/svcflow/engine/steps"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// The seam. A feature plugs into the run core by registering on a Core, before the Core
// does any work (engine.New registers every built-in feature):
//
//   - step kinds: Environment().RegisterStepKind (a kind with an IO half is an outside call;
//     a kind with an Action form can be the kind of a registered action);
//   - step sources: RegisterStepSource, for step types an organization defines (its
//     registered actions);
//   - step call hooks: OnStepCall, which give a step kind what a feature keeps in the step's
//     transaction (custom tables: StepCall.Tables);
//   - pause kinds: RegisterPause, for steps that stop their run until something happens
//     (approvals, forms);
//   - loop modes: RegisterLoopMode, for a loop that is not a foreach (an agent's);
//   - job handlers: RegisterJob, for every job kind but run steps and schedules;
//   - event sinks: RegisterSink, told of every event in the transaction that emits it
//     (webhook fan-out);
//   - cancel hooks: OnCancel, run in the transaction that cancels a run;
//   - workflow delete hooks: OnDeleteWorkflow, which may refuse a workflow's deletion;
//   - the secret source: SetSecrets, what StepCall.Secret reads (org config);
//   - prefix resolvers: Evaluator().RegisterPrefix (doc:).
//
// What the core offers features in return is exported beside it: Emit, StartTx and
// Started, ResumeTx and Resumed, OutsideCall, PauseCall.Outside, BindStepCall. A feature
// that needs to know another's step types asks the registry (IsStepType, LoopModes,
// PauseTypes) rather than naming them: the core and every feature know a step type only
// by what was registered under its name.

// JobHandler runs one claimed job of a registered kind. Its ctx carries the job's
// organization (svctype.OrgFrom) and is not cancelled when the worker drains.
type JobHandler func(ctx context.Context, job *svctype.Job) error

// EventSubject is what an event is about when sinks filter on it: a document's content
// type and tags (document.* events). Run events have none.
type EventSubject struct {
	ContentType string
	Tags        []string
}

// EventSink is told of events in the transaction that appends them to the outbox; an error
// rolls the transaction back (the events and their cause with it).
type EventSink func(ctx context.Context, tx storage.Tx, evs []svctype.Event, subject *EventSubject) error

// StepSource supplies the step kinds of step types an organization defines itself.
type StepSource interface {
	// StepKind returns the kind that runs stepType for orgID, reading on a miss of its cache
	// through tx (the step's transaction) or, when tx is nil (outside one), through its own
	// store; false when the organization has nothing of that name.
	StepKind(ctx context.Context, tx storage.Tx, orgID, stepType string) (svctype.StepKind, bool, error)
	// Defines reports whether the organization has something of that name now (a
	// definition naming it is valid without a warning).
	Defines(ctx context.Context, orgID, stepType string) bool
}

// CancelHook runs in the transaction that cancels run (its status still the one it had:
// running or paused), to close what the run waits for and remove its timers.
type CancelHook func(ctx context.Context, tx storage.Tx, run *svctype.Run, actor svctype.Actor) error

// DeleteWorkflowHook runs in the transaction that deletes a workflow, before anything is
// deleted; an error refuses the deletion (a feature that owns the workflow says so).
type DeleteWorkflowHook func(ctx context.Context, tx storage.Tx, orgID, workflowID string) error

// StepCallHook gives a step kind what a feature keeps in the step's transaction: it sets
// fields of call before the kind's Run half runs (custom tables set StepCall.Tables). tx
// is the step's transaction, or nil for a read-only step run ahead of it, outside any
// transaction (the feature reads through its own store then). An IO half gets nothing.
type StepCallHook func(tx storage.Tx, call *svctype.StepCall)

// SecretSource returns the plaintext of one of an organization's secrets (org config) for
// an outside call; a missing key is an error wrapping svctype.ErrNotFound.
type SecretSource func(ctx context.Context, orgID, key string) (string, error)

type registry struct {
	mu               sync.RWMutex
	jobs             map[string]JobHandler
	pauses           map[string]PauseKind
	sinks            []EventSink
	sources          []StepSource
	stepCalls        []StepCallHook
	cancels          []CancelHook
	deletes          []DeleteWorkflowHook
	planners         []CallPlanner
	deliveryPlanners []DeliveryPlanner
	secrets          SecretSource
	// reserved are step types taken whatever the Environment holds (IsStepType).
	reserved map[string]bool
}

func newRegistry() registry {
	// The built-in primitives keep their names in an engine whose Environment leaves them
	// out (NewEmptyEnvironment): an action of that name would be shadowed by them the day
	// the embedding program adds them.
	reserved := map[string]bool{LoopStep: true}
	for name := range steps.Builtins() {
		reserved[name] = true
	}
	return registry{jobs: map[string]JobHandler{}, pauses: map[string]PauseKind{}, reserved: reserved}
}

// RegisterJob makes h run the jobs of kind. The run core's own kinds may not be taken.
func (e *Core) RegisterJob(kind string, h JobHandler) {
	if kind == svctype.JobRunStep || kind == svctype.JobSchedule {
		panic(fmt.Sprintf("core: job kind %q is the run core's", kind))
	}
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.jobs[kind] = h
}

// RegisterPause makes steps of stepType pause their run with k. A loop mode other than
// foreach is registered with RegisterLoopMode.
func (e *Core) RegisterPause(stepType string, k PauseKind) {
	if stepType == LoopStep || stepType == LoopMode(loopForeach) {
		panic("core: loop and its foreach are the run core's")
	}
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.pauses[stepType] = k
}

// RegisterLoopMode makes loop steps of mode (other than foreach, which is the core's) run as
// the pause kind k: the step's work goes on elsewhere (an agent run, k.KeepRunning) and ends
// with ResumeTx. Its Check validates the loop's properties.
func (e *Core) RegisterLoopMode(mode string, k PauseKind) { e.RegisterPause(LoopMode(mode), k) }

// RegisterSink adds a sink every emitted event goes through, in registration order.
func (e *Core) RegisterSink(s EventSink) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.sinks = append(e.reg.sinks, s)
}

// RegisterStepSource adds a source of organization-defined step types, asked in
// registration order after the Environment.
func (e *Core) RegisterStepSource(s StepSource) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.sources = append(e.reg.sources, s)
}

// OnStepCall adds a hook run on the call of every step kind's Run half (and of a read run
// ahead of its transaction), in registration order.
func (e *Core) OnStepCall(h StepCallHook) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.stepCalls = append(e.reg.stepCalls, h)
}

// BindStepCall runs the step call hooks on call for tx: a feature that runs a step kind in
// a transaction of its own (an agent's tool) calls it before the kind's Run half, so that
// the kind finds in call what it finds in a workflow's step.
func (e *Core) BindStepCall(tx storage.Tx, call *svctype.StepCall) {
	e.reg.mu.RLock()
	hooks := e.reg.stepCalls
	e.reg.mu.RUnlock()
	for _, h := range hooks {
		h(tx, call)
	}
}

// OnCancel adds a hook run in the transaction of every cancellation.
func (e *Core) OnCancel(h CancelHook) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.cancels = append(e.reg.cancels, h)
}

// OnDeleteWorkflow adds a hook run in the transaction of every workflow deletion.
func (e *Core) OnDeleteWorkflow(h DeleteWorkflowHook) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.deletes = append(e.reg.deletes, h)
}

// SetSecrets sets where StepCall.Secret reads secrets from.
func (e *Core) SetSecrets(s SecretSource) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.secrets = s
}

func (e *Core) jobHandler(kind string) (JobHandler, bool) {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	h, ok := e.reg.jobs[kind]
	return h, ok
}

func (e *Core) pauseKind(stepType string) (PauseKind, bool) {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	k, ok := e.reg.pauses[stepType]
	return k, ok
}

// LoopMode is the registry name of the pause kind that runs loops of mode.
func LoopMode(mode string) string { return LoopStep + ":" + mode }

// LoopModes lists the loop modes this engine runs, foreach first, the registered ones after
// it, sorted.
func (e *Core) LoopModes() []string {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	var modes []string
	for name := range e.reg.pauses {
		if mode, ok := strings.CutPrefix(name, LoopMode("")); ok {
			modes = append(modes, mode)
		}
	}
	slices.Sort(modes)
	return append([]string{loopForeach}, modes...)
}

// PauseTypes lists the step types of the registered pause kinds (loop modes aside), sorted.
func (e *Core) PauseTypes() []string {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	var out []string
	for name := range e.reg.pauses {
		if !strings.HasPrefix(name, LoopMode("")) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// LookupPause returns the pause kind registered for steps of stepType.
func (e *Core) LookupPause(stepType string) (PauseKind, bool) { return e.pauseKind(stepType) }

// IsStepType reports whether name is a step type of this engine: the loop primitive, a kind
// of its Environment, a pause kind, or a built-in primitive the Environment leaves out. An
// organization's action may not take such a name: the step type would shadow it, or be
// shadowed by it.
func (e *Core) IsStepType(name string) bool {
	if _, ok := e.env.Lookup(name); ok {
		return true
	}
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	_, pauses := e.reg.pauses[name]
	return pauses && !strings.HasPrefix(name, LoopMode("")) || e.reg.reserved[name]
}

// stepPause returns the pause kind a step runs as: its type's, or for a loop its mode's.
func (e *Core) stepPause(step *svctype.Step) (PauseKind, bool) {
	if step.Type == LoopStep {
		mode, _ := step.Properties["mode"].(string)
		if mode == loopForeach {
			return PauseKind{}, false
		}
		return e.pauseKind(LoopMode(mode))
	}
	return e.pauseKind(step.Type)
}

func (e *Core) sinks() []EventSink {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	return e.reg.sinks
}

func (e *Core) sources() []StepSource {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	return e.reg.sources
}

func (e *Core) cancelHooks() []CancelHook {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	return e.reg.cancels
}

func (e *Core) deleteWorkflowHooks() []DeleteWorkflowHook {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	return e.reg.deletes
}

// Secret returns the plaintext of one of the organization's secrets through the registered
// secret source: ErrNoSecrets when none is registered.
func (e *Core) Secret(ctx context.Context, orgID, key string) (string, error) {
	e.reg.mu.RLock()
	src := e.reg.secrets
	e.reg.mu.RUnlock()
	if src == nil {
		return "", fmt.Errorf("secret %q: %w", key, ErrNoSecrets)
	}
	return src(ctx, orgID, key)
}

// secretFor returns the secret lookup that IO halves get as StepCall.Secret.
func (e *Core) secretFor(orgID string) func(ctx context.Context, key string) (string, error) {
	return func(ctx context.Context, key string) (string, error) { return e.Secret(ctx, orgID, key) }
}
