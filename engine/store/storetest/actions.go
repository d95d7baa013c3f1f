package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testActions: registered actions, created, read, paged, replaced and deleted, each named
// by the org id; a name unique per org.
func testActions(t *testing.T, b *bundle) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b *bundle)
	}{
		{"CreateGet", testActionCreateGet},
		{"List", testActionList},
		{"Replace", testActionReplace},
		{"Delete", testActionDelete},
		{"Tenancy", testActionTenancy},
		{"Tx", testActionTx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b) })
	}
}

// actionOrg is a new organization: the subtests share one store.
func actionOrg() string { return "org_" + newID()[:8] }

func httpAction(org, name string) *svctype.Action {
	return &svctype.Action{
		OrgID: org, Name: name, Kind: svctype.ActionHTTP, Description: "posts " + name,
		URL: "https://example.com/hooks/{{input.id}}", HTTPMethod: "POST",
		Headers:     map[string]string{"Authorization": "orgconfig:api:hooks", "X-Trace": "on"},
		Passthrough: true, TimeoutSeconds: 30,
	}
}

func (b *bundle) action(t *testing.T, a *svctype.Action) *svctype.Action {
	t.Helper()
	require.NoError(t, b.s.CreateAction(b.ctx, a))
	return a
}

func testActionCreateGet(t *testing.T, b *bundle) {
	org := actionOrg()
	created := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600))
	a := httpAction(org, "notify")
	a.CreatedAt, a.UpdatedAt = created, created
	b.action(t, a)
	require.True(t, a.CreatedAt.Equal(created.Truncate(time.Microsecond)), "the caller's copy holds the stored time")

	got, err := b.s.GetAction(b.ctx, org, "notify")
	require.NoError(t, err)
	require.Equal(t, org, got.OrgID)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.True(t, got.CreatedAt.Equal(a.CreatedAt), "created_at %v != %v", got.CreatedAt, a.CreatedAt)
	require.True(t, got.UpdatedAt.Equal(a.UpdatedAt))
	want := *a
	want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
	require.Equal(t, &want, got)

	// Every kind's fields come back as written.
	kinds := []*svctype.Action{
		{OrgID: org, Name: "lookup", Kind: svctype.ActionDB, Datasource: "orgconfig:db:erp", Query: "SELECT * FROM t WHERE id = $1"},
		{OrgID: org, Name: "summarise", Kind: svctype.ActionLLM, Template: "Summarise {{input.text}}", Model: "small", MaxTokens: 500},
		{OrgID: org, Name: "save", Kind: svctype.ActionCustomTable, Properties: map[string]any{
			"table": "notes", "operation": "write", "fields": map[string]any{"text": "@input.text", "n": 1.5},
		}},
		{OrgID: org, Name: "recon", Kind: svctype.ActionNWayMatch, Properties: map[string]any{
			"sets":    []any{map[string]any{"key": "a", "records": "@input.a"}, map[string]any{"key": "b", "records": "@input.b"}},
			"matchOn": []any{"id"},
		}},
	}
	for _, k := range kinds {
		b.action(t, k)
		got, err := b.s.GetAction(b.ctx, org, k.Name)
		require.NoError(t, err)
		want := *k
		want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
		require.Equal(t, &want, got, k.Name)
		require.False(t, got.CreatedAt.IsZero(), "created_at set by the store when zero")
	}

	// A taken name is a conflict, in the org only; nothing is overwritten.
	dup := httpAction(org, "notify")
	dup.URL = "https://evil.example.com/"
	require.ErrorIs(t, b.s.CreateAction(b.ctx, dup), storage.ErrConflict)
	got, err = b.s.GetAction(b.ctx, org, "notify")
	require.NoError(t, err)
	require.Equal(t, a.URL, got.URL)
	b.action(t, httpAction(org+"_other", "notify"))

	_, err = b.s.GetAction(b.ctx, org, "missing")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.GetAction(b.ctx, org, "Notify")
	require.ErrorIs(t, err, storage.ErrNotFound, "names are case-sensitive, like step types")
}

func testActionList(t *testing.T, b *bundle) {
	org := actionOrg()
	// Distinct first letters: the order is the same under any collation.
	names := []string{"bravo.2", "alpha-1", "charlie_3", "golf", "delta", "echo", "foxtrot"}
	for _, n := range names {
		b.action(t, httpAction(org, n))
	}
	b.action(t, httpAction(org+"_other", "zzz"))
	want := []string{"alpha-1", "bravo.2", "charlie_3", "delta", "echo", "foxtrot", "golf"} // by name
	for _, limit := range []int{1, 2, 7, 50} {
		all := collect(t, limit, func(a svctype.Action) string { return a.Name },
			func(o svctype.ListOptions) (svctype.Page[svctype.Action], error) {
				return b.s.ListActions(b.ctx, org, o)
			})
		got := make([]string, len(all))
		for i, a := range all {
			got[i] = a.Name
			require.Equal(t, org, a.OrgID)
			require.Equal(t, "https://example.com/hooks/{{input.id}}", a.URL, "listed with every field")
		}
		require.Equal(t, want, got, "limit %d", limit)
	}
	page, err := b.s.ListActions(b.ctx, org+"_none", svctype.ListOptions{})
	require.NoError(t, err)
	require.NotNil(t, page.Items)
	require.Empty(t, page.Items)
	require.Empty(t, page.NextCursor)

	_, err = b.s.ListActions(b.ctx, org, svctype.ListOptions{Cursor: "not a cursor!"})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
}

