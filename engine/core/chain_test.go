package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// chainWorkflow writes a row, looks from outside the run's transaction for the rows this
// run has committed, then writes another row.
const chainWorkflow = `{"actions": [
  {"type": "custom-table", "outputKey": "first",
   "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 1}}},
  {"type": "peek", "outputKey": "seen", "properties": {}},
  {"type": "custom-table", "outputKey": "second",
   "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": "@seen.committed"}}}
]}`

// peek counts, through the engine (committed data, another connection), the rows of
// notes the step's run has written.
func registerPeek(b *enginetest.Bundle) {
	b.Eng.RegisterStep("peek", func(ctx context.Context, call *svctype.StepCall) (any, error) {
		rows, err := b.Eng.ReadRows(ctx, call.OrgID, "notes", map[string]any{"text": call.RunID}, 0)
		if err != nil {
			return nil, err
		}
		return map[string]any{"committed": len(rows)}, nil
	})
}

// chainBundle is an engine whose SQLite store is a file, as deployments have it: its
// reads have connections of their own beside the writer (an in-memory database has one
// connection, which a step's transaction holds).
func chainBundle(t *testing.T, dialect string, chainTime time.Duration) *enginetest.Bundle {
	cfg := engine.Config{Slice: time.Minute, ChainTime: chainTime}
	var b *enginetest.Bundle
	if dialect == "sqlite" {
		st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "svcflow.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		require.NoError(t, st.Migrate(context.Background()))
		cfg.Store = st
		eng, err := engine.New(cfg)
		require.NoError(t, err)
		b = &enginetest.Bundle{Eng: eng, St: st, Ctx: context.Background()}
	} else {
		b = enginetest.Setup(t, dialect, cfg)
	}
	b.CustomerTables(t, "acme")
	registerPeek(b)
	return b
}

// Quick steps that follow one another commit in one transaction: the step after a write
// does not see it committed, and both writes land once the run ends. With chains off
// (a negative ChainTime) or an outside call between them, each step commits on its own.
func TestQuickStepsCommitTogether(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name      string
				chainTime time.Duration
				def       string
				seen      float64
			}{
				{"chained", time.Minute, chainWorkflow, 0},
				{"chains off", -1, chainWorkflow, 1},
				{"an outside call between", time.Minute, `{"actions": [
  {"type": "custom-table", "outputKey": "first",
   "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 1}}},
  {"type": "outside", "properties": {}},
  {"type": "peek", "outputKey": "seen", "properties": {}},
  {"type": "custom-table", "outputKey": "second",
   "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": "@seen.committed"}}}
]}`, 1},
			} {
				t.Run(tc.name, func(t *testing.T) {
					b := chainBundle(t, d, tc.chainTime)
					b.Eng.Environment().RegisterStepKind("outside", svctype.StepKind{IO: func(context.Context, *svctype.StepCall) (any, error) {
						return map[string]any{"called": true}, nil
					}})
					w := b.Workflow(t, "acme", "chain", tc.def)
					doc := b.Execute(t, "acme", w.ID, `{}`)
					require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
					require.Equal(t, map[string]any{"committed": json.Number(fmt.Sprint(tc.seen))}, doc.Context["seen"])
					for i, s := range doc.Steps {
						require.Equal(t, svctype.StepCompleted, s.Status, "step %d", i)
					}
					rows, err := b.Eng.ReadRows(b.Ctx, "acme", "notes", map[string]any{"text": doc.ID}, 0)
					require.NoError(t, err)
					require.Len(t, rows, 2, "each write once")
					// Every step's events, in order, whether or not it committed with another.
					want := []string{"workflow_run_started"}
					for range doc.Steps {
						want = append(want, "step.started", "step.completed")
					}
					require.Equal(t, append(want, "workflow_run_completed"), b.Events(t, "acme", doc.ID))
					done := b.EventPayload(t, "acme", doc.ID, engine.EventRunCompleted)["result"].(map[string]any)["outputs"].(map[string]any)
					require.Equal(t, map[string]any{"committed": tc.seen}, done["seen"], "the end event has the outputs of the steps committed with the last")
					require.Contains(t, done, "first")
				})
			}
		})
	}
}

