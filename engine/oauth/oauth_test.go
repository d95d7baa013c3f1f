package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/oauthtools/oauthtest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testlog"
)

const redirectURL = "https://svc.example.com/oauth/callback"

type oauthBundle struct {
	*enginetest.Bundle
	p    *oauthtest.Provider
	logs *enginetest.LockedBuffer
	// offset moves the engine's clock (only for flows: jobs are due by the store's clock).
	offset atomic.Int64
	// appSecrets are the client secrets configured, for leak checks.
	appSecrets []string
	// key is the engine's one master key.
	key []byte
}

func oauthSetup(t *testing.T, dialect string) *oauthBundle {
	t.Helper()
	p := oauthtest.New(t)
	st := store.OpenTest(t, dialect)
	key, err := secrets.GenerateKey()
	require.NoError(t, err)
	kr, err := secrets.NewKeyring(key)
	require.NoError(t, err)
	ob := &oauthBundle{p: p, logs: &enginetest.LockedBuffer{}, key: key}
	eng, err := engine.New(engine.Config{
		Store: st, Keyring: kr,
		Logger: testlog.Tee(slog.NewTextHandler(ob.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return time.Now().Add(time.Duration(ob.offset.Load())) },
		OAuth:  oauthOptions(p),
	})
	require.NoError(t, err)
	ob.Bundle = &enginetest.Bundle{Eng: eng, St: st, Ctx: t.Context()}
	return ob
}

// oauthOptions point an engine's OAuth at the fake.
func oauthOptions(p *oauthtest.Provider) engine.OAuthOptions {
	providers := map[string]engine.OAuthProvider{}
	for _, name := range []string{"google", "slack", "microsoft"} {
		providers[name] = engine.OAuthProvider{AuthURL: p.AuthURL(name), TokenURL: p.TokenURL(name)}
	}
	return engine.OAuthOptions{
		Providers: providers, APIs: p.APIs(), RedirectURL: redirectURL,
		// httptest listens on 127.0.0.1.
		AllowPrivateTargets: true,
	}
}

// engineWith is another engine over b's store and fake with the master keys of kr: another
// process, which may hold other keys.
func (b *oauthBundle) engineWith(t *testing.T, kr *secrets.Keyring) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{
		Store: b.St, Keyring: kr, OAuth: oauthOptions(b.p),
		Logger: testlog.Tee(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	return eng
}

// expireAt moves the stored expiry of org's connection of provider and account to at,
// tokens untouched.
func (b *oauthBundle) expireAt(t *testing.T, org, provider, account string, at time.Time) {
	t.Helper()
	c, err := b.St.FindOAuthConnection(b.Ctx, org, provider, account)
	require.NoError(t, err)
	c.ExpiresAt, c.UpdatedAt = &at, time.Time{}
	require.NoError(t, b.St.ReplaceOAuthConnection(b.Ctx, c, 0))
}

func forEachOAuthDialect(t *testing.T, fn func(t *testing.T, b *oauthBundle)) {
	t.Helper()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, oauthSetup(t, d))
		})
	}
}

// app configures org's app at provider (org config oauth:<provider>) and at the fake.
func (b *oauthBundle) app(t *testing.T, org, provider string) (clientID string) {
	t.Helper()
	clientID, secret := org+"-"+provider+"-client", "s3cret-"+org+"-"+provider+"-0123456789"
	b.p.AddClient(clientID, secret)
	b.appSecrets = append(b.appSecrets, secret)
	testlog.Secret(secret) // no log line of the suite may hold it
	raw, err := json.Marshal(engine.OAuthApp{ClientID: clientID, ClientSecret: secret})
	require.NoError(t, err)
	_, _, err = b.Eng.SetOrgConfig(b.Ctx, org, "oauth:"+provider, string(raw))
	require.NoError(t, err)
	return clientID
}

