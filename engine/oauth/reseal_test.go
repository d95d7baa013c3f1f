package oauth_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// storedConnections reads the organizations' connections from the store, by
// org/provider/account.
func (b *oauthBundle) storedConnections(t *testing.T, orgs ...string) map[string]svctype.OAuthConnection {
	t.Helper()
	out := map[string]svctype.OAuthConnection{}
	for _, org := range orgs {
		page, err := b.St.ListOAuthConnections(b.Ctx, org, engine.OAuthConnectionFilter{ListOptions: svctype.ListOptions{Limit: 100}})
		require.NoError(t, err)
		for _, c := range page.Items {
			out[org+"/"+c.Provider+"/"+c.Account] = c
		}
	}
	return out
}

// runWith executes a one-step workflow of org with eng (a worker of another process) and
// returns the run.
func (b *oauthBundle) runWith(t *testing.T, eng *engine.Engine, org, wfID string) *engine.RunStatusDoc {
	t.Helper()
	run, err := eng.Execute(b.Ctx, org, wfID, json.RawMessage(`{}`), engine.ExecuteOptions{})
	require.NoError(t, err)
	_, err = eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err := eng.RunStatus(b.Ctx, org, run.ID)
	require.NoError(t, err)
	return doc
}

// TestOAuthTokensSurviveMasterKeyRotation: connections of two organizations sealed under
// key A are re-sealed, with the org config, by ResealCollections under keyring (B, A), in the
// same passes. Afterwards a process holding B alone uses every connection (each
// organization gets its own tokens, a step posts with the same token as before, an expired
// token is refreshed with the refresh token the old key sealed), the old key alone opens
// none, and nothing else of a connection changed: not the version, not updated_at. A
// connection under a key nobody holds is reported and left as it is.
func TestOAuthTokensSurviveMasterKeyRotation(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		slackA, slackB, googleA := b.app(t, "org-a", "slack"), b.app(t, "org-b", "slack"), b.app(t, "org-a", "google")
		accessA, _ := b.tokens(t, "org-a", "slack", "workspace", slackA, nil)
		accessB, _ := b.tokens(t, "org-b", "slack", "workspace", slackB, nil) // the same label in another org
		expired := time.Now().Add(-time.Minute)
		oldGoogle, _ := b.tokens(t, "org-a", "google", "sales", googleA, &expired)
		before := b.storedConnections(t, "org-a", "org-b")
		require.Len(t, before, 3)

		keyB := enginetest.GenerateKey(t)
		stats, err := secrets.ResealCollections(b.Ctx, enginetest.NewKeyring(t, keyB, b.key), secrets.ResealOptions{Grace: time.Millisecond, PageSize: 1},
			secrets.OrgConfig(b.St), engine.OAuthSealedTokens(b.St))
		require.NoError(t, err)
		require.Equal(t, 2, stats.Passes, "one pass, and the one that confirms")
		require.Len(t, stats.Collections, 2)
		require.Equal(t, secrets.CollectionStats{Kind: "org config", Orgs: 2, Resealed: 3}, stats.Collections[0], "the three apps")
		require.Equal(t, secrets.CollectionStats{Kind: "oauth connections", Orgs: 2, Resealed: 3}, stats.Collections[1])
		require.Equal(t, 6, stats.Resealed)

		after := b.storedConnections(t, "org-a", "org-b")
		require.Len(t, after, 3)
		for name, was := range before {
			now := after[name]
			require.Equal(t, secrets.KeyID(keyB), now.MasterKeyID, name)
			require.NotEqual(t, was.Sealed, now.Sealed, name)
			require.Equal(t, was.Version, now.Version, "%s: a reseal is not a new version", name)
			require.WithinDuration(t, was.UpdatedAt, now.UpdatedAt, time.Microsecond, "%s: a reseal is not an update", name)
			require.Equal(t, was.Scopes, now.Scopes)
			require.Equal(t, was.HasRefreshToken, now.HasRefreshToken)
			require.Equal(t, was.ExpiresAt == nil, now.ExpiresAt == nil)
		}

		// A process with key B alone: each organization's own tokens, as they were.
		newOnly := b.engineWith(t, enginetest.NewKeyring(t, keyB))
		tok, _, err := newOnly.OAuthAccessToken(b.Ctx, "org-a", "slack", "")
		require.NoError(t, err)
		require.Equal(t, accessA, tok)
		tok, _, err = newOnly.OAuthAccessToken(b.Ctx, "org-b", "slack", "workspace")
		require.NoError(t, err)
		require.Equal(t, accessB, tok)
		w := b.Workflow(t, "org-b", "post", `{"actions": [{"type": "slack_post_message", "outputKey": "slack", "properties": {"channel": "C1", "text": "after the rotation"}}]}`)
		doc := b.runWith(t, newOnly, "org-b", w.ID)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		reqs := b.p.Requests()
		require.Equal(t, accessB, reqs[len(reqs)-1].Token, "the step posts with the token stored before the rotation")
		// The expired one is refreshed: its refresh token and the app opened under B.
		tok, _, err = newOnly.OAuthAccessToken(b.Ctx, "org-a", "google", "sales")
		require.NoError(t, err)
		require.NotEqual(t, oldGoogle, tok)
		require.True(t, b.p.ValidAccess(tok))
		require.Equal(t, 1, b.p.Refreshes())

		// The old key alone opens none of them.
		for _, org := range []string{"org-a", "org-b"} {
			_, _, err = b.Eng.OAuthAccessToken(b.Ctx, org, "slack", "")
			require.ErrorIs(t, err, secrets.ErrUnknownKey, org)
		}

		// A connection under a key nobody holds any more is reported, not dropped.
		lostKey := enginetest.GenerateKey(t)
		lost, _, err := b.engineWith(t, enginetest.NewKeyring(t, lostKey)).CreateOAuthConnection(b.Ctx, "org-c", engine.OAuthConnectionInput{
			Provider: "microsoft", Account: "ops", AccessToken: "at-sealed-under-a-lost-key-0123"})
		require.NoError(t, err)
		stats, err = secrets.ResealCollections(b.Ctx, enginetest.NewKeyring(t, keyB), secrets.ResealOptions{Grace: time.Millisecond},
			secrets.OrgConfig(b.St), engine.OAuthSealedTokens(b.St))
		require.ErrorIs(t, err, secrets.ErrUnknownKey)
		require.Equal(t, []string{"org-c oauth_connection:" + lost.ID}, stats.Unreadable)
		require.Equal(t, stats.Unreadable, stats.Collections[1].Unreadable)
		require.NotContains(t, err.Error(), "at-sealed-under-a-lost-key")
		got, err := b.St.GetOAuthConnection(b.Ctx, "org-c", lost.ID)
		require.NoError(t, err)
		require.Equal(t, secrets.KeyID(lostKey), got.MasterKeyID)
		require.Equal(t, lost.Sealed, got.Sealed, "left as it was")
		b.noLeaks(t, "org-b", doc.ID)
	})
}