// A step that fails after steps it would have committed with: the steps before it commit,
// once each, and the run fails at it, as without chains. The earlier steps ran twice (the
// unit rolled back whole, then ran without its chain); their writes did not land twice.
func TestChainedStepFails(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := chainBundle(t, d, time.Minute)
			var runs atomic.Int32
			b.Eng.RegisterStep("count", func(context.Context, *svctype.StepCall) (any, error) {
				return map[string]any{"n": runs.Add(1)}, nil
			})
			b.Eng.RegisterStep("explode", func(context.Context, *svctype.StepCall) (any, error) {
				return nil, errors.New("boom")
			})
			w := b.Workflow(t, "acme", "fails", `{"actions": [
  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 1}}},
  {"type": "count", "outputKey": "c", "properties": {}},
  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": "@c.n"}}},
  {"type": "explode", "properties": {}},
  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 9}}}
]}`)
			doc := b.Execute(t, "acme", w.ID, `{}`)
			require.Equal(t, svctype.RunFailed, doc.Status)
			require.Contains(t, doc.Reason, "step 3 (explode): boom")
			require.Len(t, doc.Steps, 5)
			require.Equal(t, svctype.StepPending, doc.Steps[4].Status)
			for i := range 3 {
				require.Equal(t, svctype.StepCompleted, doc.Steps[i].Status, "step %d", i)
			}
			require.Equal(t, svctype.StepFailed, doc.Steps[3].Status)
			rows, err := b.Eng.ReadRows(b.Ctx, "acme", "notes", map[string]any{"text": doc.ID}, 0)
			require.NoError(t, err)
			require.Len(t, rows, 2, "the two writes before the failing step, once each")
			ns := []any{rows[0].Data["n"], rows[1].Data["n"]}
			require.ElementsMatch(t, []any{json.Number("1"), json.Number("2")}, ns, "the committed count is the second run of the step")
			require.Equal(t, int32(2), runs.Load())
			require.Equal(t, []string{"workflow_run_started",
				"step.started", "step.completed", "step.started", "step.completed", "step.started", "step.completed",
				"step.failed", "workflow_run_failed"}, b.Events(t, "acme", doc.ID))
		})
	}
}

// A read of table rows after a step chains with it: it runs in the unit's transaction and
// sees the unit's write, not yet committed (the peek after it, from outside, sees none). A
// read of documents (a ReadOnly kind with DocRows, as the matchers) never chains: it runs
// ahead of a transaction of its own, after the write before it has committed.
func TestReadsChainButReadsOfDocuments(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := chainBundle(t, d, time.Minute)
			b.Eng.Environment().RegisterStepKind("docpeek", svctype.StepKind{
				ReadOnly: func(map[string]any) bool { return true },
				DocRows:  10,
				Run: func(ctx context.Context, call *svctype.StepCall) (any, error) {
					rows, err := b.Eng.ReadRows(ctx, call.OrgID, "notes", map[string]any{"text": call.RunID}, 0)
					return map[string]any{"committed": len(rows)}, err
				},
			})
			write := `{"type": "custom-table", "outputKey": "first",
   "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 1}}}`
			peek := `{"type": "peek", "outputKey": "seen", "properties": {}}`

			w := b.Workflow(t, "acme", "reads", `{"actions": [`+write+`,
  {"type": "custom-table", "outputKey": "mine", "properties": {"table": "notes", "operation": "read", "where": {"text": "{{__run_id}}"}}},
  `+peek+`]}`)
			doc := b.Execute(t, "acme", w.ID, `{}`)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Len(t, doc.Context["mine"], 1, "the read sees the write before it in its transaction")
			require.Equal(t, map[string]any{"committed": json.Number("0")}, doc.Context["seen"], "the three steps in one transaction")

			w = b.Workflow(t, "acme", "docreads", `{"actions": [`+write+`,
  {"type": "docpeek", "outputKey": "ahead", "properties": {}},
  `+peek+`]}`)
			doc = b.Execute(t, "acme", w.ID, `{}`)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Equal(t, map[string]any{"committed": json.Number("1")}, doc.Context["ahead"], "the read of documents ran after the write committed")
			require.Equal(t, map[string]any{"committed": json.Number("1")}, doc.Context["seen"])
			want := []string{"workflow_run_started"}
			for range doc.Steps {
				want = append(want, "step.started", "step.completed")
			}
			require.Equal(t, append(want, "workflow_run_completed"), b.Events(t, "acme", doc.ID))
		})
	}
}

