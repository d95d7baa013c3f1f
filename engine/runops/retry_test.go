package runops_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// server is a third party that counts the calls it gets and fails those whose body holds
// "bad" (or every call) until it is fixed.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []string
	broken bool
	fixed  bool
}

func newServer(t *testing.T, broken bool) *server {
	s := &server{broken: broken}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls = append(s.calls, string(raw))
		fail := !s.fixed && (s.broken || strings.Contains(string(raw), "bad"))
		s.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error": "not today"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok": true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) fix() { s.mu.Lock(); s.fixed = true; s.mu.Unlock() }

func (s *server) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.calls) }

// forEachDialect runs fn on an engine of each dialect that may reach the test servers.
func forEachDialect(t *testing.T, fn func(t *testing.T, b *enginetest.Logged)) {
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, enginetest.SetupLogged(t, d, true))
		})
	}
}

func rows(t *testing.T, b *enginetest.Logged, org, table string) []svctype.Row {
	t.Helper()
	rs, err := b.Eng.ReadRows(b.Ctx, org, table, nil, 100)
	require.NoError(t, err)
	return rs
}

func work(t *testing.T, b *enginetest.Logged) {
	t.Helper()
	_, err := b.Eng.Work(b.Ctx)
	require.NoError(t, err)
}