func testActionReplace(t *testing.T, b *bundle) {
	org := actionOrg()
	a := b.action(t, httpAction(org, "notify"))

	// The whole registration is replaced: another kind, fields of the old one gone.
	repl := &svctype.Action{
		OrgID: org, Name: "notify", Kind: svctype.ActionLLM, Template: "Hello {{input.name}}",
		UpdatedAt: a.CreatedAt.Add(time.Hour),
	}
	require.NoError(t, b.s.ReplaceAction(b.ctx, repl))
	require.True(t, repl.CreatedAt.Equal(a.CreatedAt), "replace reports the kept created_at")
	got, err := b.s.GetAction(b.ctx, org, "notify")
	require.NoError(t, err)
	require.Equal(t, svctype.ActionLLM, got.Kind)
	require.Equal(t, "Hello {{input.name}}", got.Template)
	require.Empty(t, got.URL)
	require.Nil(t, got.Headers)
	require.Empty(t, got.Description)
	require.True(t, got.CreatedAt.Equal(a.CreatedAt), "created_at kept")
	require.True(t, got.UpdatedAt.Equal(repl.UpdatedAt), "updated_at %v, want %v", got.UpdatedAt, repl.UpdatedAt)

	missing := httpAction(org, "missing")
	require.ErrorIs(t, b.s.ReplaceAction(b.ctx, missing), storage.ErrNotFound)
	_, err = b.s.GetAction(b.ctx, org, "missing")
	require.ErrorIs(t, err, storage.ErrNotFound, "a replace creates nothing")
}

func testActionDelete(t *testing.T, b *bundle) {
	org := actionOrg()
	b.action(t, httpAction(org, "notify"))
	b.action(t, httpAction(org, "keep"))
	require.NoError(t, b.s.DeleteAction(b.ctx, org, "notify"))
	_, err := b.s.GetAction(b.ctx, org, "notify")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteAction(b.ctx, org, "notify"), storage.ErrNotFound)
	_, err = b.s.GetAction(b.ctx, org, "keep")
	require.NoError(t, err)
	// The name is free again.
	b.action(t, httpAction(org, "notify"))
}

func testActionTenancy(t *testing.T, b *bundle) {
	org, other := actionOrg(), actionOrg()
	a := b.action(t, httpAction(org, "notify"))

	_, err := b.s.GetAction(b.ctx, other, "notify")
	require.ErrorIs(t, err, storage.ErrNotFound)
	evil := httpAction(other, "notify")
	evil.URL = "https://evil.example.com/"
	require.ErrorIs(t, b.s.ReplaceAction(b.ctx, evil), storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteAction(b.ctx, other, "notify"), storage.ErrNotFound)
	page, err := b.s.ListActions(b.ctx, other, svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items)

	got, err := b.s.GetAction(b.ctx, org, "notify")
	require.NoError(t, err)
	require.Equal(t, a.URL, got.URL, "org A's action is intact")
	require.True(t, got.UpdatedAt.Equal(a.UpdatedAt))
}

func testActionTx(t *testing.T, b *bundle) {
	org := actionOrg()
	b.action(t, httpAction(org, "taken"))
	errRollback := errors.New("roll back")
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.CreateAction(ctx, httpAction(org, "rolled-back")); err != nil {
			return err
		}
		// A conflict leaves the transaction usable (PostgreSQL aborts on a unique violation).
		if err := tx.CreateAction(ctx, httpAction(org, "taken")); !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("CreateAction: want a conflict, got %v", err)
		}
		if _, err := tx.GetAction(ctx, org, "rolled-back"); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	_, err = b.s.GetAction(b.ctx, org, "rolled-back")
	require.ErrorIs(t, err, storage.ErrNotFound)

	require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.CreateAction(ctx, httpAction(org, "committed")); err != nil {
			return err
		}
		return tx.DeleteAction(ctx, org, "taken")
	}))
	_, err = b.s.GetAction(b.ctx, org, "committed")
	require.NoError(t, err)
	_, err = b.s.GetAction(b.ctx, org, "taken")
	require.ErrorIs(t, err, storage.ErrNotFound)
}
