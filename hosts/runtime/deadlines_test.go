package runtime_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// TestPassedDeadlinesOverHTTP: a form pause's submit and an approval's decision at or after
// their expires_at are 410 (form_expired, approval_expired) though the worker has not
// closed them yet; the pause stays as it was.
func TestPassedDeadlinesOverHTTP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// The engine and its store share the clock: no timer falls due while the test runs.
	eng, err := engine.New(engine.Config{Store: store.OpenTest(t, "sqlite", store.WithNow(clock)), Logger: testlog.Quiet(), Now: clock})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	b := &bundle{eng: eng}
	b.h = runtime.New(eng, runtime.Options{Logger: testlog.Quiet()}).Handler()

	wf := ok[map[string]any](t, b.do(t, http.MethodPost, "/workflows", orgA, map[string]any{"name": "late", "definition": map[string]any{
		"actions": []any{
			map[string]any{"type": "PbotForm", "properties": map[string]any{"expected_keys": []string{"note"}, "ttl_seconds": 1}},
			map[string]any{"type": "PbotApproval", "properties": map[string]any{"expires_in_seconds": 1}},
		}}}), http.StatusCreated)
	run := ok[map[string]any](t, b.do(t, http.MethodPost, "/workflows/"+wf["id"].(string)+"/execute", orgA, map[string]any{"input": map[string]any{}}), http.StatusAccepted)
	id := run["id"].(string)
	_, err = eng.Work(t.Context())
	require.NoError(t, err)

	mu.Lock()
	now = now.Add(time.Second + 2*time.Millisecond)
	mu.Unlock()
	problem(t, b.do(t, http.MethodPost, "/forms/"+id+"/0/submit", orgA, map[string]any{"data": map[string]any{"note": "late"}}), http.StatusGone, "form_expired")
	p := ok[map[string]any](t, b.do(t, http.MethodGet, "/forms/"+id+"/0", orgA, nil), http.StatusOK)
	require.Equal(t, "open", p["status"])

	mu.Lock()
	now = now.Add(-time.Second)
	mu.Unlock()
	ok[map[string]any](t, b.do(t, http.MethodPost, "/forms/"+id+"/0/submit", orgA, map[string]any{"data": map[string]any{"note": "in time"}}), http.StatusOK)
	_, err = eng.Work(t.Context())
	require.NoError(t, err)
	mu.Lock()
	now = now.Add(time.Second + 2*time.Millisecond)
	mu.Unlock()
	problem(t, b.do(t, http.MethodPost, "/approvals/"+id+"/1", orgA, map[string]any{"approved": true}), http.StatusGone, "approval_expired")
	a := ok[map[string]any](t, b.do(t, http.MethodGet, "/approvals/"+id, orgA, nil), http.StatusOK)
	require.Equal(t, "pending", a["status"])
}