// connect runs the authorization flow for account: start, consent at the fake, callback.
func (b *oauthBundle) connect(t *testing.T, org, provider, account string) *svctype.OAuthConnection {
	t.Helper()
	auth, err := b.Eng.StartOAuth(b.Ctx, org, provider, account)
	require.NoError(t, err)
	u, err := url.Parse(auth.URL)
	require.NoError(t, err)
	code := b.p.Consent(u.Query().Get("client_id"), u.Query().Get("redirect_uri"))
	c, err := b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: auth.State, Code: code})
	require.NoError(t, err)
	return c
}

// tokens connects account from tokens the fake knows, expiring at expires (nil: never).
func (b *oauthBundle) tokens(t *testing.T, org, provider, account, clientID string, expires *time.Time) (access, refresh string) {
	t.Helper()
	access, refresh = fmt.Sprintf("at-given-%s-%s-%d", org, account, time.Now().UnixNano()), fmt.Sprintf("rt-given-%s-%s-%d", org, account, time.Now().UnixNano())
	b.p.AddTokens(clientID, access, refresh)
	_, created, err := b.Eng.CreateOAuthConnection(b.Ctx, org, engine.OAuthConnectionInput{
		Provider: provider, Account: account, AccessToken: access, RefreshToken: refresh, ExpiresAt: expires,
	})
	require.NoError(t, err)
	require.True(t, created)
	return access, refresh
}

// noLeaks fails when any token, code or client secret appears in the run's status, its
// evidence, its events, the logs or extra strings.
func (b *oauthBundle) noLeaks(t *testing.T, org, runID string, extra ...string) {
	t.Helper()
	var hay []string
	if runID != "" {
		doc, err := b.Eng.RunStatus(b.Ctx, org, runID)
		require.NoError(t, err)
		ev, err := b.Eng.Evidence(b.Ctx, org, runID)
		require.NoError(t, err)
		events, err := b.Eng.RunEvents(b.Ctx, org, runID, svctype.ListOptions{Limit: 500})
		require.NoError(t, err)
		for _, v := range []any{doc, ev, events} {
			raw, err := json.Marshal(v)
			require.NoError(t, err)
			hay = append(hay, string(raw))
		}
	}
	hay = append(hay, b.logs.String())
	hay = append(hay, extra...)
	for _, s := range append(b.p.Secrets(), b.appSecrets...) {
		for _, h := range hay {
			require.NotContains(t, h, s, "a secret leaked")
		}
	}
}

