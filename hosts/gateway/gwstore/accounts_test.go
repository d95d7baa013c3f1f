package gwstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// testGateway: accounts found by their token's hash, organizations and keys only through
// their account, usage by organization.
func testGateway(t *testing.T, b *bundle) {
	a := &gwstore.Account{ID: "acct_a", Email: "a@example.com", Name: "A", Status: gwstore.AccountActive, TokenPrefix: "svc_mgmt_aaaa", TokenHash: "hash-a"}
	require.NoError(t, b.s.CreateAccount(b.ctx, a))
	other := &gwstore.Account{ID: "acct_b", Email: "b@example.com", Name: "B", Status: gwstore.AccountActive, TokenPrefix: "svc_mgmt_bbbb", TokenHash: "hash-b"}
	require.NoError(t, b.s.CreateAccount(b.ctx, other))
	require.ErrorIs(t, b.s.CreateAccount(b.ctx, &gwstore.Account{ID: "acct_c", Email: "a@example.com", Status: "active", TokenHash: "hash-c"}),
		gwstore.ErrConflict, "an email has one account")

	got, err := b.s.AccountByToken(b.ctx, "hash-a")
	require.NoError(t, err)
	require.Equal(t, "acct_a", got.ID)
	require.NoError(t, b.s.SetAccountToken(b.ctx, "acct_a", "svc_mgmt_new", "hash-a2", time.Now()))
	_, err = b.s.AccountByToken(b.ctx, "hash-a")
	require.ErrorIs(t, err, gwstore.ErrNotFound, "the old token stops at once")
	got, err = b.s.AccountByToken(b.ctx, "hash-a2")
	require.NoError(t, err)
	require.Equal(t, "svc_mgmt_new", got.TokenPrefix)

	require.NoError(t, b.s.CreateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_1", AccountID: "acct_a", Name: "one"}))
	require.NoError(t, b.s.CreateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_2", AccountID: "acct_a", Name: "two", CreatedAt: time.Now().Add(time.Second)}))
	require.ErrorIs(t, b.s.CreateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_1", AccountID: "acct_b", Name: "mine"}), gwstore.ErrConflict,
		"an organization id is global")
	page, err := b.s.ListGatewayOrgs(b.ctx, "acct_a", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, "org_1", page.Items[0].ID)
	page, err = b.s.ListGatewayOrgs(b.ctx, "acct_b", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	page, err = b.s.ListGatewayOrgs(b.ctx, "acct_a", svctype.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "org_1", page.Items[0].ID)
	page, err = b.s.ListGatewayOrgs(b.ctx, "acct_a", svctype.ListOptions{Limit: 1, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Equal(t, "org_2", page.Items[0].ID)
	require.Empty(t, page.NextCursor)
	_, err = b.s.ListGatewayOrgs(b.ctx, "acct_a", svctype.ListOptions{Cursor: "not a cursor!"})
	require.ErrorIs(t, err, gwstore.ErrInvalidCursor)
	require.EqualError(t, err, "gwstore: invalid cursor", "the gateway's error, not the engine's")
	_, err = b.s.GetGatewayOrg(b.ctx, "acct_b", "org_1")
	require.ErrorIs(t, err, gwstore.ErrNotFound)
	require.ErrorIs(t, b.s.UpdateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_1", AccountID: "acct_b", Name: "taken"}), gwstore.ErrNotFound)
	require.NoError(t, b.s.UpdateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_1", AccountID: "acct_a", Name: "renamed"}))
	o, err := b.s.GetGatewayOrg(b.ctx, "acct_a", "org_1")
	require.NoError(t, err)
	require.Equal(t, "renamed", o.Name)

	k := &gwstore.APIKey{ID: "key_1", AccountID: "acct_a", OrgID: "org_1", Kind: gwstore.KeyRuntime, Prefix: "svc_live_abcd", Hash: "khash-1"}
	require.NoError(t, b.s.CreateAPIKey(b.ctx, k))
	found, err := b.s.APIKeyByHash(b.ctx, "khash-1")
	require.NoError(t, err)
	require.Equal(t, "org_1", found.OrgID)
	require.Nil(t, found.ExpiresAt)
	at := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	require.ErrorIs(t, b.s.EndAPIKey(b.ctx, "acct_b", "org_1", "key_1", at, true), gwstore.ErrNotFound, "another account's key")
	require.NoError(t, b.s.EndAPIKey(b.ctx, "acct_a", "org_1", "key_1", at, false))
	found, err = b.s.GetAPIKey(b.ctx, "acct_a", "org_1", "key_1")
	require.NoError(t, err)
	require.True(t, found.ExpiresAt.Equal(at))
	require.Nil(t, found.RevokedAt)
	require.NoError(t, b.s.EndAPIKey(b.ctx, "acct_a", "org_1", "key_1", at, true))
	keys, err := b.s.ListAPIKeys(b.ctx, "acct_a", "org_1", svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, keys.Items, 1)
	require.NotNil(t, keys.Items[0].RevokedAt)
	keys, err = b.s.ListAPIKeys(b.ctx, "acct_b", "org_1", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, keys.Items)

	// Usage adds up by (org, day, class), read only for its organization.
	require.NoError(t, b.s.AddUsage(b.ctx, []gwstore.Usage{
		{OrgID: "org_1", Day: "2026-11-24", Class: "workflows", Requests: 3},
		{OrgID: "org_1", Day: "2026-11-24", Class: "execute", Requests: 2, RunsStarted: 2},
		{OrgID: "org_2", Day: "2026-11-24", Class: "workflows", Requests: 9},
	}))
	require.NoError(t, b.s.AddUsage(b.ctx, []gwstore.Usage{{OrgID: "org_1", Day: "2026-11-24", Class: "workflows", Requests: 1, RateLimited: 4}}))
	u, err := b.s.ListUsage(b.ctx, "org_1", "2026-11-01", "2026-11-30")
	require.NoError(t, err)
	require.Equal(t, []gwstore.Usage{
		{OrgID: "org_1", Day: "2026-11-24", Class: "execute", Requests: 2, RunsStarted: 2},
		{OrgID: "org_1", Day: "2026-11-24", Class: "workflows", Requests: 4, RateLimited: 4},
	}, u)
	u, err = b.s.ListUsage(b.ctx, "org_1", "2026-11-25", "2026-11-30")
	require.NoError(t, err)
	require.Empty(t, u)
}

// testGatewayBuckets: a key's bucket shared by every gateway process holds burst, refills
// at rate, and never gives out more than it holds, however many take at once.
func testGatewayBuckets(t *testing.T, b *bundle) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	got, err := b.s.TakeTokens(b.ctx, "key_1", 3, 1, 5, at)
	require.NoError(t, err)
	require.Equal(t, 3.0, got, "a new bucket is full")
	got, err = b.s.TakeTokens(b.ctx, "key_1", 5, 1, 5, at)
	require.NoError(t, err)
	require.Equal(t, 2.0, got, "what is left")
	got, err = b.s.TakeTokens(b.ctx, "key_1", 5, 1, 5, at.Add(1500*time.Millisecond))
	require.NoError(t, err)
	require.InDelta(t, 1.5, got, 1e-9, "refilled at rate")
	got, err = b.s.TakeTokens(b.ctx, "key_2", 1, 1, 5, at)
	require.NoError(t, err)
	require.Equal(t, 1.0, got, "each key its own bucket")

	// Twenty takers at once of a bucket of ten: ten tokens in all.
	var mu sync.Mutex
	var total float64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := b.s.TakeTokens(b.ctx, "key_race", 1, 0.0001, 10, at)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.InDelta(t, 10.0, total, 0.01)
}
