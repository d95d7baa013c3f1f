package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// receiver stands for a third party: it records every call's idempotency key and try.
type receiver struct {
	mu    sync.Mutex
	calls []receivedCall
}

type receivedCall struct {
	Key string
	Try int
	Arg any
}

func (r *receiver) record(call *svctype.StepCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, receivedCall{Key: call.IdempotencyKey, Try: call.Try, Arg: call.Properties["arg"]})
}

func (r *receiver) received() []receivedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedCall(nil), r.calls...)
}

// ioKind is a step kind whose IO half records the call and answers {echo: arg}; its Run
// half checks it runs inside the transaction with the result and adds a field.
func ioKind(r *receiver) svctype.StepKind {
	return svctype.StepKind{
		IO: func(ctx context.Context, call *svctype.StepCall) (any, error) {
			if call.Tables != nil {
				return nil, errors.New("the IO half was given the transaction's tables")
			}
			r.record(call)
			if call.Properties["fail"] == true {
				return nil, errors.New("the third party said no")
			}
			return map[string]any{"echo": call.Properties["arg"]}, nil
		},
		Run: func(ctx context.Context, call *svctype.StepCall) (any, error) {
			if call.Tables == nil {
				return nil, errors.New("the Run half has no tables")
			}
			out := call.IOResult.(map[string]any)
			out["key"] = call.IdempotencyKey
			return out, nil
		},
	}
}

