package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testRunRetries is the retry links of storage.Runs: a failed run is retried once in its
// organization, and each run reads both of its links.
func testRunRetries(t *testing.T, b *bundle) {
	actor := svctype.Actor{Type: "user", ID: "ops"}
	require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.PutRunRetry(ctx, &svctype.RunRetry{OrgID: orgA, RunID: "run-2", RetryOf: "run-1", FromStep: 3, Reason: "fixed", Actor: actor})
	}))
	require.ErrorIs(t, b.s.PutRunRetry(b.ctx, &svctype.RunRetry{OrgID: orgA, RunID: "run-3", RetryOf: "run-1", Reason: "again"}), storage.ErrConflict,
		"a run is retried once")
	require.NoError(t, b.s.PutRunRetry(b.ctx, &svctype.RunRetry{OrgID: orgB, RunID: "run-3", RetryOf: "run-1", Reason: "B's own"}),
		"run ids are per organization")
	require.NoError(t, b.s.PutRunRetry(b.ctx, &svctype.RunRetry{OrgID: orgA, RunID: "run-4", RetryOf: "run-2", Reason: "once more"}))

	of, by, err := b.s.RunRetries(b.ctx, orgA, "run-2")
	require.NoError(t, err)
	require.NotNil(t, of)
	require.Equal(t, "run-1", of.RetryOf)
	require.Equal(t, 3, of.FromStep)
	require.Equal(t, "fixed", of.Reason)
	require.Equal(t, actor, of.Actor)
	require.False(t, of.CreatedAt.IsZero())
	require.NotNil(t, by)
	require.Equal(t, "run-4", by.RunID)
	of, by, err = b.s.RunRetries(b.ctx, orgA, "run-1")
	require.NoError(t, err)
	require.Nil(t, of)
	require.Equal(t, "run-2", by.RunID)
	of, by, err = b.s.RunRetries(b.ctx, orgB, "run-2")
	require.NoError(t, err)
	require.Nil(t, of, "another organization's link")
	require.Nil(t, by)
}

// testRunOperations is storage.RunOperations.
func testRunOperations(t *testing.T, b *bundle) {
	base := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	for i, id := range []string{"rop-1", "rop-2", "rop-3"} {
		op := &svctype.RunOperation{ID: id, OrgID: orgA, Action: svctype.RunOperationCancel, Filter: []byte(`{"WorkflowID": "w"}`),
			Reason: "why", Actor: svctype.Actor{Type: "api", ID: "api"}, Status: svctype.RunOperationPending, CreatedAt: base.Add(time.Duration(i) * time.Second)}
		require.NoError(t, b.s.CreateRunOperation(b.ctx, op))
	}
	require.ErrorIs(t, b.s.CreateRunOperation(b.ctx, &svctype.RunOperation{ID: "rop-1", OrgID: orgA, Status: svctype.RunOperationPending}), storage.ErrConflict)

	got, err := b.s.GetRunOperation(b.ctx, orgA, "rop-2")
	require.NoError(t, err)
	require.Equal(t, svctype.RunOperationCancel, got.Action)
	require.JSONEq(t, `{"WorkflowID": "w"}`, string(got.Filter))
	require.Empty(t, got.Errors)
	done := base.Add(time.Minute)
	got.Status, got.Matched, got.Done, got.Skipped, got.Failed, got.Cursor, got.FinishedAt = svctype.RunOperationCompleted, 5, 3, 1, 1, "c-1", &done
	got.Errors = []svctype.RunOperationError{{RunID: "run-9", Message: "no"}}
	got.UpdatedAt = done
	require.NoError(t, b.s.SaveRunOperation(b.ctx, got))
	again, err := b.s.GetRunOperation(b.ctx, orgA, "rop-2")
	require.NoError(t, err)
	require.Equal(t, svctype.RunOperationCompleted, again.Status)
	require.Equal(t, []int{5, 3, 1, 1}, []int{again.Matched, again.Done, again.Skipped, again.Failed})
	require.Equal(t, "c-1", again.Cursor)
	require.Equal(t, got.Errors, again.Errors)
	require.True(t, again.FinishedAt.Equal(done))

	_, err = b.s.GetRunOperation(b.ctx, orgB, "rop-2")
	require.ErrorIs(t, err, storage.ErrNotFound)
	got.OrgID = orgB
	require.ErrorIs(t, b.s.SaveRunOperation(b.ctx, got), storage.ErrNotFound)

	page, err := b.s.ListRunOperations(b.ctx, orgA, svctype.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"rop-3", "rop-2"}, []string{page.Items[0].ID, page.Items[1].ID})
	require.NotEmpty(t, page.NextCursor)
	page, err = b.s.ListRunOperations(b.ctx, orgA, svctype.ListOptions{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "rop-1", page.Items[0].ID)
	page, err = b.s.ListRunOperations(b.ctx, orgB, svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items)
}
