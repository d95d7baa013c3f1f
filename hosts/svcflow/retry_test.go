package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetryFromTheFailedStepEndToEnd runs the real service on [table write, call A, call B]
// where B answers 400 until it is fixed: the run fails at B; its retry plan names B's
// method and host; the retry, once B is fixed, completes with A called once in all, the
// row written once and B called twice.
func TestRetryFromTheFailedStepEndToEnd(t *testing.T) {
	t.Parallel()
	var callsA, callsB atomic.Int32
	var fixed atomic.Bool
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		callsA.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"a": "done"}`))
	}))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		callsB.Add(1)
		if !fixed.Load() {
			http.Error(w, `{"error": "down"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"b": "done"}`))
	}))
	defer b.Close()

	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+filepath.Join(dir, "svc.db"),
		"--runtime-addr", "127.0.0.1:0", "--allow-private-targets")
	c := orgConfigClient{t: t, base: p.base}
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, text := c.call(method, path, body)
		require.Equal(t, want, code, text)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &m), text)
		return m
	}
	call("POST", "/custom-tables", `{"name": "orders", "fields": {"ref": "text"}}`, 201)
	call("POST", "/actions", `{"action_name": "call_a", "kind": "http", "url": "`+a.URL+`/a"}`, 201)
	call("POST", "/actions", `{"action_name": "call_b", "kind": "http", "url": "`+b.URL+`/b"}`, 201)
	w := call("POST", "/workflows", `{"name": "three", "definition": {"actions": [
		{"type": "custom-table", "properties": {"table": "orders", "operation": "write", "fields": {"ref": "@input.ref"}}},
		{"type": "call_a", "properties": {"ref": "@input.ref"}, "outputKey": "a"},
		{"type": "call_b", "properties": {"ref": "@input.ref"}, "outputKey": "b"}]}}`, 201)
	doc := call("POST", "/workflows/"+w["id"].(string)+"/execute?wait=30s", `{"input": {"ref": "INV-1"}}`, 200)
	require.Equal(t, "failed", doc["status"], doc)
	failed := doc["id"].(string)

	plan := call("GET", "/runs/"+failed+"/retry-plan", "", 200)
	require.Equal(t, float64(2), plan["from_step"])
	steps := plan["steps"].([]any)
	require.Len(t, steps, 1)
	require.Equal(t, []any{map[string]any{"kind": "http", "method": "POST", "host": b.Listener.Addr().String(), "detail": "call_b"}},
		steps[0].(map[string]any)["calls"])

	fixed.Store(true)
	next := call("POST", "/runs/"+failed+"/retry", `{"reason": "B is back"}`, 201)
	require.Equal(t, failed, next["retry_of"])
	doc = call("GET", "/runs/"+next["id"].(string)+"/status?wait=30s", "", 200)
	require.Equal(t, "completed", doc["status"], doc)
	require.Equal(t, map[string]any{"a": "done"}, doc["context"].(map[string]any)["a"])

	require.Equal(t, int32(1), callsA.Load(), "A is called once in all")
	require.Equal(t, int32(2), callsB.Load(), "B: the failed call and the retry's")
	rows := call("GET", "/custom-tables/orders/rows", "", 200)
	require.Len(t, rows["items"], 1, "the row is written once")
	require.NoError(t, p.stop())
}