// A run of [table write, call A, call B] whose B failed is retried once B is fixed: the
// new run starts at B, with A's output in its context; the row is written once and A
// called once in all, B twice. The plan said so beforehand; the evidence of both runs
// links them, with the reason and the actor.
func TestRetryRunsAgainFromTheFailedStepOnly(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		a, bsrv := newServer(t, false), newServer(t, true)
		b.CustomerTables(t, org)
		b.Action(t, org, svctype.Action{Name: "call_a", Kind: svctype.ActionHTTP, URL: a.URL + "/a"})
		b.Action(t, org, svctype.Action{Name: "call_b", Kind: svctype.ActionHTTP, URL: bsrv.URL + "/b", HTTPMethod: "PUT"})
		w := b.Workflow(t, org, "three", `{"search_keys": ["@input.x"], "actions": [
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "@input.x"}}},
			{"type": "call_a", "properties": {"x": "@input.x"}, "outputKey": "a"},
			{"type": "call_b", "properties": {"x": "@input.x"}, "outputKey": "b"}]}`)
		failed := b.Execute(t, org, w.ID, `{"x": "one"}`)
		require.Equal(t, svctype.RunFailed, failed.Status)
		require.Equal(t, 1, a.count())
		require.Equal(t, 1, bsrv.count())

		plan, err := b.Eng.RetryPlan(b.Ctx, org, failed.ID)
		require.NoError(t, err)
		require.Equal(t, 2, plan.FromStep)
		require.Equal(t, []int{0, 1}, plan.Reused)
		require.Len(t, plan.Steps, 1)
		require.Equal(t, []svctype.PlannedCall{{Kind: "http", Method: "PUT", Host: strings.TrimPrefix(bsrv.URL, "http://"), Detail: "call_b"}}, plan.Steps[0].Calls)
		require.Equal(t, map[string]int{"http": 1}, plan.Calls)

		_, err = b.Eng.RetryRun(b.Ctx, org, failed.ID, "  ", engine.Actor{})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, "a retry says why")

		bsrv.fix()
		next, err := b.Eng.RetryRun(b.Ctx, org, failed.ID, "B is back", engine.Actor{Type: "user", ID: "ops@example.com"})
		require.NoError(t, err)
		require.NotEqual(t, failed.ID, next.ID)
		require.Equal(t, w.Version, next.WorkflowVersion)
		work(t, b)
		doc, err := b.Eng.RunStatus(b.Ctx, org, next.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, map[string]any{"ok": true}, doc.Context["a"], "A's output is reused")
		require.Equal(t, map[string]any{"ok": true}, doc.Context["b"])
		require.Equal(t, 1, a.count(), "A is not called again")
		require.Equal(t, 2, bsrv.count())
		require.Len(t, rows(t, b, org, "notes"), 1, "the row is not written again")
		byKey, err := b.Eng.ListRuns(b.Ctx, org, engine.RunFilter{Key: "one"})
		require.NoError(t, err)
		require.Len(t, byKey.Items, 2, "the retried run is found by its search key, as the failed one is")

		ev, err := b.Eng.Evidence(b.Ctx, org, next.ID)
		require.NoError(t, err)
		require.NotNil(t, ev.Retry)
		require.Equal(t, failed.ID, ev.Retry.RetryOf)
		require.Equal(t, 2, ev.Retry.FromStep)
		require.Equal(t, "B is back", ev.Retry.Reason)
		require.Equal(t, engine.Actor{Type: "user", ID: "ops@example.com"}, ev.Retry.Actor)
		require.Len(t, ev.Steps, 3)
		require.Equal(t, "reused", ev.Steps[0].Decisions[len(ev.Steps[0].Decisions)-1].Kind)
		require.Empty(t, ev.Steps[0].Effects, "the row's effect is the failed run's")
		require.NotEmpty(t, ev.Effects)
		for _, eff := range ev.Effects {
			require.Equal(t, 2, eff.StepIndex, "this run's own effects only: B's call")
		}
		old, err := b.Eng.Evidence(b.Ctx, org, failed.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunFailed, old.Status, "the failed run's record is kept as it was")
		require.NotNil(t, old.RetriedBy)
		require.Equal(t, next.ID, old.RetriedBy.RunID)

		p := b.EventPayload(t, org, next.ID, engine.EventRunRetried)
		require.Equal(t, failed.ID, p["retry_of"])
		require.Equal(t, float64(2), p["from_step"])
		require.Equal(t, "B is back", p["reason"])
		require.Equal(t, []string{"workflow_run_started", engine.EventRunRetried}, b.Events(t, org, next.ID)[:2])

		// A failed run is retried once; a run that did not fail is not retried; another
		// organization's run is not found.
		_, err = b.Eng.RetryRun(b.Ctx, org, failed.ID, "again", engine.Actor{})
		require.ErrorIs(t, err, engine.ErrConflict)
		_, err = b.Eng.RetryPlan(b.Ctx, org, failed.ID)
		require.ErrorIs(t, err, engine.ErrConflict)
		_, err = b.Eng.RetryRun(b.Ctx, org, next.ID, "again", engine.Actor{})
		require.ErrorIs(t, err, engine.ErrConflict)
		_, err = b.Eng.RetryRun(b.Ctx, "org-b", failed.ID, "mine?", engine.Actor{})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.RetryPlan(b.Ctx, "org-b", failed.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

// A foreach that failed at element 2 goes on at element 2: the elements before it are
// neither written nor called again, and the loop's result holds every element.
func TestRetryGoesOnAtTheForeachElementThatFailed(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		bsrv := newServer(t, false)
		b.CustomerTables(t, org)
		b.Action(t, org, svctype.Action{Name: "call_b", Kind: svctype.ActionHTTP, URL: bsrv.URL + "/b"})
		w := b.Workflow(t, org, "lines", `{"actions": [
			{"type": "loop", "properties": {"mode": "foreach", "items": "@input.lines", "result_key": "each", "steps": [
				{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "@item"}}},
				{"type": "call_b", "properties": {"line": "@item"}}]}},
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "end"}}}]}`)
		failed := b.Execute(t, org, w.ID, `{"lines": ["a", "b", "bad", "d"]}`)
		require.Equal(t, svctype.RunFailed, failed.Status)
		require.Equal(t, 3, bsrv.count())
		require.Len(t, rows(t, b, org, "notes"), 2)

		plan, err := b.Eng.RetryPlan(b.Ctx, org, failed.ID)
		require.NoError(t, err)
		require.Equal(t, 0, plan.FromStep)
		require.NotNil(t, plan.FromElement)
		require.Equal(t, 2, *plan.FromElement)
		var paths []string
		for _, s := range plan.Steps {
			paths = append(paths, s.Path)
		}
		require.Equal(t, []string{"0", "0/steps/0", "0/steps/1", "1"}, paths)
		require.Equal(t, "http", plan.Steps[2].Calls[0].Kind)

		bsrv.fix()
		next, err := b.Eng.RetryRun(b.Ctx, org, failed.ID, "line fixed", engine.Actor{})
		require.NoError(t, err)
		work(t, b)
		doc, err := b.Eng.RunStatus(b.Ctx, org, next.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Len(t, doc.Context["each"], 4)
		require.Equal(t, 5, bsrv.count(), "a, b and bad once before; bad and d now")
		var texts []string
		for _, r := range rows(t, b, org, "notes") {
			texts = append(texts, r.Data["text"].(string))
		}
		require.ElementsMatch(t, []string{"a", "b", "bad", "d", "end"}, texts)
	})
}