func TestOAuthAuthorizeCallbackFlow(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		clientID := b.app(t, "org-a", "google")
		auth, err := b.Eng.StartOAuth(b.Ctx, "org-a", "google", "sales@acme.example")
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(engine.OAuthStateTTL), auth.ExpiresAt, 5*time.Second)
		u, err := url.Parse(auth.URL)
		require.NoError(t, err)
		require.Equal(t, b.p.AuthURL("google"), u.Scheme+"://"+u.Host+u.Path)
		q := u.Query()
		require.Equal(t, clientID, q.Get("client_id"))
		require.Equal(t, redirectURL, q.Get("redirect_uri"))
		require.Equal(t, "code", q.Get("response_type"))
		require.Equal(t, auth.State, q.Get("state"))
		require.Equal(t, "offline", q.Get("access_type"))
		require.Contains(t, q.Get("scope"), "https://www.googleapis.com/auth/gmail.send")
		require.Empty(t, q.Get("client_secret"))
		require.Greater(t, len(auth.State), 43, "32 random bytes and the org")

		// Two flows never share a state.
		other, err := b.Eng.StartOAuth(b.Ctx, "org-a", "google", "sales@acme.example")
		require.NoError(t, err)
		require.NotEqual(t, auth.State, other.State)

		code := b.p.Consent(clientID, redirectURL)
		c, err := b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: auth.State, Code: code})
		require.NoError(t, err)
		require.Equal(t, "org-a", c.OrgID)
		require.Equal(t, "google", c.Provider)
		require.Equal(t, "sales@acme.example", c.Account)
		require.Equal(t, "oauth", c.Source)
		require.True(t, c.HasRefreshToken)
		require.Equal(t, []string{"scope.a", "scope.b"}, c.Scopes)
		require.NotNil(t, c.ExpiresAt)
		require.Equal(t, 1, b.p.Exchanges())

		// Single use: the same state again is refused, and nothing is exchanged.
		_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: auth.State, Code: b.p.Consent(clientID, redirectURL)})
		require.ErrorIs(t, err, engine.ErrOAuthState)
		require.Equal(t, 1, b.p.Exchanges())

		// A reconnection of the same account replaces its tokens under the same id.
		again := b.connect(t, "org-a", "google", "sales@acme.example")
		require.Equal(t, c.ID, again.ID)
		page, err := b.Eng.ListOAuthConnections(b.Ctx, "org-a", svctype.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Nil(t, page.Items[0].Sealed)

		// A code the provider refuses (used already) fails with the provider's error code,
		// never the code or the client secret.
		st3, err := b.Eng.StartOAuth(b.Ctx, "org-a", "google", "x")
		require.NoError(t, err)
		_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: st3.State, Code: code})
		require.ErrorIs(t, err, engine.ErrOAuthProvider)
		require.Contains(t, err.Error(), "invalid_grant")
		b.noLeaks(t, "", "", err.Error())

		// A state that is garbled, of another shape, or expired.
		for _, s := range []string{"", "nope", auth.State + "x", "b3JnLWE." + strings.Repeat("A", 43)} {
			_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: s, Code: "c"})
			require.ErrorIs(t, err, engine.ErrOAuthState, s)
		}
		late, err := b.Eng.StartOAuth(b.Ctx, "org-a", "google", "late")
		require.NoError(t, err)
		b.offset.Store(int64(engine.OAuthStateTTL + time.Second))
		_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: late.State, Code: b.p.Consent(clientID, redirectURL)})
		require.ErrorIs(t, err, engine.ErrOAuthState)
		b.offset.Store(0)

		// The person said no: the state is used up and the error says what the provider said.
		denied, err := b.Eng.StartOAuth(b.Ctx, "org-a", "google", "denied")
		require.NoError(t, err)
		_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: denied.State, Error: "access_denied"})
		require.ErrorIs(t, err, engine.ErrOAuthDenied)
		require.Contains(t, err.Error(), "access_denied")
		_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: denied.State, Code: "c"})
		require.ErrorIs(t, err, engine.ErrOAuthState)
	})
}

func TestOAuthAppCredentials(t *testing.T) {
	t.Parallel()
	b := oauthSetup(t, "sqlite")
	// No app: nothing starts, and the error says where to put one.
	_, err := b.Eng.StartOAuth(b.Ctx, "org-a", "slack", "eng")
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.Contains(t, err.Error(), "oauth:slack")
	_, err = b.Eng.StartOAuth(b.Ctx, "org-a", "myspace", "eng")
	require.ErrorIs(t, err, engine.ErrNotFound)

	// A malformed app: refused without quoting the value.
	_, _, err = b.Eng.SetOrgConfig(b.Ctx, "org-a", "oauth:slack", `{"client_id": "id", "client_secret": "", "x-leak": "hunter2-secret"}`)
	require.NoError(t, err)
	_, err = b.Eng.StartOAuth(b.Ctx, "org-a", "slack", "eng")
	require.ErrorIs(t, err, engine.ErrOAuthApp)
	require.NotContains(t, err.Error(), "hunter2")

	// Wrong client secret: the token endpoint refuses, the error has its code only.
	b.p.AddClient("slack-id", "the-right-secret")
	_, _, err = b.Eng.SetOrgConfig(b.Ctx, "org-a", "oauth:slack", `{"client_id": "slack-id", "client_secret": "the-wrong-secret"}`)
	require.NoError(t, err)
	auth, err := b.Eng.StartOAuth(b.Ctx, "org-a", "slack", "eng")
	require.NoError(t, err)
	u, _ := url.Parse(auth.URL)
	require.Equal(t, "chat:write", u.Query().Get("scope"))
	_, err = b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: auth.State, Code: b.p.Consent("slack-id", redirectURL)})
	require.ErrorIs(t, err, engine.ErrOAuthProvider)
	require.Contains(t, err.Error(), "invalid_client")
	require.NotContains(t, err.Error(), "the-wrong-secret")
	require.NotContains(t, err.Error(), "code-")

	// An app may name its own callback address and scopes.
	_, _, err = b.Eng.SetOrgConfig(b.Ctx, "org-a", "oauth:slack",
		`{"client_id": "slack-id", "client_secret": "the-right-secret", "redirect_url": "https://acme.example/cb", "scopes": ["chat:write", "users:read"]}`)
	require.NoError(t, err)
	auth, err = b.Eng.StartOAuth(b.Ctx, "org-a", "slack", "eng")
	require.NoError(t, err)
	u, _ = url.Parse(auth.URL)
	require.Equal(t, "https://acme.example/cb", u.Query().Get("redirect_uri"))
	require.Equal(t, "chat:write,users:read", u.Query().Get("scope"))
	c, err := b.Eng.FinishOAuth(b.Ctx, engine.OAuthCallback{State: auth.State, Code: b.p.Consent("slack-id", "https://acme.example/cb")})
	require.NoError(t, err)
	require.Equal(t, []string{"chat:write", "channels:read"}, c.Scopes)
}

