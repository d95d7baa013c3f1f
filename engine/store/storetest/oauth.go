package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testOAuth is the OAuth part of the suite (storage.OAuth). Sealed bytes are opaque to
// the store, so the suite writes arbitrary ones. Its parts share one store; each works in
// organizations of its own.
func testOAuth(t *testing.T, b *bundle) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, b *bundle, org string)
	}{
		{"Connections", testOAuthConnections},
		{"Replace", testOAuthReplace},
		{"List", testOAuthList},
		{"Tenancy", testOAuthTenancy},
		{"Orgs", testOAuthOrgs},
		{"Reseal", testOAuthReseal},
		{"States", testOAuthStates},
		{"StateTakenOnce", testOAuthStateTakenOnce},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b, "oa_"+tt.name) })
	}
}

func (b *bundle) connection(t *testing.T, org, provider, account string) *svctype.OAuthConnection {
	t.Helper()
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	c := &svctype.OAuthConnection{
		ID: newID(), OrgID: org, Provider: provider, Account: account, Scopes: []string{"s1", "s2"},
		ExpiresAt: &exp, HasRefreshToken: true, Source: "oauth", Sealed: []byte{1, 0, 0xff, byte(len(account))}, MasterKeyID: "k1",
	}
	require.NoError(t, b.s.InsertOAuthConnection(b.ctx, c))
	return c
}

func testOAuthConnections(t *testing.T, b *bundle, org string) {
	_, err := b.s.GetOAuthConnection(b.ctx, org, newID())
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.FindOAuthConnection(b.ctx, org, "google", "sales")
	require.ErrorIs(t, err, storage.ErrNotFound)

	c := b.connection(t, org, "google", "sales")
	require.EqualValues(t, 1, c.Version)
	require.False(t, c.CreatedAt.IsZero())

	got, err := b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.NoError(t, err)
	require.Equal(t, c.ID, got.ID)
	require.Equal(t, org, got.OrgID)
	require.Equal(t, "google", got.Provider)
	require.Equal(t, "sales", got.Account)
	require.Equal(t, []string{"s1", "s2"}, got.Scopes)
	require.Equal(t, c.Sealed, got.Sealed, "bytes kept exactly, NUL and 0xff included")
	require.Equal(t, "k1", got.MasterKeyID)
	require.True(t, got.HasRefreshToken)
	require.Equal(t, "oauth", got.Source)
	require.NotNil(t, got.ExpiresAt)
	require.WithinDuration(t, *c.ExpiresAt, *got.ExpiresAt, time.Microsecond)
	require.EqualValues(t, 1, got.Version)

	found, err := b.s.FindOAuthConnection(b.ctx, org, "google", "sales")
	require.NoError(t, err)
	require.Equal(t, c.ID, found.ID)

	// The same account of the same provider is one connection; another provider's is not.
	dup := &svctype.OAuthConnection{ID: newID(), OrgID: org, Provider: "google", Account: "sales", Sealed: []byte{1}, MasterKeyID: "k1", Source: "tokens"}
	require.ErrorIs(t, b.s.InsertOAuthConnection(b.ctx, dup), storage.ErrConflict)
	b.connection(t, org, "slack", "sales")

	require.NoError(t, b.s.DeleteOAuthConnection(b.ctx, org, c.ID))
	require.ErrorIs(t, b.s.DeleteOAuthConnection(b.ctx, org, c.ID), storage.ErrNotFound)
	_, err = b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testOAuthReplace(t *testing.T, b *bundle, org string) {
	c := b.connection(t, org, "microsoft", "ops")
	created := c.CreatedAt

	next := *c
	next.Sealed, next.MasterKeyID, next.ExpiresAt, next.HasRefreshToken, next.Scopes = []byte{7}, "k2", nil, false, nil
	next.CreatedAt, next.UpdatedAt = time.Time{}, time.Time{}
	require.NoError(t, b.s.ReplaceOAuthConnection(b.ctx, &next, 1))
	require.EqualValues(t, 2, next.Version)
	require.WithinDuration(t, created, next.CreatedAt, time.Microsecond, "created_at kept")

	// A writer that read version 1 comes second: refused, nothing changed.
	stale := *c
	stale.Sealed = []byte{8}
	require.ErrorIs(t, b.s.ReplaceOAuthConnection(b.ctx, &stale, 1), storage.ErrConflict)
	got, err := b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.NoError(t, err)
	require.Equal(t, []byte{7}, got.Sealed)
	require.Equal(t, "k2", got.MasterKeyID)
	require.Nil(t, got.ExpiresAt)
	require.False(t, got.HasRefreshToken)
	require.Equal(t, []string{}, got.Scopes)
	require.EqualValues(t, 2, got.Version)

	// Unconditional.
	stale.Sealed = []byte{9}
	require.NoError(t, b.s.ReplaceOAuthConnection(b.ctx, &stale, 0))
	require.EqualValues(t, 3, stale.Version)

	gone := *c
	gone.ID = newID()
	require.ErrorIs(t, b.s.ReplaceOAuthConnection(b.ctx, &gone, 0), storage.ErrNotFound)
	require.ErrorIs(t, b.s.ReplaceOAuthConnection(b.ctx, &gone, 3), storage.ErrNotFound)

	// Concurrent compare-and-swap writers over one version: exactly one wins.
	var wg sync.WaitGroup
	results := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := *c
			w.Sealed = []byte{byte(i)}
			results <- b.s.ReplaceOAuthConnection(b.ctx, &w, 3)
		}()
	}
	wg.Wait()
	close(results)
	n := 0
	for err := range results {
		if err == nil {
			n++
		} else {
			require.ErrorIs(t, err, storage.ErrConflict)
		}
	}
	require.Equal(t, 1, n)
}

