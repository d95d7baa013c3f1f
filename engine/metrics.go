package engine

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
	"github.com/svcflow/svcflow/engine/webhooks"
)

// Model metrics: every model call of every feature (the llm action, agents, form schema
// drafting, workflow drafting) goes through the model the composition root builds, so
// they are counted there, by the organization the call is made for.
var (
	// MetricModelTokens counts the tokens models consumed, by organization and direction
	// (input, output).
	MetricModelTokens = &svctype.MetricDesc{Name: "svcflow_model_tokens_total", Kind: svctype.Counter,
		Labels: []string{"org_id", "direction"}, Help: "Tokens consumed by model calls, by organization and direction (input, output)."}
	// MetricModelCalls counts model calls by organization and result (ok, error).
	MetricModelCalls = &svctype.MetricDesc{Name: "svcflow_model_calls_total", Kind: svctype.Counter,
		Labels: []string{"org_id", "result"}, Help: "Model calls, by organization and result (ok, error)."}
)

// Metrics lists every metric the engine records: the run core's, the features', and the
// model calls'. A host registers them all (hosts/metrics), so that each is exported, at
// zero, before its first value.
func Metrics() []*svctype.MetricDesc {
	out := append(core.Metrics(), webhooks.Metrics()...)
	return append(out, MetricModelTokens, MetricModelCalls)
}

// observedModel counts a model's calls and tokens by the organization in the call's
// context (svctype.WithOrg; "unknown" when none was put there), and, when tracing is on
// (tracer not nil), makes a span of each call under the span in the call's context: the
// step that made it. The span carries the model's name and the tokens, never a message.
type observedModel struct {
	agent.Model
	meter  svctype.Meter
	tracer trace.Tracer
}

func (m observedModel) Chat(ctx context.Context, req agent.Request) (*agent.Response, error) {
	org := svctype.OrgFrom(ctx)
	if org == "" {
		org = "unknown"
	}
	var span trace.Span
	if m.tracer != nil {
		ctx, span = m.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			tracing.GenAIOperation.String("chat"), tracing.GenAIModel.String(req.Model), tracing.OrgID.String(org)))
		defer span.End()
	}
	resp, err := m.Model.Chat(ctx, req)
	if err != nil {
		m.meter.Record(MetricModelCalls, 1, org, "error")
		if span != nil {
			kind := "error"
			var me *agent.ModelError
			if errors.As(err, &me) && me.Kind != "" {
				kind = string(me.Kind)
			}
			span.SetAttributes(tracing.ErrorType.String(kind))
			span.SetStatus(codes.Error, "model call failed")
		}
		return resp, err
	}
	m.meter.Record(MetricModelCalls, 1, org, "ok")
	if resp != nil {
		m.meter.Record(MetricModelTokens, float64(resp.Usage.InputTokens), org, "input")
		m.meter.Record(MetricModelTokens, float64(resp.Usage.OutputTokens), org, "output")
		if span != nil {
			span.SetAttributes(tracing.GenAIRespModel.String(resp.Model),
				tracing.GenAIInputTokens.Int(resp.Usage.InputTokens), tracing.GenAIOutTokens.Int(resp.Usage.OutputTokens))
		}
	}
	return resp, nil
}