// Each tool sends the real API's request shape with the connection's bearer token, and its
// output is the provider's answer.
func TestOAuthToolsRequestShapes(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		google, slack, ms := b.app(t, "org-a", "google"), b.app(t, "org-a", "slack"), b.app(t, "org-a", "microsoft")
		gAccess, _ := b.tokens(t, "org-a", "google", "sales", google, nil)
		sAccess, _ := b.tokens(t, "org-a", "slack", "workspace", slack, nil)
		mAccess, _ := b.tokens(t, "org-a", "microsoft", "ops", ms, nil)

		w := b.Workflow(t, "org-a", "notify", `{"actions": [
			{"type": "gmail_send", "outputKey": "mail", "properties": {"to": "@input.email", "subject": "Grüße {{input.name}}", "body": "Hello {{input.name}},\nyour order shipped."}},
			{"type": "google_sheets_append_row", "outputKey": "row", "properties": {"spreadsheet_id": "1AbC-d_E", "range": "Orders!A1", "values": ["@input.name", 42, true]}},
			{"type": "slack_post_message", "outputKey": "slack", "properties": {"channel": "C0123", "text": "Shipped to {{input.name}}"}},
			{"type": "microsoft_teams_post_message", "outputKey": "teams", "properties": {"team_id": "team-1", "channel_id": "19:abc@thread.tacv2", "text": "Shipped"}}
		]}`)
		require.Empty(t, w.Warnings, "the tools are step types the engine knows")
		doc := b.Execute(t, "org-a", w.ID, `{"email": "Ada <ada@example.com>", "name": "Ada"}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		run := doc.ID

		reqs := b.p.Requests()
		require.Len(t, reqs, 4)

		gm := reqs[0]
		require.Equal(t, "/gmail/v1/users/me/messages/send", gm.Path)
		require.Equal(t, gAccess, gm.Token)
		require.Equal(t, run+"/0", gm.IdempotencyKey)
		raw, err := base64.RawURLEncoding.DecodeString(gm.Body["raw"].(string))
		require.NoError(t, err)
		msg := string(raw)
		require.Contains(t, msg, "To: \"Ada\" <ada@example.com>\r\n")
		require.Contains(t, msg, "Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe_Ada?=\r\n")
		require.Contains(t, msg, "Content-Type: text/plain; charset=\"UTF-8\"\r\n")
		require.Contains(t, msg, "\r\n\r\nHello Ada,\r\nyour order shipped.")
		require.Equal(t, map[string]any{"id": "msg-1", "threadId": "thread-1", "labelIds": []any{"SENT"}}, doc.Context["mail"])

		sh := reqs[1]
		require.Equal(t, "/sheets/v4/spreadsheets/1AbC-d_E/values/Orders!A1:append", sh.Path)
		require.Equal(t, "USER_ENTERED", sh.Query.Get("valueInputOption"))
		require.Equal(t, gAccess, sh.Token)
		require.Equal(t, []any{[]any{"Ada", 42.0, true}}, sh.Body["values"])
		require.Equal(t, "ROWS", sh.Body["majorDimension"])
		require.Equal(t, "1AbC-d_E", doc.Context["row"].(map[string]any)["spreadsheetId"])

		sl := reqs[2]
		require.Equal(t, "/slack/api/chat.postMessage", sl.Path)
		require.Equal(t, sAccess, sl.Token)
		require.Equal(t, map[string]any{"channel": "C0123", "text": "Shipped to Ada"}, sl.Body)
		require.Equal(t, true, doc.Context["slack"].(map[string]any)["ok"])

		tm := reqs[3]
		require.Equal(t, "/graph/v1.0/teams/team-1/channels/19:abc@thread.tacv2/messages", tm.Path)
		require.Equal(t, mAccess, tm.Token)
		require.Equal(t, map[string]any{"body": map[string]any{"contentType": "text", "content": "Shipped"}}, tm.Body)
		require.Equal(t, "1700000000000", doc.Context["teams"].(map[string]any)["id"])

		b.noLeaks(t, "org-a", run)
	})
}

func TestOAuthToolFailures(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		slack := b.app(t, "org-a", "slack")
		b.tokens(t, "org-a", "slack", "workspace", slack, nil)

		// Slack answers 200 with ok:false: a failure.
		w := b.Workflow(t, "org-a", "missing-channel", `{"actions": [{"type": "slack_post_message", "properties": {"channel": "C_MISSING", "text": "hi"}}]}`)
		doc := b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "channel_not_found")
		b.noLeaks(t, "org-a", doc.ID)

		// A token the provider does not know: 401, whose body echoes it; the failure says
		// to reconnect and carries no token.
		revoked := "xoxb-revoked-token-0123456789"
		_, _, err := b.Eng.CreateOAuthConnection(b.Ctx, "org-a", engine.OAuthConnectionInput{Provider: "microsoft", Account: "ops", AccessToken: revoked})
		require.NoError(t, err)
		w = b.Workflow(t, "org-a", "revoked", `{"actions": [{"type": "microsoft_teams_post_message", "properties": {"team_id": "t", "channel_id": "c", "text": "x"}}]}`)
		doc = b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "status 401")
		require.Contains(t, doc.Reason, "reconnect")
		require.Equal(t, revoked, b.p.Requests()[len(b.p.Requests())-1].Token)
		b.noLeaks(t, "org-a", doc.ID, revoked)

		// Properties checked before any call.
		w = b.Workflow(t, "org-a", "bad-to", `{"actions": [{"type": "gmail_send", "properties": {"to": "not an address", "subject": "s", "body": "b"}}]}`)
		doc = b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, `property "to"`)

		// Required properties are checked when the workflow is created.
		_, err = b.Eng.CreateWorkflow(b.Ctx, "org-a", engine.WorkflowInput{Name: "incomplete", Definition: json.RawMessage(
			`{"actions": [{"type": "gmail_send", "properties": {"to": "a@example.com", "__oauth_account__": 7}}]}`)})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Contains(t, ve.Error(), "/definition/actions/0/properties/subject")
		require.Contains(t, ve.Error(), "/definition/actions/0/properties/__oauth_account__")
	})
}

// An access token that has expired is refreshed once, the new one is used and persisted
// (with the rotated refresh token), and a fresh one is used as it is.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		clientID := b.app(t, "org-a", "google")
		past := time.Now().Add(-time.Hour)
		oldAccess, _ := b.tokens(t, "org-a", "google", "sales", clientID, &past)
		w := b.Workflow(t, "org-a", "mail", `{"actions": [{"type": "gmail_send", "properties": {"to": "a@example.com", "subject": "s", "body": "b"}}]}`)

		doc := b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, 1, b.p.Refreshes())
		used := b.p.Requests()[0].Token
		require.NotEqual(t, oldAccess, used)
		require.True(t, b.p.ValidAccess(used))

		page, err := b.Eng.ListOAuthConnections(b.Ctx, "org-a", svctype.ListOptions{})
		require.NoError(t, err)
		c := page.Items[0]
		require.NotNil(t, c.ExpiresAt)
		require.WithinDuration(t, time.Now().Add(time.Hour), *c.ExpiresAt, time.Minute, "the new expiry is stored")

		// Fresh now: no refresh, the same token.
		doc = b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, 1, b.p.Refreshes())
		require.Equal(t, used, b.p.Requests()[1].Token)

		// Once the token is due again, the refresh works only with the rotated refresh
		// token: this proves the new one was persisted.
		b.expireAt(t, "org-a", "google", "sales", time.Now().Add(-time.Second))
		doc = b.Execute(t, "org-a", w.ID, `{}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, 2, b.p.Refreshes())
		require.NotEqual(t, used, b.p.Requests()[2].Token)

		// Within the margin before expiry counts as due.
		b.expireAt(t, "org-a", "google", "sales", time.Now().Add(engine.OAuthRefreshMargin/2))
		_, _, err = b.Eng.OAuthAccessToken(b.Ctx, "org-a", "google", "sales")
		require.NoError(t, err)
		require.Equal(t, 3, b.p.Refreshes())
		b.noLeaks(t, "org-a", doc.ID)

		// No refresh token and expired: the step fails saying to reconnect.
		_, _, err = b.Eng.CreateOAuthConnection(b.Ctx, "org-a", engine.OAuthConnectionInput{Provider: "google", Account: "norefresh", AccessToken: "at-short-lived-0123456789", ExpiresAt: &past})
		require.NoError(t, err)
		_, _, err = b.Eng.OAuthAccessToken(b.Ctx, "org-a", "google", "norefresh")
		require.ErrorContains(t, err, "connect the account again")
	})
}