func testOAuthList(t *testing.T, b *bundle, org string) {
	for _, pa := range [][2]string{{"slack", "b"}, {"google", "z"}, {"google", "a"}, {"microsoft", "m"}, {"slack", "a"}} {
		b.connection(t, org, pa[0], pa[1])
	}
	b.connection(t, org+"_other", "google", "other")
	key := func(c svctype.OAuthConnection) string { return c.Provider + "/" + c.Account }
	names := func(cs []svctype.OAuthConnection) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = key(c)
			require.Equal(t, org, c.OrgID)
		}
		return out
	}
	for _, limit := range []int{1, 2, 50} {
		all := collect(t, limit, key, func(o svctype.ListOptions) (svctype.Page[svctype.OAuthConnection], error) {
			return b.s.ListOAuthConnections(b.ctx, org, storage.OAuthConnectionFilter{ListOptions: o})
		})
		require.Equal(t, []string{"google/a", "google/z", "microsoft/m", "slack/a", "slack/b"}, names(all))
	}
	google := collect(t, 1, key, func(o svctype.ListOptions) (svctype.Page[svctype.OAuthConnection], error) {
		return b.s.ListOAuthConnections(b.ctx, org, storage.OAuthConnectionFilter{Provider: "google", ListOptions: o})
	})
	require.Equal(t, []string{"google/a", "google/z"}, names(google))

	empty, err := b.s.ListOAuthConnections(b.ctx, org+"_none", storage.OAuthConnectionFilter{})
	require.NoError(t, err)
	require.NotNil(t, empty.Items)
	require.Empty(t, empty.Items)
	_, err = b.s.ListOAuthConnections(b.ctx, org, storage.OAuthConnectionFilter{ListOptions: svctype.ListOptions{Cursor: "bogus"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)

	// Under another master key than k2: what rotation still has to move.
	moved, err := b.s.FindOAuthConnection(b.ctx, org, "google", "z")
	require.NoError(t, err)
	moved.MasterKeyID, moved.UpdatedAt = "k2", time.Time{}
	require.NoError(t, b.s.ReplaceOAuthConnection(b.ctx, moved, 0))
	for _, limit := range []int{1, 50} {
		notK2 := collect(t, limit, key, func(o svctype.ListOptions) (svctype.Page[svctype.OAuthConnection], error) {
			return b.s.ListOAuthConnections(b.ctx, org, storage.OAuthConnectionFilter{NotKeyID: "k2", ListOptions: o})
		})
		require.Equal(t, []string{"google/a", "microsoft/m", "slack/a", "slack/b"}, names(notK2))
	}
	notK1, err := b.s.ListOAuthConnections(b.ctx, org, storage.OAuthConnectionFilter{NotKeyID: "k1", Provider: "google"})
	require.NoError(t, err)
	require.Equal(t, []string{"google/z"}, names(notK1.Items))
}

func testOAuthOrgs(t *testing.T, b *bundle, org string) {
	// The store is shared with the other parts: look at this part's organizations only.
	var mine []string
	for i := range 5 {
		o := fmt.Sprintf("%s_%d", org, i)
		mine = append(mine, o)
		b.connection(t, o, "google", "a")
		b.connection(t, o, "slack", "a") // two connections, one organization
		if i%2 == 0 {
			c := b.connection(t, o, "microsoft", "a")
			c.MasterKeyID, c.UpdatedAt = "k2", time.Time{}
			require.NoError(t, b.s.ReplaceOAuthConnection(b.ctx, c, 0))
		}
	}
	orgs := func(f secrets.ListFilter) []string {
		got := collect(t, 2, func(s string) string { return s }, func(o svctype.ListOptions) (svctype.Page[string], error) {
			f.ListOptions = o
			return b.s.ListOAuthConnectionOrgs(b.ctx, f)
		})
		var out []string
		for _, o := range got {
			if slices.Contains(mine, o) {
				out = append(out, o)
			}
		}
		return out
	}
	require.Equal(t, mine, orgs(secrets.ListFilter{}), "each organization once, in order")
	require.Equal(t, []string{mine[0], mine[2], mine[4]}, orgs(secrets.ListFilter{NotKeyID: "k1"}))
	require.Equal(t, mine, orgs(secrets.ListFilter{NotKeyID: "k2"}))
	_, err := b.s.ListOAuthConnectionOrgs(b.ctx, secrets.ListFilter{ListOptions: svctype.ListOptions{Cursor: "not a cursor!"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
}

// testOAuthReseal: a reseal swaps the sealed tokens and their key id over the version and
// bytes it read, and nothing else: not the version (a refresh that read it still wins), not
// updated_at, not what describes the tokens. From a stale read it is refused.
func testOAuthReseal(t *testing.T, b *bundle, org string) {
	c := b.connection(t, org, "google", "sales")
	read, err := b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.NoError(t, err)

	require.NoError(t, b.s.ResealOAuthConnection(b.ctx, read, []byte("new"), "k2"))
	got, err := b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("new"), got.Sealed)
	require.Equal(t, "k2", got.MasterKeyID)
	require.Equal(t, read.Version, got.Version, "a reseal keeps the version")
	require.WithinDuration(t, read.UpdatedAt, got.UpdatedAt, time.Microsecond, "a reseal is not an update")
	require.WithinDuration(t, read.CreatedAt, got.CreatedAt, time.Microsecond)
	require.WithinDuration(t, *read.ExpiresAt, *got.ExpiresAt, time.Microsecond)
	require.Equal(t, read.Scopes, got.Scopes)
	require.Equal(t, read.HasRefreshToken, got.HasRefreshToken)
	require.Equal(t, read.Source, got.Source)

	// The same read again: the bytes are no longer the ones it read.
	require.ErrorIs(t, b.s.ResealOAuthConnection(b.ctx, read, []byte("again"), "k2"), storage.ErrConflict)

	// A refresh that read the version before the reseal still writes over it.
	refreshed := *read
	refreshed.Sealed, refreshed.MasterKeyID, refreshed.UpdatedAt = []byte("refreshed"), "k1", time.Time{}
	require.NoError(t, b.s.ReplaceOAuthConnection(b.ctx, &refreshed, read.Version))

	// A reseal from a read made before that write never undoes it.
	require.ErrorIs(t, b.s.ResealOAuthConnection(b.ctx, got, []byte("stale"), "k2"), storage.ErrConflict)
	now, err := b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("refreshed"), now.Sealed)
	require.Equal(t, "k1", now.MasterKeyID)
	require.Equal(t, read.Version+1, now.Version)

	// Same bytes, another version (written back unchanged by someone else): refused too.
	same := *now
	same.Version = read.Version
	require.ErrorIs(t, b.s.ResealOAuthConnection(b.ctx, &same, []byte("stale"), "k2"), storage.ErrConflict)

	// Tenancy: another organization's id names nothing there.
	stolen := *now
	stolen.OrgID = org + "_b"
	require.ErrorIs(t, b.s.ResealOAuthConnection(b.ctx, &stolen, []byte("b"), "k2"), storage.ErrNotFound)
	require.NoError(t, b.s.ResealOAuthConnection(b.ctx, now, []byte("moved"), "k2"))

	require.NoError(t, b.s.DeleteOAuthConnection(b.ctx, org, c.ID))
	require.ErrorIs(t, b.s.ResealOAuthConnection(b.ctx, now, []byte("x"), "k2"), storage.ErrNotFound)
}

func testOAuthTenancy(t *testing.T, b *bundle, org string) {
	other := org + "_b"
	c := b.connection(t, org, "google", "sales")

	_, err := b.s.GetOAuthConnection(b.ctx, other, c.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.FindOAuthConnection(b.ctx, other, "google", "sales")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteOAuthConnection(b.ctx, other, c.ID), storage.ErrNotFound)
	hijack := *c
	hijack.OrgID, hijack.Sealed = other, []byte{6}
	require.ErrorIs(t, b.s.ReplaceOAuthConnection(b.ctx, &hijack, 0), storage.ErrNotFound)
	require.ErrorIs(t, b.s.ReplaceOAuthConnection(b.ctx, &hijack, 1), storage.ErrNotFound)
	page, err := b.s.ListOAuthConnections(b.ctx, other, storage.OAuthConnectionFilter{})
	require.NoError(t, err)
	require.Empty(t, page.Items)

	// Another org may have the same provider and account (and even the same id) of its own.
	same := &svctype.OAuthConnection{ID: c.ID, OrgID: other, Provider: "google", Account: "sales", Sealed: []byte{5}, MasterKeyID: "k1", Source: "tokens"}
	require.NoError(t, b.s.InsertOAuthConnection(b.ctx, same))

	got, err := b.s.GetOAuthConnection(b.ctx, org, c.ID)
	require.NoError(t, err)
	require.Equal(t, c.Sealed, got.Sealed, "org A's connection untouched")
	require.EqualValues(t, 1, got.Version)
}

func testOAuthStates(t *testing.T, b *bundle, org string) {
	now := time.Now().UTC()
	s := &svctype.OAuthState{OrgID: org, Hash: "h1", Provider: "google", Account: "sales", RedirectURL: "https://svc.example.com/oauth/callback", ExpiresAt: now.Add(10 * time.Minute)}
	require.NoError(t, b.s.CreateOAuthState(b.ctx, s))

	// Another organization cannot take it.
	_, err := b.s.TakeOAuthState(b.ctx, org+"_b", "h1", now)
	require.ErrorIs(t, err, storage.ErrNotFound)

	got, err := b.s.TakeOAuthState(b.ctx, org, "h1", now)
	require.NoError(t, err)
	require.Equal(t, org, got.OrgID)
	require.Equal(t, "google", got.Provider)
	require.Equal(t, "sales", got.Account)
	require.Equal(t, s.RedirectURL, got.RedirectURL)
	require.WithinDuration(t, s.ExpiresAt, got.ExpiresAt, time.Microsecond)

	_, err = b.s.TakeOAuthState(b.ctx, org, "h1", now)
	require.ErrorIs(t, err, storage.ErrNotFound, "single use")

	// An expired state is not taken (and is gone).
	require.NoError(t, b.s.CreateOAuthState(b.ctx, &svctype.OAuthState{OrgID: org, Hash: "h2", Provider: "slack", Account: "a", ExpiresAt: now.Add(time.Minute)}))
	_, err = b.s.TakeOAuthState(b.ctx, org, "h2", now.Add(2*time.Minute))
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.TakeOAuthState(b.ctx, org, "h2", now)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func testOAuthStateTakenOnce(t *testing.T, b *bundle, org string) {
	now := time.Now().UTC()
	require.NoError(t, b.s.CreateOAuthState(b.ctx, &svctype.OAuthState{OrgID: org, Hash: "race", Provider: "google", Account: "a", ExpiresAt: now.Add(time.Minute)}))
	var wg sync.WaitGroup
	got := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.s.TakeOAuthState(context.Background(), org, "race", now)
			got <- err
		}()
	}
	wg.Wait()
	close(got)
	n := 0
	for err := range got {
		if err == nil {
			n++
		} else {
			require.ErrorIs(t, err, storage.ErrNotFound)
		}
	}
	require.Equal(t, 1, n, "one callback gets the state")
}
