package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

// The run core alone, with one feature of the engine's (custom tables, engine/tables,
// registered as the composition root registers it) and a feature of the test's own on its
// seam: what a new feature package has to work with.

type seam struct {
	c      *core.Core
	st     *store.Store
	tables *tables.Tables
	ctx    context.Context

	mu        sync.Mutex
	sunk      []string // events the sink saw, in order
	cancelled []string // runs the cancel hook saw
	failSink  bool
	draftCall atomic.Int64
	workflows atomic.Int64
}

const signalStep = "wait_for_signal"

func setupSeam(t *testing.T, dialect string) *seam {
	t.Helper()
	st := store.OpenTest(t, dialect)
	c, err := core.New(core.Config{Store: st})
	require.NoError(t, err)
	s := &seam{c: c, st: st, tables: tables.New(c, st), ctx: context.Background()}
	s.tables.Register(c)
	c.RegisterSink(func(ctx context.Context, tx storage.Tx, evs []svctype.Event, _ *core.EventSubject) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.failSink {
			return errors.New("sink refused")
		}
		for _, ev := range evs {
			s.sunk = append(s.sunk, ev.Event)
		}
		return nil
	})
	c.OnCancel(func(ctx context.Context, tx storage.Tx, run *svctype.Run, _ svctype.Actor) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cancelled = append(s.cancelled, run.ID+":"+string(run.Status))
		return nil
	})
	c.RegisterPause(signalStep, core.PauseKind{
		Check: func(props map[string]any, at string) []core.Problem {
			if _, ok := props["signal"].(string); !ok {
				return []core.Problem{{Pointer: at + "/signal", Message: "required: the signal to wait for"}}
			}
			return nil
		},
		Pause: func(ctx context.Context, tx storage.Tx, p *core.PauseCall) error {
			props, err := p.Properties(ctx)
			if err != nil {
				return err
			}
			if props["draft"] == true {
				// A pause that needs a call to another system first.
				r, err := p.Outside(func(ctx context.Context, call *svctype.StepCall) (any, error) {
					s.draftCall.Add(1)
					return "drafted for " + call.RunID, nil
				}, props)
				if err != nil {
					return err
				}
				p.AddDecision(svctype.Decision{Kind: "draft", Result: r.Out})
			}
			p.Emit(p.Event("signal.awaited", map[string]any{"run_id": p.Run.ID, "signal": props["signal"]}))
			p.SetInputSummary(props)
			return nil
		},
	})
	return s
}

func (s *seam) workflow(t *testing.T, def string) *svctype.Workflow {
	t.Helper()
	name := fmt.Sprintf("w%d", s.workflows.Add(1))
	w, err := s.c.CreateWorkflow(s.ctx, "org", core.WorkflowInput{Name: name, Definition: json.RawMessage(def)})
	require.NoError(t, err)
	return w
}

func (s *seam) run(t *testing.T, w *svctype.Workflow) *svctype.Run {
	t.Helper()
	run, err := s.c.Execute(s.ctx, "org", w.ID, json.RawMessage(`{}`), core.ExecuteOptions{})
	require.NoError(t, err)
	_, err = s.c.Work(s.ctx)
	require.NoError(t, err)
	run, err = s.c.GetRun(s.ctx, "org", run.ID)
	require.NoError(t, err)
	return run
}

func (s *seam) resume(t *testing.T, run *svctype.Run, r core.Resume) {
	t.Helper()
	require.NoError(t, s.st.InTx(s.ctx, func(ctx context.Context, tx storage.Tx) error {
		cur, err := tx.GetRun(ctx, "org", run.ID)
		if err != nil {
			return err
		}
		r.Events = []svctype.Event{s.c.Event(cur, "signal.received", map[string]any{"run_id": cur.ID})}
		return s.c.ResumeTx(ctx, tx, cur, r)
	}))
	s.c.Resumed("org", run.ID)
	_, err := s.c.Work(s.ctx)
	require.NoError(t, err)
}

func (s *seam) events(t *testing.T, runID string) []string {
	t.Helper()
	page, err := s.c.RunEvents(s.ctx, "org", runID, svctype.ListOptions{Limit: 100})
	require.NoError(t, err)
	var out []string
	for _, e := range page.Items {
		out = append(out, e.Event)
	}
	return out
}

const signalThenWrite = `{"actions": [
  {"type": "wait_for_signal", "properties": {"signal": "go"}},
  {"type": "custom-table", "properties": {"table": "t", "operation": "write", "fields": {"x": 1}}}
]}`

