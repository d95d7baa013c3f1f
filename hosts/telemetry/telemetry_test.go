package telemetry_test

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/tracing"
	"github.com/svcflow/svcflow/hosts/telemetry"
	"github.com/svcflow/svcflow/hosts/telemetry/telemetrytest"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestOffByDefault: without an endpoint, or with the SDK disabled, no provider (and so no
// exporter) is built.
func TestOffByDefault(t *testing.T) {
	t.Parallel()
	for name, kv := range map[string]map[string]string{
		"nothing set":    {},
		"only a sampler": {telemetry.EnvSampler: "always_on", "OTEL_SERVICE_NAME": "x"},
		"sdk disabled":   {telemetry.EnvEndpoint: "http://localhost:4318", telemetry.EnvSDKDisabled: "true"},
		"exporter none":  {telemetry.EnvEndpoint: "http://localhost:4318", telemetry.EnvTracesExporter: "none"},
	} {
		tr, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(kv)})
		require.NoError(t, err, name)
		require.Nil(t, tr.Provider, name)
		require.NoError(t, tr.Shutdown(context.Background()))
	}
}

func TestEndpointsAndSamplers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		flag     string
		kv       map[string]string
		url, err string
	}{
		{name: "flag", flag: "http://collector:4318", url: "http://collector:4318/v1/traces"},
		{name: "base from env", kv: map[string]string{telemetry.EnvEndpoint: "http://collector:4318/"}, url: "http://collector:4318/v1/traces"},
		{name: "traces endpoint as is", kv: map[string]string{telemetry.EnvEndpoint: "http://a:4318", telemetry.EnvTracesEndpoint: "https://b/otlp/traces"}, url: "https://b/otlp/traces"},
		{name: "flag wins", flag: "http://flag:4318", kv: map[string]string{telemetry.EnvTracesEndpoint: "http://env/v1/traces"}, url: "http://flag:4318/v1/traces"},
		{name: "credentials hidden", flag: "http://u:pw@c:4318", url: "http://c:4318/v1/traces"},
		{name: "query hidden", kv: map[string]string{telemetry.EnvTracesEndpoint: "https://b/otlp/traces?token=secret-0042"}, url: "https://b/otlp/traces"},
		{name: "a bad URL hides its credentials", flag: "ftp://u:pw-0042@c:4318/?token=secret-0042", err: "ftp://c:4318/:"},
		{name: "not a URL", flag: "collector:4318", err: "--otlp-endpoint"},
		{name: "other exporter", kv: map[string]string{telemetry.EnvEndpoint: "http://c:4318", telemetry.EnvTracesExporter: "zipkin"}, err: "OTLP only"},
		{name: "bad sampler", flag: "http://c:4318", kv: map[string]string{telemetry.EnvSampler: "sometimes"}, err: telemetry.EnvSampler},
		{name: "bad ratio", flag: "http://c:4318", kv: map[string]string{telemetry.EnvSampler: "traceidratio", telemetry.EnvSamplerArg: "2"}, err: telemetry.EnvSamplerArg},
	} {
		tr, err := telemetry.New(context.Background(), telemetry.Options{Endpoint: tc.flag, Getenv: env(tc.kv)})
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			require.Nil(t, tr.Provider, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.url, tr.URL, tc.name)
		require.NoError(t, tr.Shutdown(context.Background()))
	}

	// A sampler decides a run's spans (under the run's derived, sampled, remote root) on
	// their trace id: a ratio of 0 keeps none, the default every one.
	for sampler, recording := range map[string]bool{"traceidratio": false, "": true, "parentbased_always_off": false} {
		tr, err := telemetry.New(context.Background(), telemetry.Options{Endpoint: "http://127.0.0.1:1",
			Getenv: env(map[string]string{telemetry.EnvSampler: sampler, telemetry.EnvSamplerArg: "0"})})
		require.NoError(t, err)
		_, span := tr.Provider.Tracer("t").Start(tracing.InRun(context.Background(), "run-1"), "step")
		require.Equal(t, recording, span.IsRecording(), sampler)
		require.NoError(t, tr.Provider.Shutdown(context.Background()))
	}
}

// TestExportsToCollector: spans reach an OTLP/HTTP collector with the resource's service
// name, version and command, and the run's root span gets the run's derived ids.
func TestExportsToCollector(t *testing.T) {
	t.Parallel()
	col := telemetrytest.New(t)
	tr, err := telemetry.New(context.Background(), telemetry.Options{Endpoint: col.URL, Getenv: env(nil), Version: "v9", Command: "worker"})
	require.NoError(t, err)
	ctx := tracing.AsRunRoot(context.Background(), "run-1")
	_, span := tr.Provider.Tracer("t").Start(ctx, "run")
	span.End()
	require.Zero(t, col.Requests(), "batched until the shutdown")
	require.NoError(t, tr.Shutdown(context.Background()))
	spans := col.Spans()
	require.Len(t, spans, 1)
	s := spans[0]
	require.Equal(t, "run", s.GetName())
	want := tracing.RunSpanContext("run-1")
	require.Equal(t, want.TraceID().String(), hexOf(s.GetTraceId()))
	require.Equal(t, want.SpanID().String(), hexOf(s.GetSpanId()))
	require.Equal(t, "svcflow", s.Resource["service.name"])
	require.Equal(t, "v9", s.Resource["service.version"])
	require.Equal(t, "worker", s.Resource["svcflow.command"])
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
