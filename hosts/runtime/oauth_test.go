package runtime_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/oauthtools/oauthtest"
)

const testRedirectURL = "https://svc.example.com/oauth/callback"

// testOAuth points the engine's providers and tools at the fake.
func testOAuth(p *oauthtest.Provider) engine.OAuthOptions {
	providers := map[string]engine.OAuthProvider{}
	for _, name := range []string{"google", "slack", "microsoft"} {
		providers[name] = engine.OAuthProvider{AuthURL: p.AuthURL(name), TokenURL: p.TokenURL(name)}
	}
	return engine.OAuthOptions{Providers: providers, APIs: p.APIs(), RedirectURL: testRedirectURL, AllowPrivateTargets: true}
}

type (
	authorizeDoc struct {
		AuthorizeURL string    `json:"authorize_url"`
		State        string    `json:"state"`
		ExpiresAt    time.Time `json:"expires_at"`
	}
	connectionDoc struct {
		ID              string   `json:"id"`
		Provider        string   `json:"provider"`
		Account         string   `json:"account"`
		Scopes          []string `json:"scopes"`
		ExpiresAt       *string  `json:"expires_at"`
		HasRefreshToken bool     `json:"has_refresh_token"`
		Source          string   `json:"source"`
	}
)

// oauthApp stores org's app for provider (org config oauth:<provider>) and registers it at
// the fake; it returns the client id and secret.
func (b *bundle) oauthApp(t testing.TB, org, provider string) (string, string) {
	t.Helper()
	id, secret := org+"-"+provider+"-client", "app-secret-"+org+"-"+provider+"-9f3e"
	b.oauth.AddClient(id, secret)
	raw, err := json.Marshal(map[string]string{"client_id": id, "client_secret": secret})
	require.NoError(t, err)
	ok[map[string]any](t, b.do(t, http.MethodPost, "/org-config", org, map[string]string{"key": "oauth:" + provider, "value": string(raw)}), http.StatusCreated)
	return id, secret
}

// startOAuth calls the authorize route and consents at the fake: the state and code the
// provider's redirect would bring.
func (b *bundle) startOAuth(t testing.TB, org, provider, account string) (state, code string) {
	t.Helper()
	a := ok[authorizeDoc](t, b.do(t, http.MethodGet, "/oauth/"+provider+"/authorize?account="+url.QueryEscape(account), org, nil), http.StatusOK)
	u, err := url.Parse(a.AuthorizeURL)
	require.NoError(t, err)
	return a.State, b.oauth.Consent(u.Query().Get("client_id"), u.Query().Get("redirect_uri"))
}

func callbackPath(state, code string) string {
	return "/oauth/callback?state=" + url.QueryEscape(state) + "&code=" + url.QueryEscape(code)
}

// noTokens fails when an answer or the log holds any token, code or secret.
func (b *bundle) noTokens(t testing.TB, answers []string, extra ...string) {
	t.Helper()
	for _, s := range append(b.oauth.Secrets(), extra...) {
		for _, a := range append(answers, b.logs.String()) {
			require.NotContains(t, a, s)
		}
	}
}

func TestOAuthRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clientID, secret := b.oauthApp(t, orgA, "google")
	var answers []string

	// Authorize: JSON with the provider's URL and the state.
	rec := b.do(t, http.MethodGet, "/oauth/google/authorize?account=sales@acme.example", orgA, nil)
	answers = append(answers, rec.Body.String())
	a := ok[authorizeDoc](t, rec, http.StatusOK)
	u, err := url.Parse(a.AuthorizeURL)
	require.NoError(t, err)
	require.Equal(t, b.oauth.AuthURL("google"), u.Scheme+"://"+u.Host+u.Path)
	require.Equal(t, clientID, u.Query().Get("client_id"))
	require.Equal(t, a.State, u.Query().Get("state"))
	require.Equal(t, testRedirectURL, u.Query().Get("redirect_uri"))
	require.WithinDuration(t, time.Now().Add(10*time.Minute), a.ExpiresAt, 10*time.Second)

	// The callback has no X-Org-Id: the state names the organization.
	code := b.oauth.Consent(clientID, testRedirectURL)
	rec = b.do(t, http.MethodGet, callbackPath(a.State, code), "", nil)
	answers = append(answers, rec.Body.String())
	c := ok[connectionDoc](t, rec, http.StatusOK)
	require.Equal(t, "google", c.Provider)
	require.Equal(t, "sales@acme.example", c.Account)
	require.Equal(t, "oauth", c.Source)
	require.True(t, c.HasRefreshToken)
	require.NotNil(t, c.ExpiresAt)
	require.NotContains(t, rec.Body.String(), "access_token", "no token field in the answer")

	// Single use.
	rec = b.do(t, http.MethodGet, callbackPath(a.State, b.oauth.Consent(clientID, testRedirectURL)), "", nil)
	answers = append(answers, rec.Body.String())
	problem(t, rec, http.StatusBadRequest, "invalid_oauth_state")
	problem(t, b.do(t, http.MethodGet, "/oauth/callback", "", nil), http.StatusBadRequest, "invalid_oauth_state")

	// Declined at the provider.
	state, _ := b.startOAuth(t, orgA, "google", "declined")
	problem(t, b.do(t, http.MethodGet, "/oauth/callback?state="+url.QueryEscape(state)+"&error=access_denied", "", nil), http.StatusBadRequest, "oauth_denied")

	// A code the provider refuses: 502 with the provider's error code, nothing secret.
	state, _ = b.startOAuth(t, orgA, "google", "refused")
	rec = b.do(t, http.MethodGet, callbackPath(state, code), "", nil)
	answers = append(answers, rec.Body.String())
	p := problem(t, rec, http.StatusBadGateway, "oauth_provider_error")
	require.Contains(t, p.Detail, "invalid_grant")

	// Tokens given directly: 201, then 200 when replaced; never echoed.
	body := map[string]any{"provider": "slack", "account": "eng", "access_token": "xoxb-direct-token-5150", "scopes": []string{"chat:write"}}
	rec = b.do(t, http.MethodPost, "/oauth/connections", orgA, body)
	answers = append(answers, rec.Body.String())
	sc := ok[connectionDoc](t, rec, http.StatusCreated)
	require.Equal(t, "tokens", sc.Source)
	require.False(t, sc.HasRefreshToken)
	require.Nil(t, sc.ExpiresAt)
	body["refresh_token"], body["expires_at"] = "xoxe-refresh-5150", time.Now().Add(time.Hour).Format(time.RFC3339)
	rec = b.do(t, http.MethodPost, "/oauth/connections", orgA, body)
	answers = append(answers, rec.Body.String())
	sc2 := ok[connectionDoc](t, rec, http.StatusOK)
	require.Equal(t, sc.ID, sc2.ID)
	require.True(t, sc2.HasRefreshToken)

	// Invalid: 422 at the pointers, the token never quoted (even by the schema check).
	rec = b.do(t, http.MethodPost, "/oauth/connections", orgA, map[string]any{"provider": "myspace", "account": "a b", "access_token": "has whitespace-secret-77"})
	answers = append(answers, rec.Body.String())
	p = problem(t, rec, http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/provider", "/account", "/access_token"}, pointers(p))
	rec = b.do(t, http.MethodPost, "/oauth/connections", orgA, map[string]any{"provider": "slack", "account": "x", "access_token": 12345678901})
	answers = append(answers, rec.Body.String())
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	require.NotContains(t, rec.Body.String(), "12345678901")

	// Listing: by provider and account, no tokens.
	rec = b.do(t, http.MethodGet, "/oauth/connections", orgA, nil)
	answers = append(answers, rec.Body.String())
	l := ok[list[connectionDoc]](t, rec, http.StatusOK)
	require.Len(t, l.Items, 2)
	require.Equal(t, []string{"google", "slack"}, []string{l.Items[0].Provider, l.Items[1].Provider})
	require.NotContains(t, rec.Body.String(), "access_token")

	// Delete: 204, then 404.
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/oauth/connections/"+c.ID, orgA, nil).Code)
	problem(t, b.do(t, http.MethodDelete, "/oauth/connections/"+c.ID, orgA, nil), http.StatusNotFound, "not_found")

	// Unknown provider, no app, a missing account.
	problem(t, b.do(t, http.MethodGet, "/oauth/myspace/authorize?account=x", orgA, nil), http.StatusNotFound, "not_found")
	p = problem(t, b.do(t, http.MethodGet, "/oauth/microsoft/authorize?account=x", orgA, nil), http.StatusNotFound, "not_found")
	require.Contains(t, p.Detail, "oauth:microsoft")
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodGet, "/oauth/google/authorize", orgA, nil).Code)
	problem(t, b.do(t, http.MethodGet, "/oauth/google/authorize?account=has%20space", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
	problem(t, b.do(t, http.MethodGet, "/oauth/google/authorize?account=x", "", nil), http.StatusUnauthorized, "missing_org")

	b.noTokens(t, answers, secret, "xoxb-direct-token-5150", "xoxe-refresh-5150", "whitespace-secret-77")
}

// A workflow step through the API: the tool runs with the organization's connection, and
// neither the run's status, its evidence nor its events hold a token.
func TestOAuthToolThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, secret := b.oauthApp(t, orgA, "slack")
	state, code := b.startOAuth(t, orgA, "slack", "workspace")
	ok[connectionDoc](t, b.do(t, http.MethodGet, callbackPath(state, code), "", nil), http.StatusOK)

	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("post", `{"actions": [
		{"type": "slack_post_message", "outputKey": "posted", "properties": {"channel": "C1", "text": "Hi {{input.name}}", "__oauth_account__": "workspace"}}]}`)), http.StatusCreated)
	require.Empty(t, w.Warnings)
	run := b.execute(t, orgA, w.ID, map[string]any{"name": "Ada"})
	b.work(t)
	var answers []string
	for _, path := range []string{"/runs/" + run.ID + "/status", "/runs/" + run.ID + "/evidence", "/runs/" + run.ID + "/events", "/oauth/connections"} {
		rec := b.do(t, http.MethodGet, path, orgA, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		answers = append(answers, rec.Body.String())
	}
	require.Contains(t, answers[0], `"status":"completed"`)
	require.Contains(t, answers[0], `"ts":"1700000000.000100"`)
	reqs := b.oauth.Requests()
	require.Len(t, reqs, 1)
	require.True(t, strings.HasPrefix(reqs[0].Token, "at-slack-"))

	// Org B naming org A's account: the step fails, nothing is sent.
	wb := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgB, workflowBody("post", `{"actions": [
		{"type": "slack_post_message", "properties": {"channel": "C1", "text": "x", "__oauth_account__": "workspace"}}]}`)), http.StatusCreated)
	runB := b.execute(t, orgB, wb.ID, nil)
	b.work(t)
	rec := b.do(t, http.MethodGet, "/runs/"+runB.ID+"/status", orgB, nil)
	require.Contains(t, rec.Body.String(), `"status":"failed"`)
	require.Contains(t, rec.Body.String(), `no slack account \"workspace\" is connected to this organization`)
	require.Len(t, b.oauth.Requests(), 1)
	answers = append(answers, rec.Body.String())

	// An action may not take a tool's name.
	p := problem(t, b.do(t, http.MethodPost, "/actions", orgA, map[string]any{"action_name": "slack_post_message", "kind": "llm", "template": "x"}),
		http.StatusUnprocessableEntity, "validation_failed")
	require.Equal(t, []string{"/action_name"}, pointers(p))

	b.noTokens(t, answers, secret)
}