// Concurrent users of one expired connection refresh it once and all get the new token.
func TestOAuthConcurrentRefreshOnce(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		b.p.RefreshDelay = 100 * time.Millisecond
		clientID := b.app(t, "org-a", "slack")
		past := time.Now().Add(-time.Minute)
		b.tokens(t, "org-a", "slack", "workspace", clientID, &past)

		const n = 8
		tokens := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tokens[i], _, errs[i] = b.Eng.OAuthAccessToken(b.Ctx, "org-a", "slack", "")
			}()
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			require.Equal(t, tokens[0], tokens[i])
		}
		require.Equal(t, 1, b.p.Refreshes())
		require.Equal(t, 1, b.p.RefreshRequests(), "one request to the provider, not one per caller")
		require.True(t, b.p.ValidAccess(tokens[0]))

		// Steps of several runs at once, on an expired connection again.
		b.expireAt(t, "org-a", "slack", "workspace", time.Now().Add(-time.Second))
		w := b.Workflow(t, "org-a", "post", `{"actions": [{"type": "slack_post_message", "properties": {"channel": "C1", "text": "hi"}}]}`)
		var runs []string
		for range 4 {
			r, err := b.Eng.Execute(b.Ctx, "org-a", w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
			require.NoError(t, err)
			runs = append(runs, r.ID)
		}
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = b.Eng.Work(b.Ctx)
			}()
		}
		wg.Wait()
		require.Eventually(t, func() bool {
			_, _ = b.Eng.Work(b.Ctx)
			for _, id := range runs {
				doc, err := b.Eng.RunStatus(b.Ctx, "org-a", id)
				require.NoError(t, err)
				if doc.Status != svctype.RunCompleted {
					require.Equal(t, svctype.RunRunning, doc.Status, doc.Reason)
					return false
				}
			}
			return true
		}, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, 2, b.p.Refreshes(), "one refresh for all four steps")
		require.Equal(t, 2, b.p.RefreshRequests(), "one refresh request for all four steps")
	})
}

