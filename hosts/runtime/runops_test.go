package runtime_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// failingRun starts a run of [write a note, read a table that does not exist] and works it
// to its failure at step 1.
func (b *bundle) failingRun(t *testing.T, org, name string) (workflowID string, run runRef) {
	t.Helper()
	for _, table := range []string{"notes"} {
		rec := b.do(t, http.MethodPost, "/custom-tables", org, map[string]any{"name": table, "fields": map[string]string{"text": "text"}})
		require.Contains(t, []int{http.StatusCreated, http.StatusConflict}, rec.Code, rec.Body.String())
	}
	w := ok[map[string]any](t, b.do(t, http.MethodPost, "/workflows", org, map[string]any{"name": name, "definition": map[string]any{"actions": []any{
		map[string]any{"type": "custom-table", "properties": map[string]any{"table": "notes", "operation": "write", "fields": map[string]any{"text": "@input.n"}}},
		map[string]any{"type": "custom-table", "properties": map[string]any{"table": "later", "operation": "read"}},
	}}}), http.StatusCreated)
	run = b.execute(t, org, w["id"].(string), map[string]any{"n": "1"})
	b.work(t)
	return w["id"].(string), run
}

func TestRetryRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, run := b.failingRun(t, orgA, "w")

	plan := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/retry-plan", orgA, nil), http.StatusOK)
	require.Equal(t, float64(1), plan["from_step"])
	require.Equal(t, []any{float64(0)}, plan["reused_steps"])
	require.Len(t, plan["steps"], 1)

	// A reason is required; another organization's run is not found.
	problem(t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/retry", orgA, map[string]any{"reason": ""}), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/retry", orgB, map[string]any{"reason": "mine"}), http.StatusNotFound, "not_found")
	problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/retry-plan", orgB, nil), http.StatusNotFound, "not_found")

	b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{"name": "later", "fields": map[string]string{"x": "text"}})
	got := ok[map[string]any](t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/retry", orgA, map[string]any{"reason": "table made"}, "X-Actor-Id: ops-7"), http.StatusCreated)
	require.Equal(t, run.ID, got["retry_of"])
	require.Equal(t, float64(1), got["from_step"])
	require.Equal(t, "running", got["status"])
	next := got["id"].(string)
	b.work(t)
	status := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+next+"/status", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", status["status"])
	ev := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+next+"/evidence", orgA, nil), http.StatusOK)
	retry := ev["retry"].(map[string]any)
	require.Equal(t, run.ID, retry["retry_of"])
	require.Equal(t, "table made", retry["reason"])
	require.Equal(t, map[string]any{"type": "api", "id": "ops-7"}, retry["actor"])
	old := ok[map[string]any](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/evidence", orgA, nil), http.StatusOK)
	require.Equal(t, next, old["retried_by"].(map[string]any)["run_id"])
	rows := ok[list[rowDoc]](t, b.do(t, http.MethodGet, "/custom-tables/notes/rows", orgA, nil), http.StatusOK)
	require.Len(t, rows.Items, 1, "the note is not written again")

	// Retried already; and a run that did not fail.
	p := problem(t, b.do(t, http.MethodPost, "/runs/"+run.ID+"/retry", orgA, map[string]any{"reason": "again"}), http.StatusConflict, "conflict")
	require.Contains(t, p.Detail, next)
	problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/retry-plan", orgA, nil), http.StatusConflict, "conflict")
	p = problem(t, b.do(t, http.MethodPost, "/runs/"+next+"/retry", orgA, map[string]any{"reason": "again"}), http.StatusConflict, "conflict")
	require.Contains(t, p.Detail, "completed")
}

func TestRunOperationRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf, _ := b.failingRun(t, orgA, "w")
	b.execute(t, orgA, wf, map[string]any{"n": "2"})
	b.work(t)

	body := map[string]any{"action": "retry", "filter": map[string]any{"workflow_id": wf, "status": []string{"failed"}}, "reason": "table made", "dry_run": true}
	dry := ok[map[string]any](t, b.do(t, http.MethodPost, "/run-operations", orgA, body), http.StatusOK)
	require.Equal(t, float64(2), dry["matched"])
	require.Equal(t, true, dry["dry_run"])
	require.Empty(t, ok[list[map[string]any]](t, b.do(t, http.MethodGet, "/run-operations", orgA, nil), http.StatusOK).Items)

	problem(t, b.do(t, http.MethodPost, "/run-operations", orgA, map[string]any{"action": "pause", "reason": "x"}), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodPost, "/run-operations", orgA, map[string]any{"action": "cancel", "filter": map[string]any{"status": []string{"asleep"}}, "reason": "x"}), http.StatusUnprocessableEntity, "validation_failed")

	b.do(t, http.MethodPost, "/custom-tables", orgA, map[string]any{"name": "later", "fields": map[string]string{"x": "text"}})
	delete(body, "dry_run")
	op := ok[map[string]any](t, b.do(t, http.MethodPost, "/run-operations", orgA, body, "X-Actor-Id: ops-7"), http.StatusAccepted)
	require.Equal(t, "pending", op["status"])
	id := op["id"].(string)
	b.work(t)
	got := ok[map[string]any](t, b.do(t, http.MethodGet, "/run-operations/"+id, orgA, nil), http.StatusOK)
	require.Equal(t, "completed", got["status"])
	require.Equal(t, float64(2), got["matched"])
	require.Equal(t, float64(2), got["done"])
	require.Equal(t, map[string]any{"workflow_id": wf, "status": []any{"failed"}}, got["filter"])
	require.Equal(t, map[string]any{"type": "api", "id": "ops-7"}, got["actor"])
	listed := ok[list[map[string]any]](t, b.do(t, http.MethodGet, "/run-operations", orgA, nil), http.StatusOK)
	require.Len(t, listed.Items, 1)
	problem(t, b.do(t, http.MethodGet, "/run-operations/"+id, orgB, nil), http.StatusNotFound, "not_found")
	runs := ok[list[map[string]any]](t, b.do(t, http.MethodGet, "/runs?workflow_id="+wf+"&status=completed", orgA, nil), http.StatusOK)
	require.Len(t, runs.Items, 2)
}
