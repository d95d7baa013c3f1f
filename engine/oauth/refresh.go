package oauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OAuthAccessToken returns a valid access token of the organization's connection to
// provider named account, refreshing it first when it expires within OAuthRefreshMargin,
// and the account used. account "" selects the organization's only connection to the
// provider; with none, or several, the error says what to do (and names the labels). Only
// the organization's own connections are ever considered. The token is for one outbound
// call: it must not be logged, stored or returned.
func (e *Connections) OAuthAccessToken(ctx context.Context, orgID, provider, account string) (token, used string, err error) {
	if err := core.CheckOrg(orgID); err != nil {
		return "", "", err
	}
	c, err := e.selectOAuthConnection(ctx, orgID, provider, account)
	if err != nil {
		return "", "", err
	}
	t, err := e.openTokens(c)
	if err != nil {
		return "", "", err
	}
	if fresh(c, e.now()) {
		return t.AccessToken, c.Account, nil
	}
	// One refresh at a time per connection in this process: callers that find the token due
	// while a refresh is under way wait for it and take its token. Across processes the
	// write is a compare-and-swap on the connection's version (refreshOAuth).
	wait := e.refreshes.DoChan(orgID+"\x00"+c.ID, func() (any, error) {
		return e.refreshOnce(context.WithoutCancel(ctx), orgID, c.ID)
	})
	select {
	case r := <-wait:
		if r.Err != nil {
			return "", "", r.Err
		}
		return r.Val.(string), c.Account, nil
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
}

// refreshOnce is one refresh of connection id, run by the first caller that found its token
// due. It reads the connection again first: a refresh that ended between that caller's read
// and this one has already stored a fresh token. It runs without the caller's cancellation,
// so a caller that gives up does not fail the others waiting for it, nor lose a refresh
// token the provider has already rotated; the outbound client's timeouts bound it.
func (e *Connections) refreshOnce(ctx context.Context, orgID, id string) (string, error) {
	c, err := e.store.GetOAuthConnection(ctx, orgID, id)
	if err != nil {
		return "", err
	}
	t, err := e.openTokens(c)
	if err != nil {
		return "", err
	}
	if !fresh(c, e.now()) {
		if t, err = e.refreshOAuth(ctx, c, t); err != nil {
			return "", err
		}
	}
	return t.AccessToken, nil
}

func fresh(c *svctype.OAuthConnection, now time.Time) bool {
	return c.ExpiresAt == nil || c.ExpiresAt.After(now.Add(OAuthRefreshMargin))
}

// refreshOAuth trades the refresh token for a new access token (oauth2's TokenSource, which
// keeps the old refresh token when the provider sends none) and persists it over the
// version it read. When another process refreshed first, its token is used instead.
func (e *Connections) refreshOAuth(ctx context.Context, c *svctype.OAuthConnection, t sealedTokens) (sealedTokens, error) {
	if t.RefreshToken == "" {
		return t, fmt.Errorf("the access token of %s account %q has expired and the connection has no refresh token: connect the account again", c.Provider, c.Account)
	}
	p, err := e.oauthProvider(c.Provider)
	if err != nil {
		return t, err
	}
	app, err := e.oauthApp(ctx, c.OrgID, c.Provider)
	if err != nil {
		return t, err
	}
	src := e.oauthConfig(c.Provider, p, app, "").TokenSource(e.oauthHTTP(ctx), &oauth2.Token{RefreshToken: t.RefreshToken})
	tok, err := src.Token()
	if err != nil {
		ferr := tokenError(c.Provider, fmt.Sprintf("refreshing the access token of account %q", c.Account), err, app.ClientSecret, t.RefreshToken, t.AccessToken)
		if other, ok := e.refreshedElsewhere(ctx, c); ok {
			return other, nil
		}
		return t, ferr
	}
	next := sealedTokens{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, TokenType: tok.TokenType}
	if next.RefreshToken == "" {
		next.RefreshToken = t.RefreshToken
	}
	upd := *c
	upd.ExpiresAt = expiryOf(tok)
	upd.UpdatedAt = e.now().UTC()
	if s := tokenScopes(tok); s != nil {
		upd.Scopes = s
	}
	if err := e.sealTokens(&upd, next); err != nil {
		return t, err
	}
	err = e.store.ReplaceOAuthConnection(ctx, &upd, c.Version)
	if errors.Is(err, core.ErrConflict) {
		if other, ok := e.refreshedElsewhere(ctx, c); ok {
			return other, nil
		}
	}
	if err != nil {
		return t, fmt.Errorf("saving the refreshed token of %s account %q: %w", c.Provider, c.Account, err)
	}
	return next, nil
}

// refreshedElsewhere reads the connection again: when another writer stored a fresh token
// since c was read, that token is the one to use.
func (e *Connections) refreshedElsewhere(ctx context.Context, c *svctype.OAuthConnection) (sealedTokens, bool) {
	now, err := e.store.GetOAuthConnection(ctx, c.OrgID, c.ID)
	if err != nil || now.Version == c.Version || !fresh(now, e.now()) {
		return sealedTokens{}, false
	}
	t, err := e.openTokens(now)
	return t, err == nil
}