// A caller that gives up while its refresh is at the provider gets its context's error at
// once; the refresh goes on and is stored, so the refresh token the provider has rotated is
// not lost and the next caller uses the new access token without asking again.
func TestOAuthRefreshOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		arrived, release := make(chan struct{}), make(chan struct{})
		var first sync.Once // only the first refresh is held: a second one must not hang the test
		b.p.BeforeRefresh = func() {
			first.Do(func() {
				arrived <- struct{}{}
				<-release
			})
		}
		clientID := b.app(t, "org-a", "google")
		past := time.Now().Add(-time.Minute)
		b.tokens(t, "org-a", "google", "sales", clientID, &past)

		ctx, cancel := context.WithCancel(b.Ctx)
		gaveUp := make(chan error, 1)
		go func() {
			_, _, err := b.Eng.OAuthAccessToken(ctx, "org-a", "google", "sales")
			gaveUp <- err
		}()
		<-arrived // the refresh is at the provider
		cancel()
		require.ErrorIs(t, <-gaveUp, context.Canceled)
		close(release)

		// Whether it finds the refresh still under way (and waits for it) or stored, the next
		// caller gets the refreshed token and no second request is made.
		token, used, err := b.Eng.OAuthAccessToken(b.Ctx, "org-a", "google", "sales")
		require.NoError(t, err)
		require.Equal(t, "sales", used)
		require.True(t, b.p.ValidAccess(token))
		require.Equal(t, 1, b.p.RefreshRequests())
		require.Equal(t, 1, b.p.Refreshes())
		c, err := b.St.FindOAuthConnection(b.Ctx, "org-a", "google", "sales")
		require.NoError(t, err)
		require.True(t, c.ExpiresAt.After(time.Now()), "the refreshed token's expiry was stored")
	})
}

