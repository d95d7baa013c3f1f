package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
)

// TestConsoleRetriesAndOperatesOnRuns: the console's window reaches a failed run's retry
// plan and its retry, recorded as the account holder's, and the run operations.
func TestConsoleRetriesAndOperatesOnRuns(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	mgmt, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	code, wf, _ := b.call(t, "POST", "/workflows", live, `{"name": "reads", "definition": {"actions": [{"type": "custom-table", "properties": {"table": "later", "operation": "read"}}]}}`)
	require.Equal(t, http.StatusCreated, code, wf)
	code, run, _ := b.call(t, "POST", "/workflows/"+wf["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusAccepted, code, run)
	_, err := b.eng.Work(context.Background())
	require.NoError(t, err)
	runID := run["id"].(string)

	api := "/console/api/orgs/cust-a"
	code, p, _ := b.call(t, "GET", api+"/runs/"+runID+"/retry-plan", mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, float64(0), p["from_step"])
	code, p, _ = b.call(t, "POST", api+"/run-operations", mgmt, `{"action": "retry", "filter": {"status": ["failed"]}, "reason": "count", "dry_run": true}`)
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, float64(1), p["matched"])

	code, p, _ = b.call(t, "POST", api+"/runs/"+runID+"/retry", mgmt, `{"reason": "try again"}`, "X-Svc-Identity: forged")
	require.Equal(t, http.StatusCreated, code, p)
	code, ev, _ := b.call(t, "GET", api+"/runs/"+p["id"].(string)+"/evidence", mgmt, "")
	require.Equal(t, http.StatusOK, code, ev)
	require.Equal(t, map[string]any{"type": "user", "id": "ops@platform.example"}, ev["retry"].(map[string]any)["actor"])

	code, p, _ = b.call(t, "POST", api+"/run-operations", mgmt, `{"action": "cancel", "filter": {"status": ["running"]}, "reason": "stop"}`)
	require.Equal(t, http.StatusAccepted, code, p)
	opID := p["id"].(string)
	require.Equal(t, map[string]any{"type": "user", "id": "ops@platform.example"}, p["actor"])
	code, p, _ = b.call(t, "GET", api+"/run-operations/"+opID, mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	code, p, _ = b.call(t, "GET", api+"/run-operations", mgmt, "")
	require.Equal(t, http.StatusOK, code, p)
	require.Len(t, p["items"], 1)
}
