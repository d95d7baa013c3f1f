package runops_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A retry's plan lists the webhooks its run's own events reach: the catch-all and every
// registration of workflow_run_started, _retried, _completed or _failed (an alias too, a
// disabled one said so), not a registration of another event nor another organization's.
// The retry then delivers to those targets and no other.
func TestRetryPlanListsTheWebhooksItsEventsReach(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		hooks := newServer(t, false)
		host := strings.TrimPrefix(hooks.URL, "http://")
		b.CustomerTables(t, org)
		hook := func(org, event, path string) string {
			t.Helper()
			w, err := b.Eng.CreateWebhook(b.Ctx, org, engine.WebhookInput{Event: event, URL: hooks.URL + path})
			require.NoError(t, err)
			return w.ID
		}
		retried := hook(org, "workflow_run_retried", "/retried")
		completed := hook(org, "workflow.completed", "/completed")
		failed := hook(org, "workflow_run_failed", "/failed")
		hook(org, "document.uploaded", "/docs")
		hook("org-b", "workflow_run_started", "/other-org")

		w := b.Workflow(t, org, "w", `{"actions": [
			{"type": "custom-table", "properties": {"table": "notes", "operation": "write", "fields": {"text": "once"}}},
			{"type": "custom-table", "properties": {"table": "later", "operation": "read"}}]}`)
		run := b.Execute(t, org, w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, run.Status)
		// Disabled after the failed run's own delivery to it (whose success enabled it again).
		yes := true
		_, err := b.Eng.UpdateWebhook(b.Ctx, org, failed, engine.WebhookPatch{Disabled: &yes})
		require.NoError(t, err)

		// Without a catch-all: the registrations only.
		plan, err := b.Eng.RetryPlan(b.Ctx, org, run.ID)
		require.NoError(t, err)
		require.Len(t, plan.Webhooks, 3)
		require.Equal(t, map[string]int{"webhook": 3}, plan.Calls)

		_, _, err = b.Eng.SetOrgConfig(b.Ctx, org, engine.CatchAllKey, hooks.URL+"/all")
		require.NoError(t, err)
		plan, err = b.Eng.RetryPlan(b.Ctx, org, run.ID)
		require.NoError(t, err)
		require.Equal(t, []svctype.PlannedCall{
			{Kind: "webhook", Method: "POST", Host: host, Detail: "catch-all webhook_url: every event of the run"},
			{Kind: "webhook", Method: "POST", Host: host, Detail: "webhook " + retried + ": workflow_run_retried"},
			{Kind: "webhook", Method: "POST", Host: host, Detail: "webhook " + completed + ": workflow_run_completed"},
			{Kind: "webhook", Method: "POST", Host: host, Detail: "webhook " + failed + ": workflow_run_failed (disabled: tried through its circuit)"},
		}, plan.Webhooks)
		require.Equal(t, map[string]int{"webhook": 4}, plan.Calls, "the failed step is a table read: no other outside call")

		_, err = b.Eng.CreateTable(b.Ctx, org, "later", map[string]string{"x": "text"})
		require.NoError(t, err)
		next, err := b.Eng.RetryRun(b.Ctx, org, run.ID, "table made", engine.Actor{})
		require.NoError(t, err)
		work(t, b)
		doc, err := b.Eng.RunStatus(b.Ctx, org, next.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		page, err := b.Eng.ListDeliveries(b.Ctx, org, "", svctype.ListOptions{Limit: 500})
		require.NoError(t, err)
		catchAll, registered := 0, map[string]int{}
		for _, d := range page.Items {
			if d.RunID != next.ID {
				continue
			}
			if d.WebhookID == "" {
				catchAll++
			} else {
				registered[d.WebhookID]++
			}
		}
		require.NotZero(t, catchAll, "the catch-all gets the run's events")
		require.Equal(t, map[string]int{retried: 1, completed: 1}, registered,
			"the registrations the plan listed, of the events the run emitted; no other")
	})
}
