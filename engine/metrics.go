package engine

import (
	"context"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/svctype"
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

// meteredModel counts a model's calls and tokens by the organization in the call's
// context (svctype.WithOrg; "unknown" when none was put there).
type meteredModel struct {
	agent.Model
	meter svctype.Meter
}

func (m meteredModel) Chat(ctx context.Context, req agent.Request) (*agent.Response, error) {
	org := svctype.OrgFrom(ctx)
	if org == "" {
		org = "unknown"
	}
	resp, err := m.Model.Chat(ctx, req)
	if err != nil {
		m.meter.Record(MetricModelCalls, 1, org, "error")
		return resp, err
	}
	m.meter.Record(MetricModelCalls, 1, org, "ok")
	if resp != nil {
		m.meter.Record(MetricModelTokens, float64(resp.Usage.InputTokens), org, "input")
		m.meter.Record(MetricModelTokens, float64(resp.Usage.OutputTokens), org, "output")
	}
	return resp, nil
}
