package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/tracing"
	"github.com/svcflow/svcflow/hosts/telemetry/telemetrytest"
)

// TestServeExportsTraces starts the real binary with OTEL_EXPORTER_OTLP_ENDPOINT pointing
// at a collector double: a run's spans (the run, its slice, its two steps) arrive, decoded
// from OTLP/HTTP protobuf, in the run's derived trace, with the service name of
// OTEL_SERVICE_NAME and the run's ids, sent by the time SIGTERM's drain ends (the
// provider's shutdown flushes them). The same binary without the variables builds no
// exporter.
func TestServeExportsTraces(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	col := telemetrytest.New(t)
	env := append(withoutOTel(), "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_SERVICE_NAME=svcflow-traced")
	p := startProcessEnv(t, bin, "", env, "serve", "--db", "sqlite::memory:", "--runtime-addr", "127.0.0.1:0")
	require.Contains(t, p.logs.String(), "tracing: sending spans over OTLP")
	c := orgConfigClient{t: t, base: p.base}
	code, body := c.call("POST", "/custom-tables", `{"name": "notes", "fields": {"text": "text"}}`)
	require.Equal(t, 201, code, body)
	code, body = c.call("POST", "/workflows", `{"name": "note", "definition": {"actions": [
		{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{input.text}}"}}},
		{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "again"}}}]}}`)
	require.Equal(t, 201, code, body)
	wfID := jsonField(t, body, "id")
	code, body = c.call("POST", fmt.Sprintf("/workflows/%s/execute?wait=20s", wfID), `{"input": {"text": "a private note"}}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, "completed", jsonField(t, body, "status"))
	runID := jsonField(t, body, "id")
	require.NoError(t, p.stop(), p.logs.String())

	tid := tracing.TraceID(runID).String()
	byName := map[string][]telemetrytest.Span{}
	for _, s := range col.Spans() {
		if hex.EncodeToString(s.GetTraceId()) != tid {
			continue
		}
		byName[s.GetName()] = append(byName[s.GetName()], s)
		require.Equal(t, "svcflow-traced", s.Resource["service.name"])
		require.Equal(t, "serve", s.Resource["svcflow.command"])
		require.Equal(t, runID, s.Attrs["svcflow.run_id"], s.GetName())
		require.Equal(t, "acme", s.Attrs["svcflow.org_id"], s.GetName())
		for _, v := range s.Attrs {
			require.NotContains(t, v, "private note")
		}
	}
	require.Len(t, byName["run"], 1, "%v", byName)
	run := byName["run"][0]
	require.Equal(t, tracing.RunSpanContext(runID).SpanID().String(), hex.EncodeToString(run.GetSpanId()))
	require.Empty(t, run.GetParentSpanId())
	require.Equal(t, "completed", run.Attrs["svcflow.run.status"])
	require.Len(t, byName["run.slice"], 1)
	require.Equal(t, run.GetSpanId(), byName["run.slice"][0].GetParentSpanId())
	steps := byName["step custom-table"]
	require.Len(t, steps, 2)
	for i, s := range steps {
		require.Equal(t, byName["run.slice"][0].GetSpanId(), s.GetParentSpanId())
		require.Equal(t, fmt.Sprint(i), s.Attrs["svcflow.step_index"])
		require.Equal(t, "custom-table", s.Attrs["svcflow.step_type"])
		require.Equal(t, "completed", s.Attrs["svcflow.step.outcome"])
	}

	// Without the variables: no exporter, nothing said about tracing.
	q := startProcessEnv(t, bin, "", withoutOTel(), "serve", "--db", "sqlite::memory:", "--runtime-addr", "127.0.0.1:0")
	require.NoError(t, q.stop())
	require.NotContains(t, q.logs.String(), "tracing")
}

// withoutOTel is this process's environment without the master key's and OpenTelemetry's
// variables.
func withoutOTel() []string {
	var env []string
	for _, kv := range envWithout() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}

func jsonField(t *testing.T, body, key string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	v, _ := m[key].(string)
	require.NotEmpty(t, v, "%s in %s", key, body)
	return v
}
