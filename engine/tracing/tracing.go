// Package tracing is what the engine's OpenTelemetry spans share: a run's trace identity,
// derived from its id, and the attribute names. It depends on the OpenTelemetry API only
// (go.opentelemetry.io/otel/trace), never on the SDK or an exporter: the host that embeds
// the engine chooses those and gives the engine a trace.TracerProvider (engine.Config), a
// no-op one by default.
//
// One run, one trace. A run is advanced in slices by whichever worker claims it, in any
// process, and may wait days for a person between two slices; nothing about its trace is
// stored. Its trace id and the span id of its root span are the first 24 bytes of the
// SHA-256 of its id, so every process puts every span of the run in the same trace, under
// the same root, without agreeing on anything but the run id. The root span itself ("run",
// from the run's creation to its end) is emitted by the process that ends the run; it gets
// the derived ids through IDGenerator, which the host installs in its SDK provider.
package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span the engine makes.
const ScopeName = "github.com/svcflow/svcflow/engine"

// Attribute names. The svcflow.* names are the engine's own; where OpenTelemetry's semantic
// conventions name a thing (gen_ai.*, http.*, error.type) the spans use theirs. No
// attribute carries a secret, a run's input, a step's properties or its output.
const (
	OrgID           = attribute.Key("svcflow.org_id")
	RunID           = attribute.Key("svcflow.run_id")
	WorkflowID      = attribute.Key("svcflow.workflow_id")
	WorkflowVersion = attribute.Key("svcflow.workflow_version")
	// RunStatus is the run's status when the span ends.
	RunStatus = attribute.Key("svcflow.run.status")
	// SliceEnd says why a worker stopped advancing a run: ended, paused, yielded (its slice
	// was used up: back to the queue), drained (the worker is stopping), error.
	SliceEnd = attribute.Key("svcflow.slice.end")
	// SliceUnits counts the units of work a slice committed.
	SliceUnits  = attribute.Key("svcflow.slice.units")
	JobAttempts = attribute.Key("svcflow.job.attempts")
	StepIndex   = attribute.Key("svcflow.step_index")
	StepType    = attribute.Key("svcflow.step_type")
	// StepOutcome: completed, failed, paused, error (the unit did not commit: a store
	// error or a lost lease; the step runs again).
	StepOutcome = attribute.Key("svcflow.step.outcome")
	// StepCommittedWith is, on the span of a step committed in the transaction of an
	// earlier step (quick steps commit together), that step's index.
	StepCommittedWith = attribute.Key("svcflow.step.committed_with")
	// LoopElement is the first foreach element a unit of a loop step ran.
	LoopElement      = attribute.Key("svcflow.loop.element")
	DeliveryID       = attribute.Key("svcflow.delivery_id")
	WebhookID        = attribute.Key("svcflow.webhook_id")
	WebhookTarget    = attribute.Key("svcflow.webhook.target")
	Event            = attribute.Key("svcflow.event")
	DeliveryAttempt  = attribute.Key("svcflow.delivery.attempt")
	DeliveryOutcome  = attribute.Key("svcflow.delivery.outcome")
	ErrorType        = attribute.Key("error.type")
	HTTPMethod       = attribute.Key("http.request.method")
	HTTPStatusCode   = attribute.Key("http.response.status_code")
	GenAIOperation   = attribute.Key("gen_ai.operation.name")
	GenAIModel       = attribute.Key("gen_ai.request.model")
	GenAIRespModel   = attribute.Key("gen_ai.response.model")
	GenAIInputTokens = attribute.Key("gen_ai.usage.input_tokens")
	GenAIOutTokens   = attribute.Key("gen_ai.usage.output_tokens")
)

// Enabled reports whether tp may record anything: false for nil and for the API's no-op
// provider, so that the engine skips every span (and the hashing behind them) when tracing
// is off.
func Enabled(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// ids derives a run's trace id and its root span's id from the run id.
func ids(runID string) (trace.TraceID, trace.SpanID) {
	sum := sha256.Sum256([]byte("svcflow run " + runID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	// An all-zero id is invalid (never seen in practice: 2^-64 for the span id).
	if !tid.IsValid() {
		tid[15] = 1
	}
	if !sid.IsValid() {
		sid[7] = 1
	}
	return tid, sid
}

// TraceID is the id of a run's trace.
func TraceID(runID string) trace.TraceID {
	tid, _ := ids(runID)
	return tid
}

// RunSpanContext is the span context of a run's root span, sampled: the parent of the
// spans of every slice of the run, and what a span outside the run's trace (a webhook
// delivery of one of its events) links to.
func RunSpanContext(runID string) trace.SpanContext {
	tid, sid := ids(runID)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// InRun returns ctx with the run's root span as its (remote) parent: a span started from it
// is in the run's trace.
func InRun(ctx context.Context, runID string) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, RunSpanContext(runID))
}

type rootKey struct{}

// AsRunRoot returns ctx marking the next root span started from it as the run's root span:
// IDGenerator gives it the run's derived ids.
func AsRunRoot(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, rootKey{}, runID)
}

// IDGenerator is an SDK ID generator (go.opentelemetry.io/otel/sdk/trace.IDGenerator) that
// gives a run's root span (a root span started from AsRunRoot) the run's derived ids, and
// every other span random ids. Install it in the provider given to the engine
// (sdktrace.WithIDGenerator(tracing.IDGenerator{})); without it the engine still puts the
// run span in the run's trace, as a child of the root that is never emitted.
type IDGenerator struct{}

// NewIDs returns the ids of a new root span.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if runID, ok := ctx.Value(rootKey{}).(string); ok {
		return ids(runID)
	}
	var tid trace.TraceID
	binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
	binary.BigEndian.PutUint64(tid[8:], rand.Uint64()|1)
	return tid, randomSpanID()
}

// NewSpanID returns the id of a new span in trace traceID.
func (IDGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return randomSpanID() }

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], rand.Uint64()|1)
	return sid
}