// Two chained steps that write the same context key, one of them an array stored in parts
// (larger than LargeValueBytes), either way round: the run keeps the later step's value.
// The unit writes its step commits together at its end, but a value in parts at once.
func TestChainedStepsWriteOneKey(t *testing.T) {
	t.Parallel()
	big := make([]any, 3000)
	for i := range big {
		big[i] = strings.Repeat("x", 100)
	}
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := chainBundle(t, d, time.Minute)
			b.Eng.RegisterStep("small", func(context.Context, *svctype.StepCall) (any, error) { return "small", nil })
			b.Eng.RegisterStep("big", func(context.Context, *svctype.StepCall) (any, error) { return big, nil })
			for _, tc := range []struct{ first, second string }{{"small", "big"}, {"big", "small"}} {
				w := b.Workflow(t, "acme", tc.first+"-"+tc.second, `{"actions": [
  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 1}}},
  {"type": "`+tc.first+`", "outputKey": "v", "properties": {}},
  {"type": "`+tc.second+`", "outputKey": "v", "properties": {}},
  {"type": "peek", "outputKey": "seen", "properties": {}}
]}`)
				doc := b.Execute(t, "acme", w.ID, `{}`)
				require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
				require.Equal(t, map[string]any{"committed": json.Number("0")}, doc.Context["seen"], "one transaction")
				v, err := b.Eng.RunContext(b.Ctx, "acme", doc.ID, "v", 0, 0)
				require.NoError(t, err)
				if tc.second == "big" {
					require.True(t, v.Paged, "the later value, in parts")
					require.Equal(t, len(big), v.Total)
				} else {
					require.False(t, v.Paged, "the later value")
					require.JSONEq(t, `"small"`, string(v.Value))
				}
			}
		})
	}
}

// A run cancelled while a unit of chained steps runs, on PostgreSQL (on SQLite the cancel
// would wait for the writer the unit holds): the unit's step commits, written together at
// its end, find the job gone, and the unit rolls back whole: none of its steps' writes
// lands, the run stays cancelled, and the cancel did not wait for the unit (its job's row
// is locked only by the unit's last statement).
func TestChainLosesItsJobWhole(t *testing.T) {
	t.Parallel()
	b := chainBundle(t, "postgres", time.Minute)
	var cancelled error
	b.Eng.RegisterStep("cancel", func(ctx context.Context, call *svctype.StepCall) (any, error) {
		done := make(chan error, 1)
		go func() {
			_, err := b.Eng.CancelRun(context.WithoutCancel(ctx), call.OrgID, call.RunID, "meanwhile", engine.Actor{})
			done <- err
		}()
		select {
		case cancelled = <-done:
		case <-time.After(10 * time.Second):
			cancelled = errors.New("the cancel waited 10 s for the unit")
		}
		return map[string]any{}, nil
	})
	w := b.Workflow(t, "acme", "cancelled", `{"actions": [
  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 1}}},
  {"type": "cancel", "properties": {}},
  {"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{__run_id}}", "n": 2}}}
]}`)
	doc := b.Execute(t, "acme", w.ID, `{}`)
	require.NoError(t, cancelled)
	require.Equal(t, svctype.RunCancelled, doc.Status, doc.Reason)
	for i, s := range doc.Steps {
		require.NotEqual(t, svctype.StepCompleted, s.Status, "step %d", i)
	}
	rows, err := b.Eng.ReadRows(b.Ctx, "acme", "notes", map[string]any{"text": doc.ID}, 0)
	require.NoError(t, err)
	require.Empty(t, rows, "the unit rolled back whole")
	require.Equal(t, []string{"workflow_run_started", "workflow_run_cancelled"}, b.Events(t, "acme", doc.ID))
}
