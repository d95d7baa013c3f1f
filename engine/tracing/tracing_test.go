package tracing_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/svcflow/svcflow/engine/tracing"
)

var _ sdktrace.IDGenerator = tracing.IDGenerator{}

func TestIDs(t *testing.T) {
	t.Parallel()
	sc := tracing.RunSpanContext("run-1")
	require.True(t, sc.IsValid())
	require.True(t, sc.IsSampled())
	require.Equal(t, tracing.TraceID("run-1"), sc.TraceID())
	require.NotEqual(t, tracing.TraceID("run-1"), tracing.TraceID("run-2"))
	// As docs/operations.md gives it, for an operator to compute: sha256("svcflow run " + id).
	for _, id := range []string{"run-1", "run-2", "run-0b7e1c"} {
		sum := sha256.Sum256([]byte("svcflow run " + id))
		require.Equal(t, hex.EncodeToString(sum[:16]), tracing.TraceID(id).String())
		require.Equal(t, hex.EncodeToString(sum[16:24]), tracing.RunSpanContext(id).SpanID().String())
	}

	var g tracing.IDGenerator
	tid, sid := g.NewIDs(tracing.AsRunRoot(context.Background(), "run-1"))
	require.Equal(t, sc.TraceID(), tid)
	require.Equal(t, sc.SpanID(), sid)
	t1, s1 := g.NewIDs(context.Background())
	t2, s2 := g.NewIDs(context.Background())
	require.True(t, t1.IsValid() && s1.IsValid())
	require.NotEqual(t, t1, t2)
	require.NotEqual(t, s1, s2)
	require.NotEqual(t, sid, g.NewSpanID(context.Background(), tid))

	// A span started from InRun is in the run's trace, under its root.
	tp := sdktrace.NewTracerProvider()
	_, span := tp.Tracer("t").Start(tracing.InRun(context.Background(), "run-1"), "step")
	ro := span.(sdktrace.ReadOnlySpan)
	require.Equal(t, sc.TraceID(), ro.SpanContext().TraceID())
	require.Equal(t, sc.SpanID(), ro.Parent().SpanID())
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	require.False(t, tracing.Enabled(nil))
	require.False(t, tracing.Enabled(noop.NewTracerProvider()))
	var none trace.TracerProvider
	require.False(t, tracing.Enabled(none))
	require.True(t, tracing.Enabled(sdktrace.NewTracerProvider()))
}

// Every process derives the same trace for a run from its id alone.
func ExampleTraceID() {
	fmt.Println(tracing.TraceID("run-0b7e1c"))
	fmt.Println(tracing.RunSpanContext("run-0b7e1c").TraceID() == tracing.TraceID("run-0b7e1c"))
	// Output:
	// 3501d43393cf46303245b4e35e5e3da7
	// true
}