// A retry runs the failed run's workflow version, not the workflow's current one.
func TestRetryRunsTheFailedRunsVersion(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		b.CustomerTables(t, org)
		w := b.Workflow(t, org, "v", `{"actions": [
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "v1"}}},
			{"type": "custom-table", "properties": {"table": "later", "operation": "read"}}]}`)
		failed := b.Execute(t, org, w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, failed.Status)
		w2, err := b.Eng.UpdateWorkflow(b.Ctx, org, w.ID, engine.WorkflowInput{Name: "v", Definition: json.RawMessage(`{"actions": [
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "v2"}}}]}`)})
		require.NoError(t, err)
		require.Equal(t, 2, w2.Version)
		_, err = b.Eng.CreateTable(b.Ctx, org, "later", map[string]string{"x": "text"})
		require.NoError(t, err)

		next, err := b.Eng.RetryRun(b.Ctx, org, failed.ID, "table made", engine.Actor{})
		require.NoError(t, err)
		work(t, b)
		doc, err := b.Eng.RunStatus(b.Ctx, org, next.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, 1, doc.WorkflowVersion)
		require.Len(t, doc.Steps, 2, "version 1's steps")
		notes := rows(t, b, org, "notes")
		require.Len(t, notes, 1)
		require.Equal(t, "v1", notes[0].Data["text"])
	})
}

// The plan of a run that failed before an agent, a branch and a loop lists what each
// would reach: the agent's model and its tools, an http action in a branch, a pause.
func TestRetryPlanListsTheCallsOfLaterSteps(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		b.Action(t, org, svctype.Action{Name: "notify", Kind: svctype.ActionHTTP, URL: "https://hooks.example.com/x", HTTPMethod: "GET"})
		b.Action(t, org, svctype.Action{Name: "ask", Kind: svctype.ActionLLM, Template: "Why {{x}}?"})
		w := b.Workflow(t, org, "later", `{"actions": [
			{"type": "custom-table", "properties": {"table": "missing", "operation": "read"}},
			{"type": "loop", "properties": {"mode": "react", "objective": "check", "tools": [{"type": "action", "name": "notify"}], "max_iterations": 3}},
			{"type": "ask", "properties": {"x": 1}, "filter": {"condition": {"equal": [1, 2]}}, "onFalse": {"type": "notify", "properties": {}}},
			{"type": "PbotApproval", "properties": {"comment": "ok?"}}]}`)
		failed := b.Execute(t, org, w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, failed.Status)
		plan, err := b.Eng.RetryPlan(b.Ctx, org, failed.ID)
		require.NoError(t, err)
		require.Equal(t, 0, plan.FromStep)
		require.Empty(t, plan.Reused)
		byPath := map[string]svctype.PlannedStep{}
		for _, s := range plan.Steps {
			byPath[s.Path] = s
		}
		require.Len(t, byPath, 5)
		require.Empty(t, byPath["0"].Calls)
		agent := byPath["1"].Calls
		require.Equal(t, "model", agent[0].Kind)
		require.Equal(t, "agent", agent[1].Kind)
		require.Contains(t, agent[1].Detail, "notify")
		require.Equal(t, []svctype.PlannedCall{{Kind: "model", Detail: "ask"}}, byPath["2"].Calls)
		require.Equal(t, []svctype.PlannedCall{{Kind: "http", Method: "GET", Host: "hooks.example.com", Detail: "notify"}}, byPath["2/onFalse"].Calls)
		require.True(t, byPath["3"].Pauses)
		require.Equal(t, map[string]int{"model": 2, "agent": 1, "http": 1}, plan.Calls)
	})
}
