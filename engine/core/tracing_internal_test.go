package core

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
)

// BenchmarkStepSpans is what tracing adds to one unit of run work, its span started and
// ended (the executor's only tracing on the step path): with tracing off, a nil check; on,
// a span made and handed to a batching exporter that keeps it in memory.
func BenchmarkStepSpans(b *testing.B) {
	st := &runState{run: &svctype.Run{ID: "run-1", OrgID: "acme", Status: svctype.RunRunning},
		ent: &defEntry{def: &svctype.Definition{Actions: []svctype.Step{{Type: "custom-table"}}}}}
	for _, tc := range []struct {
		name string
		on   bool
	}{{"off", false}, {"on", true}} {
		b.Run(tc.name, func(b *testing.B) {
			e := &Core{env: NewEnvironment(), reg: newRegistry()}
			if tc.on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewInMemoryExporter()), sdktrace.WithIDGenerator(tracing.IDGenerator{}))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				e.tracer = tp.Tracer(tracing.ScopeName)
			}
			ctx := tracing.InRun(context.Background(), st.run.ID)
			b.ReportAllocs()
			for b.Loop() {
				_, span := e.startStep(ctx, st)
				endStep(span, st, nil)
			}
		})
	}
}
