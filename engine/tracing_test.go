package engine_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
)

// recorded is a tracer provider whose spans a test reads back.
type recorded struct {
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

func newRecorded(t *testing.T) *recorded {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(tracing.IDGenerator{}))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &recorded{rec: rec, tp: tp}
}

// named returns the ended spans called name (prefix, with a trailing *).
func (r *recorded) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.rec.Ended() {
		if s.Name() == name || strings.HasSuffix(name, "*") && strings.HasPrefix(s.Name(), strings.TrimSuffix(name, "*")) {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

const tracedSecret = "sk-traced-secret-value"

// TestRunTrace: a run of three steps, the second a model call (an llm action over a
// scripted model), is one trace whose id is derived from the run id: the run's span is its
// root (with the derived span id), the worker's slice is its child, each step's span the
// slice's, the model call's the llm step's; the ids, index, type and outcome are on the
// spans, and no secret, input or output is. A failing step marks its span, and its run's,
// as errors.
func TestRunTrace(t *testing.T) {
	t.Parallel()
	r := newRecorded(t)
	model := llm.NewScripted(llm.Turn{Reply: agent.Message{Content: "a summary"}, Usage: agent.Usage{InputTokens: 12, OutputTokens: 3}})
	// A slice and a chain of a minute: what the spans say may not depend on how loaded the
	// machine is (a 100 ms slice hands a slow run back, a 20 ms chain commits early).
	b := enginetest.Setup(t, "sqlite", engine.Config{TracerProvider: r.tp, Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t)),
		ModelFactory: func(string, string, *http.Client) (agent.Model, error) { return model, nil },
		Slice:        time.Minute, ChainTime: time.Minute})
	ctx := b.Ctx
	b.Eng.RegisterStep("note", func(context.Context, *svctype.StepCall) (any, error) { return map[string]any{"ok": true}, nil })
	b.Eng.RegisterStep("explode", func(context.Context, *svctype.StepCall) (any, error) {
		return nil, errors.New("boom with " + tracedSecret)
	})
	_, err := b.Eng.CreateAction(ctx, "acme", svctype.Action{Name: "summarise", Kind: svctype.ActionLLM, Template: "Summarise {{text}}", Model: "small-model"})
	require.NoError(t, err)
	_, _, err = b.Eng.SetOrgConfig(ctx, "acme", engine.LLMAPIKey, tracedSecret)
	require.NoError(t, err)
	_, _, err = b.Eng.SetOrgConfig(ctx, "acme", engine.LLMBaseURL, "https://models.example.com/v1")
	require.NoError(t, err)

	w := b.Workflow(t, "acme", "traced", `{"actions": [
		{"type": "note", "properties": {}, "outputKey": "a"},
		{"type": "summarise", "properties": {"text": "@input.text"}, "outputKey": "s"},
		{"type": "note", "properties": {}, "outputKey": "c"}]}`)
	doc := b.Execute(t, "acme", w.ID, `{"text": "the private ledger"}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)

	tid := tracing.TraceID(doc.ID)
	runs := r.named("run")
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, tid, run.SpanContext().TraceID())
	require.Equal(t, tracing.RunSpanContext(doc.ID).SpanID(), run.SpanContext().SpanID(), "the run's span has the derived id")
	require.False(t, run.Parent().IsValid(), "the run's span is the root")
	require.Equal(t, "completed", attrs(run)[tracing.RunStatus].AsString())
	require.Equal(t, w.ID, attrs(run)[tracing.WorkflowID].AsString())

	slices := r.named("run.slice")
	require.Len(t, slices, 1, "one worker claim ran the whole run")
	require.Equal(t, run.SpanContext().SpanID(), slices[0].Parent().SpanID())
	// Two units: the first step, then the model call with the step after it, which runs
	// wholly inside a transaction and commits with it (quick steps commit together).
	require.Equal(t, int64(2), attrs(slices[0])[tracing.SliceUnits].AsInt64())
	require.Equal(t, "ended", attrs(slices[0])[tracing.SliceEnd].AsString())

	steps := r.named("step *")
	require.Len(t, steps, 3)
	names := []string{}
	for i, s := range steps {
		a := attrs(s)
		names = append(names, s.Name())
		require.Equal(t, tid, s.SpanContext().TraceID())
		require.Equal(t, slices[0].SpanContext().SpanID(), s.Parent().SpanID())
		require.Equal(t, "acme", a[tracing.OrgID].AsString())
		require.Equal(t, doc.ID, a[tracing.RunID].AsString())
		require.Equal(t, int64(i), a[tracing.StepIndex].AsInt64())
		require.Equal(t, "completed", a[tracing.StepOutcome].AsString())
	}
	require.Equal(t, []string{"step note", "step action", "step note"}, names, "an organization's action does not name a span")
	_, ok := attrs(steps[1])[tracing.StepCommittedWith]
	require.False(t, ok, "the model call opened its own unit")
	require.Equal(t, int64(1), attrs(steps[2])[tracing.StepCommittedWith].AsInt64(), "the last step committed with the model call")
	require.False(t, steps[2].StartTime().Before(steps[1].StartTime()))
	require.True(t, steps[2].EndTime().After(steps[2].StartTime()))
	require.Equal(t, "summarise", attrs(steps[1])[tracing.StepType].AsString())

	chats := r.named("chat small-model")
	require.Len(t, chats, 1)
	chat := attrs(chats[0])
	require.Equal(t, steps[1].SpanContext().SpanID(), chats[0].Parent().SpanID(), "the model call is under the step that made it")
	require.Equal(t, trace.SpanKindClient, chats[0].SpanKind())
	require.Equal(t, "small-model", chat[tracing.GenAIModel].AsString())
	require.Equal(t, int64(12), chat[tracing.GenAIInputTokens].AsInt64())
	require.Equal(t, int64(3), chat[tracing.GenAIOutTokens].AsInt64())

	// A failing step.
	fw := b.Workflow(t, "acme", "failing", `{"actions": [{"type": "note", "properties": {}}, {"type": "explode", "properties": {}}, {"type": "note", "properties": {}}]}`)
	fdoc := b.Execute(t, "acme", fw.ID, `{"text": "the private ledger"}`)
	require.Equal(t, svctype.RunFailed, fdoc.Status)
	var failed []sdktrace.ReadOnlySpan
	for _, s := range r.rec.Ended() {
		if s.SpanContext().TraceID() == tracing.TraceID(fdoc.ID) {
			failed = append(failed, s)
		}
	}
	require.Len(t, failed, 4, "two steps, the slice and the run")
	for _, s := range failed {
		switch s.Name() {
		case "step explode":
			require.Equal(t, codes.Error, s.Status().Code)
			require.Equal(t, "failed", attrs(s)[tracing.StepOutcome].AsString())
			require.Equal(t, int64(1), attrs(s)[tracing.StepIndex].AsInt64())
		case "run":
			require.Equal(t, codes.Error, s.Status().Code)
			require.Equal(t, "failed", attrs(s)[tracing.RunStatus].AsString())
		case "step note":
			require.Equal(t, codes.Unset, s.Status().Code)
		}
	}

	// Nothing of the input, the output, the secret or the failure's message is in a span.
	for _, s := range r.rec.Ended() {
		text := s.Name() + s.Status().Description
		for _, kv := range s.Attributes() {
			text += " " + kv.Value.Emit()
		}
		for _, ev := range s.Events() {
			text += ev.Name
		}
		for _, bad := range []string{tracedSecret, "private ledger", "a summary", "boom"} {
			require.NotContains(t, text, bad, s.Name())
		}
	}
}

// TestRunTraceAcrossEngines: a run that pauses for an approval in one engine and is
// decided and finished by another engine on the same database (another process, in
// production) is one trace: each engine's spans have the run's trace id, each slice hangs
// under the run's root, and the run's span is emitted once, by the engine that ended it.
func TestRunTraceAcrossEngines(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	ra, rb := newRecorded(t), newRecorded(t)
	a, err := engine.New(engine.Config{Store: st, TracerProvider: ra.tp})
	require.NoError(t, err)
	bEng, err := engine.New(engine.Config{Store: st, TracerProvider: rb.tp})
	require.NoError(t, err)
	ctx := context.Background()
	for _, e := range []*engine.Engine{a, bEng} {
		e.RegisterStep("note", func(context.Context, *svctype.StepCall) (any, error) { return "ok", nil })
	}
	w, err := a.CreateWorkflow(ctx, "acme", engine.WorkflowInput{Name: "approve", Definition: []byte(`{"actions": [
		{"type": "note", "properties": {}}, {"type": "PbotApproval", "properties": {"expires_in_seconds": 3600}}, {"type": "note", "properties": {}}]}`)})
	require.NoError(t, err)
	run, err := a.Execute(ctx, "acme", w.ID, []byte(`{}`), engine.ExecuteOptions{})
	require.NoError(t, err)
	_, err = a.Work(ctx)
	require.NoError(t, err)
	got, err := a.GetRun(ctx, "acme", run.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunPaused, got.Status)
	require.Empty(t, ra.named("run"), "a paused run has not ended")

	_, err = bEng.DecideApproval(ctx, "acme", run.ID, 1, engine.ApprovalDecision{Approved: true})
	require.NoError(t, err)
	_, err = bEng.Work(ctx)
	require.NoError(t, err)
	got, err = bEng.GetRun(ctx, "acme", run.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, got.Status)

	tid, root := tracing.TraceID(run.ID), tracing.RunSpanContext(run.ID).SpanID()
	for _, r := range []*recorded{ra, rb} {
		require.NotEmpty(t, r.rec.Ended())
		for _, s := range r.rec.Ended() {
			require.Equal(t, tid, s.SpanContext().TraceID(), s.Name())
		}
		require.Len(t, r.named("run.slice"), 1)
		require.Equal(t, root, r.named("run.slice")[0].Parent().SpanID())
	}
	require.Equal(t, "paused", attrs(ra.named("run.slice")[0])[tracing.SliceEnd].AsString())
	require.Equal(t, "paused", attrs(ra.named("step PbotApproval")[0])[tracing.StepOutcome].AsString())
	require.Len(t, rb.named("run"), 1)
	require.Equal(t, root, rb.named("run")[0].SpanContext().SpanID())
	require.Equal(t, int64(2), attrs(rb.named("step note")[0])[tracing.StepIndex].AsInt64())
}

// TestRunTraceWithoutIDGenerator: a provider without tracing.IDGenerator still gets every
// span of a run in the run's trace; the run's span is then a child of the root.
func TestRunTraceWithoutIDGenerator(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	b := enginetest.Setup(t, "sqlite", engine.Config{TracerProvider: tp})
	b.Eng.RegisterStep("note", func(context.Context, *svctype.StepCall) (any, error) { return "ok", nil })
	w := b.Workflow(t, "acme", "plain", `{"actions": [{"type": "note", "properties": {}}]}`)
	doc := b.Execute(t, "acme", w.ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status)
	require.Len(t, rec.Ended(), 3)
	for _, s := range rec.Ended() {
		require.Equal(t, tracing.TraceID(doc.ID), s.SpanContext().TraceID(), s.Name())
		if s.Name() == "run" {
			require.Equal(t, tracing.RunSpanContext(doc.ID).SpanID(), s.Parent().SpanID())
		}
	}
}

// TestDeliverySpan: a webhook delivery of a run's event is a client span of its own trace,
// linked to the run's, with the delivery's ids, attempt, status code and outcome.
func TestDeliverySpan(t *testing.T) {
	t.Parallel()
	r := newRecorded(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	b := enginetest.Setup(t, "sqlite", engine.Config{TracerProvider: r.tp, AllowPrivateTargets: true,
		Keyring: enginetest.NewKeyring(t, enginetest.GenerateKey(t))})
	b.Eng.RegisterStep("note", func(context.Context, *svctype.StepCall) (any, error) { return "ok", nil })
	hook, err := b.Eng.CreateWebhook(b.Ctx, "acme", engine.WebhookInput{Event: engine.EventRunCompleted, URL: srv.URL + "/hook"})
	require.NoError(t, err)
	w := b.Workflow(t, "acme", "hooked", `{"actions": [{"type": "note", "properties": {}}]}`)
	doc := b.Execute(t, "acme", w.ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status)
	_, err = b.Eng.Work(b.Ctx) // the delivery's job
	require.NoError(t, err)

	spans := r.named("webhook.deliver")
	require.Len(t, spans, 1)
	s := spans[0]
	a := attrs(s)
	require.Equal(t, trace.SpanKindClient, s.SpanKind())
	require.NotEqual(t, tracing.TraceID(doc.ID), s.SpanContext().TraceID(), "a trace of its own")
	require.Len(t, s.Links(), 1)
	require.Equal(t, tracing.RunSpanContext(doc.ID).TraceID(), s.Links()[0].SpanContext.TraceID())
	require.Equal(t, tracing.RunSpanContext(doc.ID).SpanID(), s.Links()[0].SpanContext.SpanID())
	require.True(t, strings.HasPrefix(a[tracing.DeliveryID].AsString(), "dlv_"))
	require.Equal(t, hook.ID, a[tracing.WebhookID].AsString())
	require.Equal(t, "acme", a[tracing.OrgID].AsString())
	require.Equal(t, doc.ID, a[tracing.RunID].AsString())
	require.Equal(t, engine.EventRunCompleted, a[tracing.Event].AsString())
	require.Equal(t, int64(1), a[tracing.DeliveryAttempt].AsInt64())
	require.Equal(t, int64(http.StatusNoContent), a[tracing.HTTPStatusCode].AsInt64())
	require.Equal(t, "succeeded", a[tracing.DeliveryOutcome].AsString())
	require.Equal(t, codes.Unset, s.Status().Code)
}

// TestRunSpanOnRejectionAndCancel: a run ended outside the executor (an approval's
// rejection, a cancel) gets its run span from the call that ended it.
func TestRunSpanOnRejectionAndCancel(t *testing.T) {
	t.Parallel()
	r := newRecorded(t)
	b := enginetest.Setup(t, "sqlite", engine.Config{TracerProvider: r.tp})
	w := b.Workflow(t, "acme", "approve", `{"actions": [{"type": "PbotApproval", "properties": {"expires_in_seconds": 3600}}]}`)
	rejected := b.Execute(t, "acme", w.ID, `{}`)
	cancelled := b.Execute(t, "acme", w.ID, `{}`)
	require.Equal(t, svctype.RunPaused, rejected.Status)
	require.Empty(t, r.named("run"))

	_, err := b.Eng.DecideApproval(b.Ctx, "acme", rejected.ID, 0, engine.ApprovalDecision{Approved: false})
	require.NoError(t, err)
	_, err = b.Eng.CancelRun(b.Ctx, "acme", cancelled.ID, "no longer needed", engine.Actor{})
	require.NoError(t, err)

	runs := r.named("run")
	require.Len(t, runs, 2)
	for i, want := range map[int]struct{ id, status string }{0: {rejected.ID, "rejected"}, 1: {cancelled.ID, "cancelled"}} {
		require.Equal(t, tracing.RunSpanContext(want.id).SpanID(), runs[i].SpanContext().SpanID())
		require.Equal(t, want.status, attrs(runs[i])[tracing.RunStatus].AsString())
	}
}