// listHook calls after once, right after the collection's first List: between the
// reseal's read of a connection and its write.
type listHook struct {
	secrets.SealedCollection
	once  *sync.Once
	after func(org string)
}

func (h listHook) List(ctx context.Context, org string, f secrets.ListFilter) (svctype.Page[secrets.SealedValue], error) {
	page, err := h.SealedCollection.List(ctx, org, f)
	h.once.Do(func() { h.after(org) })
	return page, err
}

// TestOAuthResealDoesNotUndoARefresh: a connection's token is refreshed (and stored by its
// compare-and-swap) between the reseal's read of the connection and its write. The
// reseal's write is refused, the refreshed tokens stay, and the next pass moves them when
// the refreshing process sealed them under the old key; a process with the new key alone
// then uses the refreshed token without refreshing again.
func TestOAuthResealDoesNotUndoARefresh(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		// stale: the refreshing process has not seen the new key and seals under the old.
		stale                   bool
		resealed, raced, passes int
	}{
		{"stale process", true, 1, 1, 3},
		{"process with the new key", false, 0, 1, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
				clientID := b.app(t, "org-a", "google")
				expired := time.Now().Add(-time.Minute)
				oldAccess, _ := b.tokens(t, "org-a", "google", "sales", clientID, &expired)
				keyB := enginetest.GenerateKey(t)
				refresher := b.Eng
				if !tt.stale {
					refresher = b.engineWith(t, enginetest.NewKeyring(t, keyB, b.key))
				}
				var refreshed string
				col := listHook{SealedCollection: engine.OAuthSealedTokens(b.St), once: &sync.Once{}, after: func(org string) {
					tok, _, err := refresher.OAuthAccessToken(b.Ctx, org, "google", "sales")
					require.NoError(t, err)
					refreshed = tok
				}}
				stats, err := secrets.ResealCollections(b.Ctx, enginetest.NewKeyring(t, keyB, b.key), secrets.ResealOptions{Grace: time.Millisecond}, col)
				require.NoError(t, err)
				require.Equal(t, tt.raced, stats.Raced, "the refresh came first")
				require.Equal(t, tt.resealed, stats.Resealed)
				require.Equal(t, tt.passes, stats.Passes)
				require.Equal(t, 1, b.p.Refreshes())
				require.NotEqual(t, oldAccess, refreshed)

				c, err := b.St.FindOAuthConnection(b.Ctx, "org-a", "google", "sales")
				require.NoError(t, err)
				require.Equal(t, secrets.KeyID(keyB), c.MasterKeyID)
				require.EqualValues(t, 2, c.Version, "the refresh's write, and no other")
				tok, _, err := b.engineWith(t, enginetest.NewKeyring(t, keyB)).OAuthAccessToken(b.Ctx, "org-a", "google", "sales")
				require.NoError(t, err)
				require.Equal(t, refreshed, tok, "the refreshed token, not the one the reseal read")
				require.Equal(t, 1, b.p.Refreshes(), "and it is fresh: no second refresh")
			})
		})
	}
}
