package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testOrgConfig is the org config part of the suite (secrets.Store, which storage.Full
// embeds). The store holds sealed bytes it never interprets, so the suite writes arbitrary
// ones. Its parts share one store; each works in organizations of its own.
func testOrgConfig(t *testing.T, b *bundle) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, b *bundle, org string)
	}{
		{"PutGet", testOrgConfigPutGet},
		{"List", testOrgConfigList},
		{"Delete", testOrgConfigDelete},
		{"Orgs", testOrgConfigOrgs},
		{"Reseal", testOrgConfigReseal},
		{"Tenancy", testOrgConfigTenancy},
		{"Tx", testOrgConfigTx},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b, "oc_"+tt.name) })
	}
}

func (b *bundle) putConfig(t *testing.T, org, key string, sealed []byte, keyID string) (*secrets.Record, bool) {
	t.Helper()
	r := &secrets.Record{OrgID: org, Key: key, Sealed: sealed, KeyID: keyID}
	created, err := b.s.PutOrgConfig(b.ctx, r)
	require.NoError(t, err)
	return r, created
}

func testOrgConfigPutGet(t *testing.T, b *bundle, org string) {
	_, err := b.s.GetOrgConfig(b.ctx, org, "api:llm_api_key")
	require.ErrorIs(t, err, storage.ErrNotFound)

	first, created := b.putConfig(t, org, "api:llm_api_key", []byte{1, 0, 0xff, 2}, "k1")
	require.True(t, created)
	require.False(t, first.CreatedAt.IsZero())
	require.Equal(t, first.CreatedAt, first.UpdatedAt)

	got, err := b.s.GetOrgConfig(b.ctx, org, "api:llm_api_key")
	require.NoError(t, err)
	require.Equal(t, []byte{1, 0, 0xff, 2}, got.Sealed, "bytes kept exactly, NUL and 0xff included")
	require.Equal(t, "k1", got.KeyID)
	require.Equal(t, org, got.OrgID)
	require.WithinDuration(t, first.CreatedAt, got.CreatedAt, time.Microsecond)

	later := first.UpdatedAt.Add(time.Minute)
	r := &secrets.Record{OrgID: org, Key: "api:llm_api_key", Sealed: []byte{9}, KeyID: "k2", UpdatedAt: later}
	created, err = b.s.PutOrgConfig(b.ctx, r)
	require.NoError(t, err)
	require.False(t, created, "an update")
	require.WithinDuration(t, first.CreatedAt, r.CreatedAt, time.Microsecond, "created_at kept")
	got, err = b.s.GetOrgConfig(b.ctx, org, "api:llm_api_key")
	require.NoError(t, err)
	require.Equal(t, []byte{9}, got.Sealed)
	require.Equal(t, "k2", got.KeyID)
	require.WithinDuration(t, later, got.UpdatedAt, time.Microsecond)
	require.WithinDuration(t, first.CreatedAt, got.CreatedAt, time.Microsecond)
}

