package runops_test

import (
	"time"

	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

func runsOf(t *testing.T, b *enginetest.Logged, org, workflowID string, status svctype.RunStatus) []svctype.Run {
	t.Helper()
	f := engine.RunFilter{WorkflowID: workflowID, ListOptions: svctype.ListOptions{Limit: 500}}
	if status != "" {
		f.Statuses = []svctype.RunStatus{status}
	}
	page, err := b.Eng.ListRuns(b.Ctx, org, f)
	require.NoError(t, err)
	return page.Items
}

// Retrying every failed run of a workflow: a dry run counts them and does nothing; the
// operation retries each once, in the worker, and keeps its outcome. Asked again, it
// finds them retried already and skips them.
func TestRunOperationRetriesEveryMatchingRunOnce(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		b.CustomerTables(t, org)
		fails := b.Workflow(t, org, "fails", `{"actions": [
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "@input.n"}}},
			{"type": "custom-table", "properties": {"table": "later", "operation": "read"}}]}`)
		other := b.Workflow(t, org, "other", `{"actions": [{"type": "custom-table", "properties": {"table": "later", "operation": "read"}}]}`)
		for _, n := range []string{"1", "2", "3"} {
			require.Equal(t, svctype.RunFailed, b.Execute(t, org, fails.ID, `{"n": "`+n+`"}`).Status)
		}
		require.Equal(t, svctype.RunFailed, b.Execute(t, org, other.ID, `{}`).Status)
		_, err := b.Eng.CreateTable(b.Ctx, org, "later", map[string]string{"x": "text"})
		require.NoError(t, err)

		in := engine.RunOperationInput{Action: svctype.RunOperationRetry, Reason: "table made",
			Filter: engine.RunFilter{WorkflowID: fails.ID, Statuses: []svctype.RunStatus{svctype.RunFailed}}}
		dry := in
		dry.DryRun = true
		op, err := b.Eng.CreateRunOperation(b.Ctx, org, dry, engine.Actor{Type: "user", ID: "ops"})
		require.NoError(t, err)
		require.Empty(t, op.ID)
		require.Equal(t, 3, op.Matched)
		page, err := b.Eng.ListRunOperations(b.Ctx, org, svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, page.Items, "a dry run keeps nothing")
		require.Len(t, runsOf(t, b, org, fails.ID, ""), 3, "and starts nothing")

		op, err = b.Eng.CreateRunOperation(b.Ctx, org, in, engine.Actor{Type: "user", ID: "ops"})
		require.NoError(t, err)
		require.Equal(t, svctype.RunOperationPending, op.Status)
		work(t, b)
		got, err := b.Eng.GetRunOperation(b.Ctx, org, op.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunOperationCompleted, got.Status)
		require.Equal(t, 3, got.Matched)
		require.Equal(t, 3, got.Done)
		require.Zero(t, got.Failed)
		require.NotNil(t, got.FinishedAt)
		require.Len(t, runsOf(t, b, org, fails.ID, svctype.RunCompleted), 3)
		require.Len(t, runsOf(t, b, org, other.ID, ""), 1, "another workflow's run is not matched")
		require.Len(t, rows(t, b, org, "notes"), 3, "each row written once")
		for _, r := range runsOf(t, b, org, fails.ID, svctype.RunCompleted) {
			ev, err := b.Eng.Evidence(b.Ctx, org, r.ID)
			require.NoError(t, err)
			require.Equal(t, "table made", ev.Retry.Reason)
			require.Equal(t, engine.Actor{Type: "user", ID: "ops"}, ev.Retry.Actor)
		}

		again, err := b.Eng.CreateRunOperation(b.Ctx, org, in, engine.Actor{})
		require.NoError(t, err)
		work(t, b)
		got, err = b.Eng.GetRunOperation(b.Ctx, org, again.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunOperationCompleted, got.Status)
		require.Equal(t, 3, got.Matched)
		require.Zero(t, got.Done)
		require.Equal(t, 3, got.Skipped)
		require.Len(t, runsOf(t, b, org, fails.ID, ""), 6, "no run retried twice")

		page, err = b.Eng.ListRunOperations(b.Ctx, org, svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Items, 2)
		require.Equal(t, again.ID, page.Items[0].ID)
		_, err = b.Eng.GetRunOperation(b.Ctx, "org-b", op.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		page, err = b.Eng.ListRunOperations(b.Ctx, "org-b", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
	})
}

// Cancelling every paused run, in batches: a worker that died after acting on runs but
// before saving its progress leaves the operation where it was saved; the job claimed
// again finds those runs cancelled already and skips them, and the outcome still adds up.
// Runs started after the operation was created are not touched.
func TestRunOperationCancelsInBatchesAndSurvivesALostBatch(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		w := b.Workflow(t, org, "waits", `{"actions": [{"type": "PbotApproval", "properties": {"comment": "ok?"}}]}`)
		const n = engine.RunOperationBatch + 20
		for range n {
			run, err := b.Eng.Execute(b.Ctx, org, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
			require.NoError(t, err)
			_ = run
		}
		work(t, b)
		require.Len(t, runsOf(t, b, org, w.ID, svctype.RunPaused), n)

		in := engine.RunOperationInput{Action: svctype.RunOperationCancel, Reason: "no longer needed",
			Filter: engine.RunFilter{WorkflowID: w.ID, Statuses: []svctype.RunStatus{svctype.RunPaused}}}
		op, err := b.Eng.CreateRunOperation(b.Ctx, org, in, engine.Actor{})
		require.NoError(t, err)

		// One claim: the count and the first batch.
		jobs, err := b.St.ClaimJobs(b.Ctx, 10, b.Eng.Lease())
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.NoError(t, b.Eng.RunJob(b.Ctx, &jobs[0]))
		mid, err := b.Eng.GetRunOperation(b.Ctx, org, op.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunOperationRunning, mid.Status)
		require.Equal(t, n, mid.Matched)
		require.Equal(t, engine.RunOperationBatch, mid.Done)
		require.Len(t, runsOf(t, b, org, w.ID, svctype.RunPaused), n-engine.RunOperationBatch)

		// The batch's progress is lost, as if its worker died before saving it: the
		// operation is as it was once its runs were counted (its job is claimable again).
		saved := *mid
		saved.Done, saved.Cursor, saved.UpdatedAt = 0, "", b.Eng.Now()
		require.NoError(t, b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error { return tx.SaveRunOperation(ctx, &saved) }))

		// A run started now, and paused before the operation's next batch, is not the
		// operation's.
		late, err := b.Eng.Execute(b.Ctx, org, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
		require.NoError(t, err)
		jobs, err = b.St.ClaimJobs(b.Ctx, 10, b.Eng.Lease())
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		slices.SortFunc(jobs, func(x, y svctype.Job) int { return strings.Compare(x.Kind, y.Kind) }) // run_step first
		require.Equal(t, svctype.JobRunStep, jobs[0].Kind)
		for i := range jobs {
			require.NoError(t, b.Eng.RunJob(b.Ctx, &jobs[i]))
		}
		work(t, b)
		got, err := b.Eng.GetRunOperation(b.Ctx, org, op.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunOperationCompleted, got.Status)
		require.Equal(t, n, got.Matched)
		require.Equal(t, 20, got.Done)
		require.Equal(t, engine.RunOperationBatch, got.Skipped, "cancelled already: skipped, not cancelled twice")
		require.Zero(t, got.Failed)
		cancelled := runsOf(t, b, org, w.ID, svctype.RunCancelled)
		require.Len(t, cancelled, n)
		for _, r := range cancelled {
			names := b.Events(t, org, r.ID)
			require.Equal(t, "workflow_run_cancelled", names[len(names)-1])
			require.Equal(t, 1, count(names, "workflow_run_cancelled"))
		}
		doc, err := b.Eng.RunStatus(b.Ctx, org, late.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunPaused, doc.Status)
		require.Zero(t, count(b.Events(t, org, late.ID), "workflow_run_cancelled"))
	})
}

// An operation checks what it is asked.
func TestRunOperationRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := enginetest.SetupLogged(t, "sqlite", false)
	for name, in := range map[string]engine.RunOperationInput{
		"action":    {Action: "pause", Reason: "x"},
		"reason":    {Action: svctype.RunOperationCancel},
		"status":    {Action: svctype.RunOperationCancel, Reason: "x", Filter: engine.RunFilter{Statuses: []svctype.RunStatus{"sleeping"}}},
		"range":     {Action: svctype.RunOperationCancel, Reason: "x", Filter: engine.RunFilter{CreatedAfter: time.Unix(20, 0), CreatedBefore: time.Unix(10, 0)}},
		"dry runs2": {Action: "", Reason: "x", DryRun: true},
	} {
		_, err := b.Eng.CreateRunOperation(b.Ctx, "org-a", in, engine.Actor{})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, name)
	}
}

func count(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}
