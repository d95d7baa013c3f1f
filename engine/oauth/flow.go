package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OAuthAuthorization is where to send a person to connect an account.
type OAuthAuthorization struct {
	// URL is the provider's authorization page, state included.
	URL string `json:"authorize_url"`
	// State names the flow; the callback must bring it back within OAuthStateTTL.
	State     string    `json:"state"`
	ExpiresAt time.Time `json:"expires_at"`
}

// StartOAuth begins connecting account at provider for the organization: it records a new
// single-use state (32 random bytes, stored as its SHA-256 only) and returns the provider's
// authorization URL. The organization's oauth:<provider> app must be configured.
func (e *Connections) StartOAuth(ctx context.Context, orgID, provider, account string) (*OAuthAuthorization, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	p, err := e.oauthProvider(provider)
	if err != nil {
		return nil, err
	}
	if pr := checkOAuthAccount("/account", account); pr != nil {
		return nil, &core.ValidationError{Problems: []core.Problem{*pr}}
	}
	app, err := e.oauthApp(ctx, orgID, provider)
	if err != nil {
		return nil, err
	}
	redirect := app.RedirectURL
	if redirect == "" {
		redirect = e.redirectURL
	}
	if redirect == "" {
		return nil, fmt.Errorf("%w: no callback address: set redirect_url in org config %q, or the deployment's (--oauth-redirect-url)", ErrOAuthApp, OAuthAppKeyPrefix+provider)
	}
	state, hash, err := newOAuthState(orgID)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC()
	st := &svctype.OAuthState{OrgID: orgID, Hash: hash, Provider: provider, Account: account, RedirectURL: redirect, ExpiresAt: now.Add(OAuthStateTTL), CreatedAt: now}
	if err := e.store.CreateOAuthState(ctx, st); err != nil {
		return nil, err
	}
	scopes := app.Scopes
	if scopes == nil {
		scopes = p.Scopes
	}
	sep := p.ScopeSeparator
	if sep == "" {
		sep = " "
	}
	opts := []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("scope", strings.Join(scopes, sep))}
	for _, k := range slices.Sorted(maps.Keys(p.AuthParams)) {
		opts = append(opts, oauth2.SetAuthURLParam(k, p.AuthParams[k]))
	}
	u := e.oauthConfig(provider, p, app, redirect).AuthCodeURL(state, opts...)
	return &OAuthAuthorization{URL: u, State: state, ExpiresAt: st.ExpiresAt}, nil
}

// A state is base64url(org id) "." base64url(32 random bytes): the organization is named in
// it, so the callback (which has no X-Org-Id) finds the flow by organization and hash.
func newOAuthState(orgID string) (state, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("oauth state: %w", err)
	}
	state = base64.RawURLEncoding.EncodeToString([]byte(orgID)) + "." + base64.RawURLEncoding.EncodeToString(b)
	return state, stateHash(state), nil
}

func stateHash(state string) string {
	h := sha256.Sum256([]byte("svcflow oauth state\x00" + state))
	return hex.EncodeToString(h[:])
}

func stateOrg(state string) (string, bool) {
	org, rest, ok := strings.Cut(state, ".")
	if !ok || len(state) > 512 || len(rest) != 43 {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(org)
	if err != nil || !core.ValidOrgID(string(b)) {
		return "", false
	}
	return string(b), true
}

// OAuthCallback is what the provider's redirect brings back.
type OAuthCallback struct {
	State string
	Code  string
	// Error and ErrorDescription are the provider's when the person did not grant access.
	Error            string
	ErrorDescription string
}

// FinishOAuth completes a flow from the provider's redirect: it takes the state (single
// use), exchanges the code at the provider's token endpoint with the organization's app
// credentials, and stores the connection (replacing the tokens of an account connected
// before). The connection's OrgID is the organization the state named.
func (e *Connections) FinishOAuth(ctx context.Context, cb OAuthCallback) (*svctype.OAuthConnection, error) {
	orgID, ok := stateOrg(cb.State)
	if !ok {
		return nil, ErrOAuthState
	}
	st, err := e.store.TakeOAuthState(ctx, orgID, stateHash(cb.State), e.now())
	if errors.Is(err, core.ErrNotFound) {
		return nil, ErrOAuthState
	}
	if err != nil {
		return nil, err
	}
	if cb.Error != "" {
		return nil, fmt.Errorf("%w: the provider said %q", ErrOAuthDenied, clip(cb.Error+" "+cb.ErrorDescription, 200))
	}
	if cb.Code == "" || len(cb.Code) > MaxOAuthTokenLen {
		return nil, fmt.Errorf("%w: the callback brought no code", ErrOAuthDenied)
	}
	p, err := e.oauthProvider(st.Provider)
	if err != nil {
		return nil, err
	}
	app, err := e.oauthApp(ctx, orgID, st.Provider)
	if err != nil {
		return nil, err
	}
	tok, err := e.oauthConfig(st.Provider, p, app, st.RedirectURL).Exchange(e.oauthHTTP(ctx), cb.Code)
	if err != nil {
		return nil, tokenError(st.Provider, "exchanging the code", err, app.ClientSecret, cb.Code)
	}
	scopes := tokenScopes(tok)
	if scopes == nil {
		scopes = app.Scopes
		if scopes == nil {
			scopes = p.Scopes
		}
	}
	c, _, err := e.saveOAuthConnection(ctx, orgID, st.Provider, st.Account, sealedTokens{
		AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType,
	}, expiryOf(tok), scopes, "oauth")
	return c, err
}