func testOrgConfigList(t *testing.T, b *bundle, org string) {
	keys := []string{"webhook_url", "api:b", "db:main/replica", "api:a", "oauth:x.y-z"}
	for i, k := range keys {
		keyID := "k1"
		if i%2 == 1 {
			keyID = "k2"
		}
		b.putConfig(t, org, k, []byte(k), keyID)
	}
	b.putConfig(t, org+"_other", "api:zz", []byte("x"), "k1")

	list := func(f secrets.ListFilter) func(svctype.ListOptions) (svctype.Page[secrets.Record], error) {
		return func(o svctype.ListOptions) (svctype.Page[secrets.Record], error) {
			f.ListOptions = o
			return b.s.ListOrgConfig(b.ctx, org, f)
		}
	}
	name := func(r secrets.Record) string { return r.Key }
	tests := []struct {
		name   string
		filter secrets.ListFilter
		limit  int
		want   []string
	}{
		{"by name", secrets.ListFilter{}, 2, []string{"api:a", "api:b", "db:main/replica", "oauth:x.y-z", "webhook_url"}},
		{"one page", secrets.ListFilter{}, 50, []string{"api:a", "api:b", "db:main/replica", "oauth:x.y-z", "webhook_url"}},
		{"not under k1", secrets.ListFilter{NotKeyID: "k1"}, 1, []string{"api:a", "api:b"}},
		{"not under k3", secrets.ListFilter{NotKeyID: "k3"}, 3, []string{"api:a", "api:b", "db:main/replica", "oauth:x.y-z", "webhook_url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := collect(t, tt.limit, name, list(tt.filter))
			names := make([]string, len(got))
			for i, r := range got {
				names[i] = r.Key
				require.Equal(t, []byte(r.Key), r.Sealed)
				require.Equal(t, org, r.OrgID)
			}
			require.Equal(t, tt.want, names)
		})
	}
	empty, err := b.s.ListOrgConfig(b.ctx, org+"_none", secrets.ListFilter{})
	require.NoError(t, err)
	require.NotNil(t, empty.Items)
	require.Empty(t, empty.Items)
	require.Empty(t, empty.NextCursor)

	_, err = b.s.ListOrgConfig(b.ctx, org, secrets.ListFilter{ListOptions: svctype.ListOptions{Cursor: "not a cursor!"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
	_, err = b.s.ListOrgConfigOrgs(b.ctx, secrets.ListFilter{ListOptions: svctype.ListOptions{Cursor: "not a cursor!"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
}

func testOrgConfigDelete(t *testing.T, b *bundle, org string) {
	b.putConfig(t, org, "api:gone", []byte("x"), "k1")
	b.putConfig(t, org, "api:kept", []byte("y"), "k1")
	require.NoError(t, b.s.DeleteOrgConfig(b.ctx, org, "api:gone"))
	_, err := b.s.GetOrgConfig(b.ctx, org, "api:gone")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteOrgConfig(b.ctx, org, "api:gone"), storage.ErrNotFound, "twice")
	require.ErrorIs(t, b.s.DeleteOrgConfig(b.ctx, org, "api:never"), storage.ErrNotFound)
	_, err = b.s.GetOrgConfig(b.ctx, org, "api:kept")
	require.NoError(t, err)

	// The key can be set again, as new.
	_, created := b.putConfig(t, org, "api:gone", []byte("z"), "k1")
	require.True(t, created)
}

func testOrgConfigOrgs(t *testing.T, b *bundle, org string) {
	// The store is shared with the other parts: look at this part's organizations only.
	var mine []string
	for i := range 5 {
		o := fmt.Sprintf("%s_%d", org, i)
		mine = append(mine, o)
		b.putConfig(t, o, "api:a", []byte("x"), "k1")
		b.putConfig(t, o, "api:b", []byte("x"), "k1")
		if i%2 == 0 {
			b.putConfig(t, o, "api:c", []byte("x"), "k2")
		}
	}
	orgs := func(f secrets.ListFilter) []string {
		got := collect(t, 2, func(s string) string { return s }, func(o svctype.ListOptions) (svctype.Page[string], error) {
			f.ListOptions = o
			return b.s.ListOrgConfigOrgs(b.ctx, f)
		})
		var out []string
		for _, o := range got {
			for _, m := range mine {
				if o == m {
					out = append(out, o)
				}
			}
		}
		return out
	}
	require.Equal(t, mine, orgs(secrets.ListFilter{}), "each organization once, in order")
	require.Equal(t, []string{mine[0], mine[2], mine[4]}, orgs(secrets.ListFilter{NotKeyID: "k1"}))
	require.Equal(t, mine, orgs(secrets.ListFilter{NotKeyID: "k2"}))
}

func testOrgConfigReseal(t *testing.T, b *bundle, org string) {
	r, _ := b.putConfig(t, org, "api:k", []byte("old"), "k1")
	read, err := b.s.GetOrgConfig(b.ctx, org, "api:k")
	require.NoError(t, err)

	require.NoError(t, b.s.ResealOrgConfig(b.ctx, read, []byte("new"), "k2"))
	got, err := b.s.GetOrgConfig(b.ctx, org, "api:k")
	require.NoError(t, err)
	require.Equal(t, []byte("new"), got.Sealed)
	require.Equal(t, "k2", got.KeyID)
	require.WithinDuration(t, r.UpdatedAt, got.UpdatedAt, time.Microsecond, "a reseal is not an update")

	// A reseal from a stale read never undoes a write made since.
	require.ErrorIs(t, b.s.ResealOrgConfig(b.ctx, read, []byte("stale"), "k2"), storage.ErrConflict)
	b.putConfig(t, org, "api:k", []byte("written"), "k1")
	require.ErrorIs(t, b.s.ResealOrgConfig(b.ctx, got, []byte("stale"), "k2"), storage.ErrConflict)
	got, err = b.s.GetOrgConfig(b.ctx, org, "api:k")
	require.NoError(t, err)
	require.Equal(t, []byte("written"), got.Sealed)

	require.NoError(t, b.s.DeleteOrgConfig(b.ctx, org, "api:k"))
	require.ErrorIs(t, b.s.ResealOrgConfig(b.ctx, got, []byte("x"), "k2"), storage.ErrNotFound)
}

func testOrgConfigTenancy(t *testing.T, b *bundle, org string) {
	a, other := org+"_a", org+"_b"
	r, _ := b.putConfig(t, a, "api:shared", []byte("a-sealed"), "k1")

	_, err := b.s.GetOrgConfig(b.ctx, other, "api:shared")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteOrgConfig(b.ctx, other, "api:shared"), storage.ErrNotFound)
	stolen := *r
	stolen.OrgID = other
	require.ErrorIs(t, b.s.ResealOrgConfig(b.ctx, &stolen, []byte("b"), "k2"), storage.ErrNotFound)
	page, err := b.s.ListOrgConfig(b.ctx, other, secrets.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, page.Items)

	// The same key name in another organization is another record.
	_, created := b.putConfig(t, other, "api:shared", []byte("b-sealed"), "k1")
	require.True(t, created)
	got, err := b.s.GetOrgConfig(b.ctx, a, "api:shared")
	require.NoError(t, err)
	require.Equal(t, []byte("a-sealed"), got.Sealed)
	require.NoError(t, b.s.DeleteOrgConfig(b.ctx, other, "api:shared"))
	_, err = b.s.GetOrgConfig(b.ctx, a, "api:shared")
	require.NoError(t, err, "deleting B's key leaves A's")
}

func testOrgConfigTx(t *testing.T, b *bundle, org string) {
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		created, err := tx.PutOrgConfig(ctx, &secrets.Record{OrgID: org, Key: "api:rolled_back", Sealed: []byte("x"), KeyID: "k1"})
		require.NoError(t, err)
		require.True(t, created)
		created, err = tx.PutOrgConfig(ctx, &secrets.Record{OrgID: org, Key: "api:rolled_back", Sealed: []byte("y"), KeyID: "k1"})
		require.NoError(t, err)
		require.False(t, created, "an update inside the transaction that inserted it")
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	_, err = b.s.GetOrgConfig(b.ctx, org, "api:rolled_back")
	require.ErrorIs(t, err, storage.ErrNotFound)
}