func TestIOStepCommitsItsResult(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		r := &receiver{}
		b.Eng.Environment().RegisterStepKind("call", ioKind(r))
		w := b.Workflow(t, "org-a", "io", `{"actions": [
			{"type": "call", "properties": {"arg": "@input.x"}, "outputKey": "first"},
			{"type": "loop", "properties": {"mode": "foreach", "items": "@input.items", "result_key": "each",
				"steps": [{"type": "call", "properties": {"arg": "@item"}, "outputKey": "got"},
				          {"type": "call", "properties": {"arg": "{{got.echo}}!"}}]}}
		]}`)
		doc := b.Execute(t, "org-a", w.ID, `{"x": 7, "items": ["a", "b"]}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		run := doc.ID
		require.Equal(t, map[string]any{"echo": json.Number("7"), "key": run + "/0"}, doc.Context["first"])
		require.Equal(t, []any{
			map[string]any{"echo": "a!", "key": run + "/1/0/1"},
			map[string]any{"echo": "b!", "key": run + "/1/1/1"},
		}, doc.Context["each"])

		// Each call was made once, with its position as its key, and the one after the
		// in-element step saw that step's output.
		require.Equal(t, []receivedCall{
			{run + "/0", 1, json.Number("7")},
			{run + "/1/0/0", 1, "a"}, {run + "/1/0/1", 1, "a!"},
			{run + "/1/1/0", 1, "b"}, {run + "/1/1/1", 1, "b!"},
		}, r.received())
		effects := enginetest.CallEffects(t, b, "org-a", run)
		require.Len(t, effects, 5)
		require.Equal(t, run+"/0", effects[0].Detail["idempotency_key"])
		require.EqualValues(t, 1, effects[0].Detail["tries"])
	})
}

func TestIOStepFailureFailsTheRunWithItsEvidence(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		r := &receiver{}
		b.Eng.Environment().RegisterStepKind("call", ioKind(r))
		w := b.Workflow(t, "org-a", "io-fail", `{"actions": [
			{"type": "call", "properties": {"arg": 1, "fail": true}}
		]}`)
		doc := b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "the third party said no")
		effects := enginetest.CallEffects(t, b, "org-a", doc.ID)
		require.Len(t, effects, 1)
		require.Equal(t, "the third party said no", effects[0].Detail["error"])
		require.Len(t, r.received(), 1)
		// The failed step's record keeps when it started and what it was given.
		ev, err := b.Eng.Evidence(context.Background(), "org-a", doc.ID)
		require.NoError(t, err)
		require.Len(t, ev.Steps, 1)
		require.Equal(t, svctype.StepFailed, ev.Steps[0].Status)
		require.NotNil(t, ev.Steps[0].StartedAt)
		require.False(t, ev.Steps[0].StartedAt.After(*ev.Steps[0].FinishedAt))
		require.JSONEq(t, `{"arg": 1, "fail": true}`, string(ev.Steps[0].InputSummary))
	})
}

// A worker that made a call and stopped before committing its result leaves the intent
// open: the next claim calls again with the same key (try 2), once, and commits.
func TestIOCallRepeatedAfterACrashWithTheSameKey(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			st := store.OpenTest(t, d)
			r := &receiver{}
			stuck := make(chan struct{})
			defer close(stuck)
			kind := svctype.StepKind{IO: func(ctx context.Context, call *svctype.StepCall) (any, error) {
				r.record(call)
				if call.Try == 1 {
					<-stuck // this worker never gets to commit: it "crashed" after the call
					return nil, errors.New("too late")
				}
				return map[string]any{"try": call.Try}, nil
			}}
			newEngine := func() *engine.Engine {
				env := engine.NewEnvironment()
				env.RegisterStepKind("call", kind)
				eng, err := engine.New(engine.Config{Store: st, Env: env, Lease: 300 * time.Millisecond})
				require.NoError(t, err)
				return eng
			}
			first, second := newEngine(), newEngine()
			ctx := context.Background()
			w, err := first.CreateWorkflow(ctx, "org-a", engine.WorkflowInput{Name: "crash", Definition: json.RawMessage(
				`{"actions": [{"type": "call", "properties": {}, "outputKey": "out"}]}`)})
			require.NoError(t, err)
			run, err := first.Execute(ctx, "org-a", w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
			require.NoError(t, err)

			go func() { _, _ = first.Work(ctx) }()
			require.Eventually(t, func() bool { return len(r.received()) == 1 }, 5*time.Second, 5*time.Millisecond)
			// The first worker's lease lapses (it has no heartbeat); the second takes over.
			require.Eventually(t, func() bool {
				_, err := second.Work(ctx)
				require.NoError(t, err)
				got, err := second.GetRun(ctx, "org-a", run.ID)
				require.NoError(t, err)
				return got.Status == svctype.RunCompleted
			}, 10*time.Second, 50*time.Millisecond)

			calls := r.received()
			require.Equal(t, []receivedCall{{run.ID + "/0", 1, nil}, {run.ID + "/0", 2, nil}}, calls)
			doc, err := second.RunStatus(ctx, "org-a", run.ID)
			require.NoError(t, err)
			require.Equal(t, map[string]any{"try": json.Number("2")}, doc.Context["out"])
			ev, err := second.Evidence(ctx, "org-a", run.ID)
			require.NoError(t, err)
			var call *svctype.Effect
			for i := range ev.Effects {
				if ev.Effects[i].Kind == "call" {
					call = &ev.Effects[i].Effect
				}
			}
			require.NotNil(t, call)
			require.EqualValues(t, 2, call.Detail["tries"])
			require.Len(t, call.Detail["attempts"], 2)
		})
	}
}

// After MaxCallTries claims made a call without committing it, the step fails with the
// outcome unknown and the third party is not called again.
func TestIOCallOutcomeUnknownAfterMaxTries(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		r := &receiver{}
		b.Eng.Environment().RegisterStepKind("call", ioKind(r))
		w := b.Workflow(t, "org-a", "io-unknown", `{"actions": [{"type": "call", "properties": {"arg": 1}}]}`)
		run, err := b.Eng.Execute(b.Ctx, "org-a", w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
		require.NoError(t, err)
		// Earlier claims that each made the call and died before committing it.
		for i := range engine.MaxCallTries {
			require.NoError(t, b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error {
				_, _, err := tx.OpenCall(ctx, "org-a", run.ID, run.ID+"/0", fmt.Sprintf("claim-%d", i), time.Now())
				return err
			}))
		}
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "org-a", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "outcome unknown")
		require.Empty(t, r.received())
		effects := enginetest.CallEffects(t, b, "org-a", run.ID)
		require.Len(t, effects, 1)
		require.EqualValues(t, engine.MaxCallTries+1, effects[0].Detail["tries"])

		// The intent is closed with the failure: nothing stays open.
		require.NoError(t, b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error {
			before, _, err := tx.OpenCall(ctx, "org-a", run.ID, run.ID+"/0", "later", time.Now())
			require.Nil(t, before)
			return err
		}))
	})
}

// Another organization's intent of the same key is another row.
func TestCallIntentsAreScopedToTheOrg(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		open := func(org string) (before, now *svctype.CallIntent) {
			require.NoError(t, b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error {
				var err error
				before, now, err = tx.OpenCall(ctx, org, "run-1", "run-1/0", "c", time.Now())
				return err
			}))
			return before, now
		}
		_, a := open("org-a")
		require.Equal(t, 1, a.Tries)
		before, b2 := open("org-b")
		require.Nil(t, before)
		require.Equal(t, 1, b2.Tries)
		require.NoError(t, b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error {
			return tx.CloseCalls(ctx, "org-b", "run-1")
		}))
		before, a2 := open("org-a")
		require.NotNil(t, before)
		require.Equal(t, 2, a2.Tries)
	})
}