func TestOAuthAccountSelection(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		clientID := b.app(t, "org-a", "google")
		step := func(account string) string {
			props := `"to": "a@example.com", "subject": "s", "body": "b"`
			if account != "" {
				props += `, "__oauth_account__": "` + account + `"`
			}
			return `{"actions": [{"type": "gmail_send", "properties": {` + props + `}}]}`
		}
		run := func(name, account string) *engine.RunStatusDoc {
			w := b.Workflow(t, "org-a", name, step(account))
			return b.Execute(t, "org-a", w.ID, `{}`)
		}

		doc := run("none", "")
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, "no google account is connected to this organization: connect one")

		sales, _ := b.tokens(t, "org-a", "google", "sales", clientID, nil)
		doc = run("one", "")
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, sales, b.p.Requests()[0].Token, "the only connection is used")

		support, _ := b.tokens(t, "org-a", "google", "support", clientID, nil)
		doc = run("two-unselected", "")
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, `several google accounts are connected to this organization ("sales", "support")`)
		require.Contains(t, doc.Reason, "__oauth_account__")

		doc = run("two-selected", "support")
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, support, b.p.Requests()[1].Token)

		doc = run("unknown", "billing")
		require.Equal(t, svctype.RunFailed, doc.Status)
		require.Contains(t, doc.Reason, `no google account "billing" is connected to this organization (connected: "sales", "support")`)
		require.Len(t, b.p.Requests(), 2)
		b.noLeaks(t, "org-a", doc.ID)
	})
}