func TestSeamPauseAndResume(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			s := setupSeam(t, d)
			_, err := s.tables.CreateTable(s.ctx, "org", "t", map[string]string{"x": "number"})
			require.NoError(t, err)

			// The pause kind's create-time check runs where the core's do.
			_, err = s.c.CreateWorkflow(s.ctx, "org", core.WorkflowInput{Name: "bad",
				Definition: json.RawMessage(`{"actions": [{"type": "wait_for_signal", "properties": {}}]}`)})
			var ve *core.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, "/definition/actions/0/properties/signal", ve.Problems[0].Pointer)

			w := s.workflow(t, signalThenWrite)
			run := s.run(t, w)
			require.Equal(t, svctype.RunPaused, run.Status)
			require.Equal(t, 0, run.Cursor.Step)
			require.Equal(t, []string{"workflow_run_started", "signal.awaited"}, s.events(t, run.ID))

			s.resume(t, run, core.Resume{Step: svctype.StepRecord{RunID: run.ID, Index: 0, Type: signalStep, Status: svctype.StepCompleted}})
			run, err = s.c.GetRun(s.ctx, "org", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, run.Status, run.Reason)
			rows, err := s.tables.ReadRows(s.ctx, "org", "t", nil, 0)
			require.NoError(t, err)
			require.Len(t, rows, 1, "the step after the pause ran")
			require.Equal(t, []string{"workflow_run_started", "signal.awaited", "signal.received", "step.completed",
				"step.started", "step.completed", "workflow_run_completed"}, s.events(t, run.ID))
			s.mu.Lock()
			require.Equal(t, s.events(t, run.ID), s.sunk, "the sink saw every event, in order")
			s.mu.Unlock()

			// A resumption that ends the run.
			run = s.run(t, w)
			require.Equal(t, svctype.RunPaused, run.Status)
			s.resume(t, run, core.Resume{Step: svctype.StepRecord{RunID: run.ID, Index: 0, Type: signalStep, Status: svctype.StepCompleted},
				End: svctype.RunRejected, Reason: "no"})
			run, err = s.c.GetRun(s.ctx, "org", run.ID)
			require.NoError(t, err)
			require.Equal(t, svctype.RunRejected, run.Status)
			require.Equal(t, "no", run.Reason)
			ev := s.events(t, run.ID)
			require.Equal(t, "workflow_run_completed", ev[len(ev)-1])

			// A run that is not paused is not resumed.
			err = s.st.InTx(s.ctx, func(ctx context.Context, tx storage.Tx) error {
				return s.c.ResumeTx(ctx, tx, run, core.Resume{Step: svctype.StepRecord{RunID: run.ID, Type: signalStep}})
			})
			require.ErrorIs(t, err, core.ErrConflict)
		})
	}
}

func TestSeamCancelHookAndFailingSink(t *testing.T) {
	t.Parallel()
	s := setupSeam(t, "sqlite")
	w := s.workflow(t, signalThenWrite)
	run := s.run(t, w)
	_, err := s.c.CancelRun(s.ctx, "org", run.ID, "stop", core.Actor{})
	require.NoError(t, err)
	s.mu.Lock()
	require.Equal(t, []string{run.ID + ":paused"}, s.cancelled, "the hook ran in the cancel, seeing the run as it was")
	s.failSink = true
	s.mu.Unlock()

	// A sink's error rolls its event's cause back: no run exists.
	_, err = s.c.Execute(s.ctx, "org", w.ID, json.RawMessage(`{}`), core.ExecuteOptions{IdempotencyKey: "k"})
	require.ErrorContains(t, err, "sink refused")
	page, err := s.c.ListRuns(s.ctx, "org", storage.RunFilter{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "only the cancelled run")
}

func TestSeamPauseInForeachAndOutsideCall(t *testing.T) {
	t.Parallel()
	s := setupSeam(t, "sqlite")
	w := s.workflow(t, `{"actions": [{"type": "loop", "properties": {"mode": "foreach", "items": [1],
	  "steps": [{"type": "wait_for_signal", "properties": {"signal": "go"}}]}}]}`)
	run := s.run(t, w)
	require.Equal(t, svctype.RunFailed, run.Status)
	require.Contains(t, run.Reason, "a wait_for_signal step cannot run inside a foreach element: put it at the top level")

	// A pause whose outside call is made outside its transaction, once, then recorded.
	w = s.workflow(t, `{"actions": [{"type": "wait_for_signal", "properties": {"signal": "go", "draft": true}}]}`)
	run = s.run(t, w)
	require.Equal(t, svctype.RunPaused, run.Status, run.Reason)
	require.EqualValues(t, 1, s.draftCall.Load())
	ev, err := s.c.Evidence(s.ctx, "org", run.ID)
	require.NoError(t, err)
	require.Len(t, ev.Steps, 1)
	require.Equal(t, []svctype.Decision{{Kind: "draft", Result: "drafted for " + run.ID}}, ev.Steps[0].Decisions)
	require.Len(t, ev.Effects, 1)
	require.Equal(t, "call", ev.Effects[0].Kind)
	require.Equal(t, run.ID+"/0", ev.Effects[0].Detail["idempotency_key"])
}

func TestSeamSecretsAndJobs(t *testing.T) {
	t.Parallel()
	s := setupSeam(t, "sqlite")
	s.c.Environment().RegisterStepKind("needs_secret", svctype.StepKind{IO: func(ctx context.Context, call *svctype.StepCall) (any, error) {
		return call.Secret(ctx, "api:key")
	}})
	w := s.workflow(t, `{"actions": [{"type": "needs_secret", "outputKey": "v", "properties": {}}]}`)
	run := s.run(t, w)
	require.Equal(t, svctype.RunFailed, run.Status)
	require.Contains(t, run.Reason, core.ErrNoSecrets.Error(), "no secret source registered")

	s.c.SetSecrets(func(ctx context.Context, orgID, key string) (string, error) { return orgID + "/" + key, nil })
	run = s.run(t, w)
	require.Equal(t, svctype.RunCompleted, run.Status, run.Reason)
	doc, err := s.c.RunStatus(s.ctx, "org", run.ID)
	require.NoError(t, err)
	require.Equal(t, "org/api:key", doc.Context["v"])

	// A registered job kind runs with its organization in ctx; the core's own kinds are not
	// anyone else's.
	seen := make(chan string, 1)
	s.c.RegisterJob("tick", func(ctx context.Context, job *svctype.Job) error {
		seen <- svctype.OrgFrom(ctx)
		return s.st.InTx(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.CompleteJob(ctx, job) })
	})
	require.NoError(t, s.st.EnqueueJob(s.ctx, &svctype.Job{OrgID: "org", Kind: "tick"}))
	_, err = s.c.Work(s.ctx)
	require.NoError(t, err)
	require.Equal(t, "org", <-seen)
	require.Panics(t, func() { s.c.RegisterJob(svctype.JobRunStep, nil) })
}

