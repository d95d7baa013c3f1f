package gwstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// testGatewayPeople: sign-in codes (one per person, counted tries, single use, even when
// many verify at once), sessions that end with their key, approver roles per
// organization, and the operator's records (suspension and tiers reach keys, licenses,
// usage across accounts).
func testGatewayPeople(t *testing.T, b *bundle) {
	at := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, b.s.CreateAccount(b.ctx, &gwstore.Account{ID: "acct_p", Email: "p@example.com", Name: "P", Status: gwstore.AccountActive, TokenHash: "ph"}))
	require.NoError(t, b.s.CreateAccount(b.ctx, &gwstore.Account{ID: "acct_q", Email: "q@example.com", Name: "Q", Status: gwstore.AccountActive, TokenHash: "qh",
		CreatedAt: at.Add(time.Second)}))
	require.NoError(t, b.s.CreateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_p", AccountID: "acct_p", Name: "p"}))
	require.NoError(t, b.s.CreateGatewayOrg(b.ctx, &gwstore.GatewayOrg{ID: "org_q", AccountID: "acct_q", Name: "q"}))
	require.NoError(t, b.s.CreateAPIKey(b.ctx, &gwstore.APIKey{ID: "pk_p", AccountID: "acct_p", OrgID: "org_p", Kind: gwstore.KeyPublishable, Prefix: "svc_pk_p", Hash: "pkh"}))

	// Codes: a second code replaces the first; tries are counted up to the limit.
	code := func(id string) *gwstore.SignInCode {
		return &gwstore.SignInCode{ID: id, OrgID: "org_p", KeyID: "pk_p", Email: "ann@example.com", Salt: "s-" + id, Hash: "h-" + id, ExpiresAt: at.Add(10 * time.Minute)}
	}
	require.NoError(t, b.s.PutSignInCode(b.ctx, code("c1")))
	require.NoError(t, b.s.PutSignInCode(b.ctx, code("c2")))
	c, err := b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at)
	require.NoError(t, err)
	require.Equal(t, "c2", c.ID, "the newest code replaces the earlier one")
	require.Equal(t, "h-c2", c.Hash)
	require.Equal(t, 1, c.Attempts)
	_, err = b.s.TrySignInCode(b.ctx, "org_q", "ann@example.com", 5, at)
	require.ErrorIs(t, err, gwstore.ErrNotFound, "another organization's code")
	_, err = b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at.Add(11*time.Minute))
	require.ErrorIs(t, err, gwstore.ErrNotFound, "expired")
	for range 4 {
		_, err = b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at)
		require.NoError(t, err)
	}
	_, err = b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at)
	require.ErrorIs(t, err, gwstore.ErrNotFound, "five tries, then no more")

	// Many tries at once: exactly maxAttempts are let through.
	require.NoError(t, b.s.PutSignInCode(b.ctx, code("c3")))
	var mu sync.Mutex
	var wg sync.WaitGroup
	tries := 0
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at); err == nil {
				mu.Lock()
				tries++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 5, tries)

	// Many uses at once: one.
	require.NoError(t, b.s.PutSignInCode(b.ctx, code("c4")))
	c, err = b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at)
	require.NoError(t, err)
	uses := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.s.UseSignInCode(b.ctx, "org_p", c.ID, at) == nil {
				mu.Lock()
				uses++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, uses, "a code is used once")
	require.ErrorIs(t, b.s.UseSignInCode(b.ctx, "org_q", c.ID, at), gwstore.ErrConflict, "another organization's code is never used")
	_, err = b.s.TrySignInCode(b.ctx, "org_p", "ann@example.com", 5, at)
	require.ErrorIs(t, err, gwstore.ErrNotFound, "a used code is spent")

	// Sessions end with their key.
	s := &gwstore.Session{Hash: "sh", Prefix: "svc_sess_ab", OrgID: "org_p", KeyID: "pk_p", Email: "ann@example.com", ExpiresAt: at.Add(time.Hour)}
	require.NoError(t, b.s.CreateSession(b.ctx, s))
	got, err := b.s.SessionByHash(b.ctx, "sh")
	require.NoError(t, err)
	require.Equal(t, "org_p", got.OrgID)
	require.Equal(t, "ann@example.com", got.Email)
	require.Nil(t, got.KeyEnded)
	require.NoError(t, b.s.EndAPIKey(b.ctx, "acct_p", "org_p", "pk_p", at, true))
	got, err = b.s.SessionByHash(b.ctx, "sh")
	require.NoError(t, err)
	require.NotNil(t, got.KeyEnded)
	require.WithinDuration(t, at, *got.KeyEnded, time.Second)
	require.ErrorIs(t, b.s.EndSession(b.ctx, "org_q", "sh"), gwstore.ErrNotFound, "another organization's session")
	require.NoError(t, b.s.EndSession(b.ctx, "org_p", "sh"))
	_, err = b.s.SessionByHash(b.ctx, "sh")
	require.ErrorIs(t, err, gwstore.ErrNotFound)

	// A session opened on a public form's sign-in keeps the form's id.
	require.NoError(t, b.s.CreateSession(b.ctx, &gwstore.Session{Hash: "shf", Prefix: "svc_sess_cd", OrgID: "org_p", Email: "ann@example.com",
		FormID: "frm-org_p-1", ExpiresAt: at.Add(time.Hour)}))
	got, err = b.s.SessionByHash(b.ctx, "shf")
	require.NoError(t, err)
	require.Equal(t, "frm-org_p-1", got.FormID)
	require.Empty(t, got.KeyID)

	// Who may sign in, per organization: none set is not found; a second put replaces.
	_, err = b.s.GetSignInPolicy(b.ctx, "org_p")
	require.ErrorIs(t, err, gwstore.ErrNotFound)
	require.NoError(t, b.s.PutSignInPolicy(b.ctx, &gwstore.SignInPolicy{OrgID: "org_p", Domains: []string{"example.com", "corp.example"}}))
	require.NoError(t, b.s.PutSignInPolicy(b.ctx, &gwstore.SignInPolicy{OrgID: "org_q", Anyone: true}))
	pol, err := b.s.GetSignInPolicy(b.ctx, "org_p")
	require.NoError(t, err)
	require.False(t, pol.Anyone)
	require.Equal(t, []string{"example.com", "corp.example"}, pol.Domains)
	require.NoError(t, b.s.PutSignInPolicy(b.ctx, &gwstore.SignInPolicy{OrgID: "org_p", Anyone: true}))
	pol, err = b.s.GetSignInPolicy(b.ctx, "org_p")
	require.NoError(t, err)
	require.True(t, pol.Anyone)
	require.Equal(t, []string{}, pol.Domains)
	pol, err = b.s.GetSignInPolicy(b.ctx, "org_q")
	require.NoError(t, err)
	require.True(t, pol.Anyone, "each organization its own")

	// Approver roles, per organization.
	require.NoError(t, b.s.PutOrgUser(b.ctx, &gwstore.OrgUser{OrgID: "org_p", Email: "ann@example.com", ApproverRoles: []string{"finance"}}))
	require.NoError(t, b.s.PutOrgUser(b.ctx, &gwstore.OrgUser{OrgID: "org_p", Email: "ann@example.com", ApproverRoles: []string{"finance", "legal"}}))
	require.NoError(t, b.s.PutOrgUser(b.ctx, &gwstore.OrgUser{OrgID: "org_p", Email: "bob@example.com"}))
	u, err := b.s.GetOrgUser(b.ctx, "org_p", "ann@example.com")
	require.NoError(t, err)
	require.Equal(t, []string{"finance", "legal"}, u.ApproverRoles)
	_, err = b.s.GetOrgUser(b.ctx, "org_q", "ann@example.com")
	require.ErrorIs(t, err, gwstore.ErrNotFound)
	users, err := b.s.ListOrgUsers(b.ctx, "org_p", svctype.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.Len(t, users.Items, 1)
	require.Equal(t, "ann@example.com", users.Items[0].Email)
	users, err = b.s.ListOrgUsers(b.ctx, "org_p", svctype.ListOptions{Limit: 1, Cursor: users.NextCursor})
	require.NoError(t, err)
	require.Equal(t, "bob@example.com", users.Items[0].Email)
	require.Equal(t, []string{}, users.Items[0].ApproverRoles)
	require.Empty(t, users.NextCursor)
	_, err = b.s.ListOrgUsers(b.ctx, "org_p", svctype.ListOptions{Cursor: "!!"})
	require.ErrorIs(t, err, gwstore.ErrInvalidCursor)
	require.ErrorIs(t, b.s.DeleteOrgUser(b.ctx, "org_q", "bob@example.com"), gwstore.ErrNotFound)
	require.NoError(t, b.s.DeleteOrgUser(b.ctx, "org_p", "bob@example.com"))

	// Operator: suspension and tier reach the account's keys.
	require.NoError(t, b.s.CreateAPIKey(b.ctx, &gwstore.APIKey{ID: "rk_p", AccountID: "acct_p", OrgID: "org_p", Kind: gwstore.KeyRuntime, Prefix: "svc_live_p", Hash: "rkh"}))
	require.NoError(t, b.s.PutTier(b.ctx, &gwstore.Tier{Name: "pro", Rate: 5, Burst: 10, RunsPerDay: 100, Features: []string{"agents"}}))
	require.NoError(t, b.s.PutTier(b.ctx, &gwstore.Tier{Name: "pro", Rate: 7, Burst: 10, RunsPerDay: 100, Features: []string{"agents", "agent_forms"}}))
	tier, err := b.s.GetTier(b.ctx, "pro")
	require.NoError(t, err)
	require.Equal(t, 7.0, tier.Rate)
	require.Equal(t, []string{"agents", "agent_forms"}, tier.Features)
	tiers, err := b.s.ListTiers(b.ctx)
	require.NoError(t, err)
	require.Len(t, tiers, 1)
	require.NoError(t, b.s.SetAccountTier(b.ctx, "acct_p", "pro", at))
	require.NoError(t, b.s.SetAccountStatus(b.ctx, "acct_p", gwstore.AccountSuspended, at))
	k, err := b.s.APIKeyByHash(b.ctx, "rkh")
	require.NoError(t, err)
	require.Equal(t, gwstore.AccountSuspended, k.AccountStatus)
	require.Equal(t, "pro", k.Tier)
	require.ErrorIs(t, b.s.SetAccountStatus(b.ctx, "acct_none", gwstore.AccountActive, at), gwstore.ErrNotFound)
	accounts, err := b.s.ListAccounts(b.ctx, svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, accounts.Items, 2)
	require.Equal(t, "acct_p", accounts.Items[0].ID)
	require.Equal(t, "pro", accounts.Items[0].Tier)

	// Licenses.
	l := &gwstore.IssuedLicense{ID: "lic_1", AccountID: "acct_p", Licensee: "P Ltd", Seats: 5, Features: []string{"agents"},
		NotBefore: at, ExpiresAt: at.Add(24 * time.Hour), License: "svcl1.x.y"}
	require.NoError(t, b.s.CreateLicense(b.ctx, l))
	require.NoError(t, b.s.CreateLicense(b.ctx, &gwstore.IssuedLicense{ID: "lic_2", AccountID: "acct_q", Licensee: "Q", Seats: 1,
		NotBefore: at, ExpiresAt: at.Add(time.Hour), License: "svcl1.q.q"}))
	mine, err := b.s.ListLicenses(b.ctx, "acct_p")
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, "P Ltd", mine[0].Licensee)
	all, err := b.s.ListLicenses(b.ctx, "")
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.NoError(t, b.s.RevokeLicense(b.ctx, "lic_1", at))
	require.NoError(t, b.s.RevokeLicense(b.ctx, "lic_1", at.Add(time.Hour)))
	got1, err := b.s.GetLicense(b.ctx, "lic_1")
	require.NoError(t, err)
	require.WithinDuration(t, at, *got1.RevokedAt, time.Second, "the first revocation stands")
	require.ErrorIs(t, b.s.RevokeLicense(b.ctx, "lic_none", at), gwstore.ErrNotFound)

	// Usage across accounts, and one organization's runs of a day.
	require.NoError(t, b.s.AddUsage(b.ctx, []gwstore.Usage{
		{OrgID: "org_p", Day: "2026-11-25", Class: "execute", Requests: 3, RunsStarted: 3},
		{OrgID: "org_p", Day: "2026-11-26", Class: "runs", Requests: 2, RateLimited: 1},
		{OrgID: "org_q", Day: "2026-11-26", Class: "execute", Requests: 4, RunsStarted: 4},
		{OrgID: "org_q", Day: "2026-11-20", Class: "execute", Requests: 9, RunsStarted: 9},
	}))
	byAccount, err := b.s.UsageByAccount(b.ctx, "2026-11-25", "2026-11-26")
	require.NoError(t, err)
	require.Equal(t, []gwstore.AccountUsage{{AccountID: "acct_p", Requests: 5, RateLimited: 1, RunsStarted: 3},
		{AccountID: "acct_q", Requests: 4, RunsStarted: 4}}, byAccount)
	n, err := b.s.RunsStartedOn(b.ctx, "org_q", "2026-11-26")
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	n, err = b.s.RunsStartedOn(b.ctx, "org_p", "2026-11-24")
	require.NoError(t, err)
	require.Zero(t, n)
}