// Another organization's connection is never used, listed or deleted.
func TestOAuthConnectionsAreScopedToTheOrg(t *testing.T) {
	t.Parallel()
	forEachOAuthDialect(t, func(t *testing.T, b *oauthBundle) {
		clientID := b.app(t, "org-a", "google")
		b.tokens(t, "org-a", "google", "sales", clientID, nil)
		a := b.connect(t, "org-a", "google", "support")

		for _, account := range []string{"sales", ""} {
			props := `"to": "a@example.com", "subject": "s", "body": "b"`
			if account != "" {
				props += `, "__oauth_account__": "` + account + `"`
			}
			w := b.Workflow(t, "org-b", "steal-"+account, `{"actions": [{"type": "gmail_send", "properties": {`+props+`}}]}`)
			doc := b.Execute(t, "org-b", w.ID, `{}`)
			require.Equal(t, svctype.RunFailed, doc.Status)
			require.Contains(t, doc.Reason, "connected to this organization")
			require.NotContains(t, doc.Reason, "support", "org A's labels are not org B's business")
			b.noLeaks(t, "org-b", doc.ID)
		}
		require.Empty(t, b.p.Requests(), "nothing was sent with org A's tokens")

		page, err := b.Eng.ListOAuthConnections(b.Ctx, "org-b", svctype.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, page.Items)
		require.ErrorIs(t, b.Eng.DeleteOAuthConnection(b.Ctx, "org-b", a.ID), engine.ErrNotFound)
		_, _, err = b.Eng.OAuthAccessToken(b.Ctx, "org-b", "google", "support")
		require.Error(t, err)

		// A sealed value moved to another organization's row does not open.
		stolen, err := b.St.GetOAuthConnection(b.Ctx, "org-a", a.ID)
		require.NoError(t, err)
		stolen.OrgID = "org-b"
		require.NoError(t, b.St.InsertOAuthConnection(b.Ctx, stolen))
		_, _, err = b.Eng.OAuthAccessToken(b.Ctx, "org-b", "google", "support")
		require.ErrorContains(t, err, "do not open")

		require.NoError(t, b.Eng.DeleteOAuthConnection(b.Ctx, "org-a", a.ID))
		require.ErrorIs(t, b.Eng.DeleteOAuthConnection(b.Ctx, "org-a", a.ID), engine.ErrNotFound)
	})
}

func TestOAuthToolNamesAreReserved(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	for _, name := range oauthtools.Names {
		_, err := b.Eng.CreateAction(b.Ctx, "org-a", svctype.Action{Name: name, Kind: svctype.ActionLLM, Template: "x"})
		var ve *engine.ValidationError
		require.ErrorAs(t, err, &ve, name)
		require.Contains(t, ve.Error(), "/action_name")
	}
	// Even in an engine whose Environment is empty.
	eng, err := engine.New(engine.Config{Store: b.St, Env: engine.NewEmptyEnvironment()})
	require.NoError(t, err)
	_, err = eng.CreateAction(b.Ctx, "org-a", svctype.Action{Name: "gmail_send", Kind: svctype.ActionLLM, Template: "x"})
	require.Error(t, err)
}

func TestCreateOAuthConnectionValidation(t *testing.T) {
	t.Parallel()
	b := oauthSetup(t, "sqlite")
	_, _, err := b.Eng.CreateOAuthConnection(b.Ctx, "org-a", engine.OAuthConnectionInput{
		Provider: "myspace", Account: "has space", AccessToken: "tok en-secret-value", Scopes: []string{""},
	})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	var ptrs []string
	for _, p := range ve.Problems {
		ptrs = append(ptrs, p.Pointer)
	}
	require.Equal(t, []string{"/provider", "/account", "/access_token", "/scopes/0"}, ptrs)
	require.NotContains(t, err.Error(), "en-secret-value")

	c, created, err := b.Eng.CreateOAuthConnection(b.Ctx, "org-a", engine.OAuthConnectionInput{Provider: "slack", Account: "eng", AccessToken: "xoxb-1"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "tokens", c.Source)
	require.False(t, c.HasRefreshToken)
	c2, created, err := b.Eng.CreateOAuthConnection(b.Ctx, "org-a", engine.OAuthConnectionInput{Provider: "slack", Account: "eng", AccessToken: "xoxb-2", RefreshToken: "r"})
	require.NoError(t, err)
	require.False(t, created, "replaced")
	require.Equal(t, c.ID, c2.ID)
	tok, used, err := b.Eng.OAuthAccessToken(b.Ctx, "org-a", "slack", "eng")
	require.NoError(t, err)
	require.Equal(t, "xoxb-2", tok)
	require.Equal(t, "eng", used)
}