// TestSeamRegistryAnswers: the core and the features know a step type only by what was
// registered under its name. A loop mode other than foreach is a feature's; a name is a step
// type when a kind, a pause kind or the loop primitive has it, or when it is a built-in
// primitive that this Environment leaves out.
func TestSeamRegistryAnswers(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	c, err := core.New(core.Config{Store: st, Env: core.NewEmptyEnvironment()})
	require.NoError(t, err)
	ctx := context.Background()
	loop := func(mode string) error {
		_, err := c.CreateWorkflow(ctx, "org", core.WorkflowInput{Name: "l-" + mode, Definition: json.RawMessage(
			`{"actions": [{"type": "loop", "properties": {"mode": "` + mode + `", "objective": "o"}}]}`)})
		return err
	}
	var ve *core.ValidationError
	require.ErrorAs(t, loop("react"), &ve, "no feature registered react")
	require.Equal(t, []core.Problem{{Pointer: "/definition/actions/0/properties/mode", Message: "must be foreach"}}, ve.Problems)
	require.Equal(t, []string{"foreach"}, c.LoopModes())

	checked := 0
	c.RegisterLoopMode("ask", core.PauseKind{
		Check: func(map[string]any, string) []core.Problem { checked++; return nil },
		Pause: func(context.Context, storage.Tx, *core.PauseCall) error { return nil }, KeepRunning: true,
	})
	require.Equal(t, []string{"foreach", "ask"}, c.LoopModes())
	require.NoError(t, loop("ask"))
	require.Equal(t, 1, checked, "the mode's own check ran")
	require.ErrorAs(t, loop("react"), &ve)
	require.Equal(t, "must be foreach or ask", ve.Problems[0].Message)
	require.Empty(t, c.PauseTypes(), "a loop mode is not a step type of its own")

	c.RegisterPause("wait_for_signal", core.PauseKind{Synopsis: "{signal}"})
	require.Equal(t, []string{"wait_for_signal"}, c.PauseTypes())
	k, ok := c.LookupPause("wait_for_signal")
	require.True(t, ok)
	require.Equal(t, "{signal}", k.Synopsis)

	tables.New(c, st).Register(c)
	for name, want := range map[string]bool{
		"loop": true, "matcher": true, "nway_match": true, // built-ins, though this Environment is empty
		"custom-table": true, "wait_for_signal": true, // registered by features
		"noop": false, "loop:ask": false, // a loop mode is not a step type
	} {
		require.Equal(t, want, c.IsStepType(name), name)
	}
	_, ok = c.Environment().Lookup("matcher")
	require.False(t, ok, "reserved, not run")
}
