package core

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
)

// The run core's spans (engine/tracing says why a run's trace id is derived from its id):
//
//	run                  the run, from its creation to its end; emitted by whoever ends it
//	└─ run.slice         one claim of the run's job by a worker: the units it committed
//	   └─ step <type>    one committed unit of work (a step, or a batch of foreach elements),
//	      │              its outside calls included
//	      └─ chat <model>   a model call the step made (engine's model wrapper)
//
// Every span of a run, in any process, is in the run's trace. With tracing off (no
// provider, or the no-op one) e.tracer is nil and none of this runs.

// startSlice starts the span of a worker's claim of st's run.
func (e *Core) startSlice(ctx context.Context, job *svctype.Job, st *runState) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, nil
	}
	return e.tracer.Start(tracing.InRun(ctx, st.run.ID), "run.slice", trace.WithAttributes(
		tracing.OrgID.String(st.run.OrgID), tracing.RunID.String(st.run.ID), tracing.WorkflowID.String(st.run.WorkflowID),
		tracing.JobAttempts.Int(job.Attempts)))
}

// endSlice ends a slice's span: how many units it committed and why it stopped.
func endSlice(span trace.Span, st *runState, units int, yielded, drained bool) {
	if span == nil {
		return
	}
	end := "error"
	switch {
	case yielded:
		end = "yielded"
	case st.run.Status == svctype.RunPaused:
		end = "paused"
	case st.run.Status.Terminal():
		end = "ended"
	case drained:
		end = "drained"
	}
	span.SetAttributes(tracing.SliceUnits.Int(units), tracing.SliceEnd.String(end), tracing.RunStatus.String(string(st.run.Status)))
	if end == "error" {
		span.SetStatus(codes.Error, "advancing the run failed; its job is claimed again")
	}
	span.End()
}

// startStep starts the span of the unit of work st's cursor is on; nil when there is no
// step there (a run past its last step commits its end only).
func (e *Core) startStep(ctx context.Context, st *runState) (context.Context, trace.Span) {
	i := st.run.Cursor.Step
	if e.tracer == nil || i >= len(st.ent.def.Actions) {
		return ctx, nil
	}
	var attrs []attribute.KeyValue
	if l := st.run.Cursor.Loop; l != nil {
		attrs = append(attrs, tracing.LoopElement.Int(l.Next))
	}
	return e.startStepAt(ctx, st, i, attrs)
}

// startStepAt starts the span of step i, with attrs besides the ones every step span has.
func (e *Core) startStepAt(ctx context.Context, st *runState, i int, attrs []attribute.KeyValue, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	step := &st.ent.def.Actions[i]
	typ := step.Type
	attrs = append([]attribute.KeyValue{tracing.OrgID.String(st.run.OrgID), tracing.RunID.String(st.run.ID),
		tracing.StepIndex.Int(i), tracing.StepType.String(typ)}, attrs...)
	// A span's name is kept to a small set: a built-in kind names it, an organization's own
	// action (any name) does not.
	name := "step " + typ
	_, builtin := e.env.Lookup(typ)
	if _, pause := e.stepPause(step); !builtin && !pause && typ != LoopStep {
		name = "step action"
	}
	return e.tracer.Start(ctx, name, append(opts, trace.WithAttributes(attrs...))...)
}

// traceChained emits the span of a step committed in the transaction of step first
// (chainSteps), beside first's: its own start and end, and the step it committed with.
func (e *Core) traceChained(ctx context.Context, st *runState, first int, s chainedStep) {
	if e.tracer == nil {
		return
	}
	_, span := e.startStepAt(ctx, st, s.index, []attribute.KeyValue{tracing.StepCommittedWith.Int(first),
		tracing.StepOutcome.String("completed")}, trace.WithTimestamp(s.began))
	span.End(trace.WithTimestamp(s.ended))
}

// endStep ends a unit's span with its outcome. Neither the failure's message nor anything
// of the step's input or output goes into the span: the run's record has them, behind the
// organization's credentials.
func endStep(span trace.Span, st *runState, err error) {
	if span == nil {
		return
	}
	outcome := "completed"
	switch {
	case err != nil:
		outcome = "error"
		span.SetStatus(codes.Error, "the unit did not commit; it runs again")
	case st.run.Status == svctype.RunFailed:
		outcome = "failed"
		span.SetAttributes(tracing.ErrorType.String("step_failed"))
		span.SetStatus(codes.Error, "step failed")
	case st.run.Status == svctype.RunPaused:
		outcome = "paused"
	}
	span.SetAttributes(tracing.StepOutcome.String(outcome))
	span.End()
}

// traceRunEnd emits a run's root span, from its creation to its end, once the run has
// ended (committed). With tracing.IDGenerator in the provider the span is the root of the
// run's trace; without it, it is started again as a child of that root (never emitted),
// so that it is in the run's trace all the same: the first start is dropped unended (an
// unended span is never exported).
func (e *Core) traceRunEnd(run *svctype.Run) {
	if e.tracer == nil {
		return
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(run.CreatedAt), trace.WithAttributes(
		tracing.OrgID.String(run.OrgID), tracing.RunID.String(run.ID), tracing.WorkflowID.String(run.WorkflowID),
		tracing.WorkflowVersion.Int(run.WorkflowVersion), tracing.RunStatus.String(string(run.Status)))}
	_, span := e.tracer.Start(tracing.AsRunRoot(context.Background(), run.ID), "run", append(opts, trace.WithNewRoot())...)
	if span.SpanContext().TraceID() != tracing.TraceID(run.ID) {
		_, span = e.tracer.Start(tracing.InRun(context.Background(), run.ID), "run", opts...)
	}
	if run.Status == svctype.RunFailed {
		span.SetStatus(codes.Error, "run failed")
	}
	end := e.now()
	if run.FinishedAt != nil {
		end = *run.FinishedAt
	}
	span.End(trace.WithTimestamp(end))
}

// TraceRunEnd emits the root span of run, which a feature ended in a transaction it
// committed (a rejection): see traceRunEnd.
func (e *Core) TraceRunEnd(run *svctype.Run) { e.traceRunEnd(run) }
