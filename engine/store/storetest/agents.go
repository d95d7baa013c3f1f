package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testAgents is the agent-run part of the suite (storage.Agents) and the batch read of
// actions (storage.ActionsByName).
func testAgents(t *testing.T, b *bundle) {
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"agent-1", "agent-2", "agent-3"} {
		r := &svctype.AgentRun{ID: id, OrgID: orgA, Status: "running", Config: json.RawMessage(`{"objective": "o"}`),
			State: json.RawMessage(`{"status": "running"}`), CreatedAt: base.Add(time.Duration(i) * time.Second)}
		require.NoError(t, b.s.CreateAgentRun(b.ctx, r))
	}
	require.ErrorIs(t, b.s.CreateAgentRun(b.ctx, &svctype.AgentRun{ID: "agent-1", OrgID: orgA, Status: "running"}), storage.ErrConflict)
	require.NoError(t, b.s.CreateAgentRun(b.ctx, &svctype.AgentRun{ID: "agent-1", OrgID: orgB, Status: "running"}),
		"ids are per organization")

	got, err := b.s.GetAgentRun(b.ctx, orgA, "agent-2")
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("running"), got.Status)
	require.JSONEq(t, `{"objective": "o"}`, string(got.Config))
	require.JSONEq(t, `{"status": "running"}`, string(got.State))
	require.True(t, got.CreatedAt.Equal(base.Add(time.Second)))

	done := base.Add(time.Minute)
	got.Status, got.Reason, got.Iterations, got.State, got.FinishedAt = "completed", "", 4, json.RawMessage(`{"status": "completed"}`), &done
	require.NoError(t, b.s.SaveAgentRun(b.ctx, got))
	again, err := b.s.GetAgentRun(b.ctx, orgA, "agent-2")
	require.NoError(t, err)
	require.Equal(t, svctype.AgentStatus("completed"), again.Status)
	require.Equal(t, 4, again.Iterations)
	require.True(t, again.FinishedAt.Equal(done))
	require.JSONEq(t, `{"status": "completed"}`, string(again.State))
	require.JSONEq(t, `{"objective": "o"}`, string(again.Config), "a save leaves the config alone")

	// Tenancy: another organization's run is not found, not saved over.
	_, err = b.s.GetAgentRun(b.ctx, orgB, "agent-2")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.SaveAgentRun(b.ctx, &svctype.AgentRun{ID: "agent-2", OrgID: orgB, Status: "failed"}), storage.ErrNotFound)

	page, err := b.s.ListAgentRuns(b.ctx, orgA, "", svctype.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, "agent-3", page.Items[0].ID, "newest first")
	require.Nil(t, page.Items[0].State, "listings leave the state out")
	page, err = b.s.ListAgentRuns(b.ctx, orgA, "", svctype.ListOptions{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "agent-1", page.Items[0].ID)
	page, err = b.s.ListAgentRuns(b.ctx, orgA, "completed", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "agent-2", page.Items[0].ID)

	// The agent runs of a workflow run.
	child := &svctype.AgentRun{ID: "agent-child", OrgID: orgA, ParentRunID: "run-parent", ParentStep: 2, Status: "running",
		Config: json.RawMessage(`{}`), State: json.RawMessage(`{}`)}
	require.NoError(t, b.s.CreateAgentRun(b.ctx, child))
	kids, err := b.s.AgentRunsOf(b.ctx, orgA, "run-parent")
	require.NoError(t, err)
	require.Len(t, kids, 1)
	require.Equal(t, "agent-child", kids[0].ID)
	require.Equal(t, 2, kids[0].ParentStep)
	kids, err = b.s.AgentRunsOf(b.ctx, orgB, "run-parent")
	require.NoError(t, err)
	require.Empty(t, kids, "another organization's")

	// Several actions in one read, only the organization's.
	for _, a := range []*svctype.Action{httpAction(orgA, "crm"), httpAction(orgA, "erp"), httpAction(orgB, "other")} {
		require.NoError(t, b.s.CreateAction(b.ctx, a))
	}
	as, err := b.s.GetActions(b.ctx, orgA, []string{"crm", "erp", "other", "missing"})
	require.NoError(t, err)
	names := []string{}
	for _, a := range as {
		names = append(names, a.Name)
	}
	require.ElementsMatch(t, []string{"crm", "erp"}, names)
	// Several workflows in one read, only the organization's.
	w1, w2, wb := b.workflow(t, orgA, "one"), b.workflow(t, orgA, "two"), b.workflow(t, orgB, "theirs")
	ws, err := b.s.GetWorkflows(b.ctx, orgA, []string{w1.ID, w2.ID, wb.ID, "wfl-missing"})
	require.NoError(t, err)
	wnames := []string{}
	for _, w := range ws {
		wnames = append(wnames, w.Name)
	}
	require.ElementsMatch(t, []string{"one", "two"}, wnames)

	require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		as, err := tx.GetActions(ctx, orgA, []string{"crm"})
		require.Len(t, as, 1)
		return err
	}))
}
