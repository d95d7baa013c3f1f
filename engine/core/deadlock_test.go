package core_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestDeadlockedStepRunsAgain: PostgreSQL ends a deadlock by aborting one of its
// transactions (40P01). When it picks a step's, the step is not at fault and its run must
// not fail: the step runs again and the run completes, its writes made once. Four worker
// processes on one database met this now and then (a lost ledger row among 3,000 runs in
// BenchmarkRunsPostgresProcesses/4-workers: the run had failed with "deadlock detected").
//
// The deadlock is made on purpose: another connection (the test's) locks row x; the step
// updates row y, then x, and waits for the test; the test then updates y and waits for the
// step. The test's session waits 30 s before it looks for a deadlock, the step's 1 s (the
// server's default), so the step's transaction is the one aborted.
func TestDeadlockedStepRunsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := store.NewTestDSN(t, "postgres")
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx))
	eng, err := engine.New(engine.Config{Store: st})
	require.NoError(t, err)
	raw, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })

	const org = "o1"
	_, err = eng.CreateTable(ctx, org, "accounts", map[string]string{"id": "text", "n": "number"})
	require.NoError(t, err)
	seed, err := eng.CreateWorkflow(ctx, org, engine.WorkflowInput{Name: "seed", Definition: json.RawMessage(`{"actions": [
	  {"type": "custom-table", "properties": {"table": "accounts", "operation": "write", "fields": {"id": "x", "n": 0}}},
	  {"type": "custom-table", "properties": {"table": "accounts", "operation": "write", "fields": {"id": "y", "n": 0}}}]}`)})
	require.NoError(t, err)
	_, err = eng.Execute(ctx, org, seed.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
	require.NoError(t, err)
	_, err = eng.Work(ctx)
	require.NoError(t, err)

	// The test's transaction: row x locked from the start.
	blocker, err := raw.Conn(ctx)
	require.NoError(t, err)
	defer blocker.Close()
	tx, err := blocker.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, `SET LOCAL deadlock_timeout = '30s'`)
	require.NoError(t, err)
	var blockerPID int
	require.NoError(t, tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&blockerPID))
	lock := `UPDATE table_rows SET updated_at = updated_at WHERE org_id = $1 AND table_name = 'accounts' AND data->>'id' = $2`
	_, err = tx.ExecContext(ctx, lock, org, "x")
	require.NoError(t, err)

	var tries atomic.Int32
	blockerDone := make(chan error, 1)
	eng.Environment().RegisterStepKind("cross", svctype.StepKind{Run: func(ctx context.Context, call *svctype.StepCall) (any, error) {
		try := tries.Add(1)
		if _, err := call.Tables.UpdateRows(ctx, call.OrgID, "accounts", map[string]any{"id": "y"}, map[string]any{"n": try}); err != nil {
			return nil, err
		}
		if try == 1 {
			// Row y is this transaction's now: the test's update of y waits for it.
			go func() {
				_, err := tx.ExecContext(context.Background(), lock, org, "y")
				if err == nil {
					err = tx.Commit()
				}
				blockerDone <- err
			}()
			waitBlockedBy(t, raw, blockerPID)
		}
		_, err := call.Tables.UpdateRows(ctx, call.OrgID, "accounts", map[string]any{"id": "x"}, map[string]any{"n": try})
		return map[string]any{"try": try}, err
	}})
	w, err := eng.CreateWorkflow(ctx, org, engine.WorkflowInput{Name: "cross", Definition: json.RawMessage(`{"actions": [
	  {"type": "cross", "outputKey": "crossed", "properties": {}},
	  {"type": "custom-table", "properties": {"table": "accounts", "operation": "write", "fields": {"id": "after"}}}]}`)})
	require.NoError(t, err)
	run, err := eng.Execute(ctx, org, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
	require.NoError(t, err)
	_, err = eng.Work(ctx)
	require.NoError(t, err)
	require.NoError(t, <-blockerDone, "the test's transaction went through once the step's was aborted")

	doc, err := eng.RunStatus(ctx, org, run.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.EqualValues(t, 2, tries.Load(), "the step ran again after its transaction was aborted, once")
	require.Equal(t, map[string]any{"try": json.Number("2")}, doc.Context["crossed"])
	rows, err := eng.ReadRows(ctx, org, "accounts", nil, 0)
	require.NoError(t, err)
	got := map[string]any{}
	for _, r := range rows {
		got[r.Data["id"].(string)] = r.Data["n"]
	}
	require.Equal(t, map[string]any{"x": json.Number("2"), "y": json.Number("2"), "after": nil}, got,
		"the second try's writes, each once, and the step after it")
}

// waitBlockedBy returns once the backend pid waits for a lock another session holds.
func waitBlockedBy(t *testing.T, db *sql.DB, pid int) {
	t.Helper()
	for {
		var n int
		require.NoError(t, db.QueryRow(`SELECT cardinality(pg_blocking_pids($1))`, pid).Scan(&n))
		if n > 0 {
			return
		}
	}
}
