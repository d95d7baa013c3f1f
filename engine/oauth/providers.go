package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/oauth2"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/orgconfig"
)

// OAuthProvider is where a provider's authorization server is and what a flow asks of it.
type OAuthProvider struct {
	AuthURL  string
	TokenURL string
	// AuthStyle says how the client credentials reach the token endpoint.
	AuthStyle oauth2.AuthStyle
	// Scopes are asked for when the organization's app names none.
	Scopes []string
	// ScopeSeparator joins scopes in the authorization URL (" ", Slack ",").
	ScopeSeparator string
	// AuthParams are added to the authorization URL (Google's access_type=offline).
	AuthParams map[string]string
}

// DefaultOAuthProviders are the real authorization servers of the providers the built-in
// tools use.
func DefaultOAuthProviders() map[string]OAuthProvider {
	return map[string]OAuthProvider{
		oauthtools.Google: {
			AuthURL:   "https://accounts.google.com/o/oauth2/v2/auth",
			TokenURL:  "https://oauth2.googleapis.com/token",
			AuthStyle: oauth2.AuthStyleInParams,
			Scopes:    []string{"https://www.googleapis.com/auth/gmail.send", "https://www.googleapis.com/auth/spreadsheets"},
			// offline: a refresh token; consent: a refresh token also on a reconnection.
			AuthParams: map[string]string{"access_type": "offline", "prompt": "consent", "include_granted_scopes": "true"},
		},
		oauthtools.Slack: {
			AuthURL:        "https://slack.com/oauth/v2/authorize",
			TokenURL:       "https://slack.com/api/oauth.v2.access",
			AuthStyle:      oauth2.AuthStyleInParams,
			Scopes:         []string{"chat:write"},
			ScopeSeparator: ",",
		},
		oauthtools.Microsoft: {
			AuthURL:    "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
			TokenURL:   "https://login.microsoftonline.com/common/oauth2/v2.0/token",
			AuthStyle:  oauth2.AuthStyleInParams,
			Scopes:     []string{"offline_access", "https://graph.microsoft.com/ChannelMessage.Send"},
			AuthParams: map[string]string{"response_mode": "query"},
		},
	}
}

// overrideProviders replaces parts of ps by name (OAuthOptions.Providers): a field left zero
// keeps ps's.
func overrideProviders(ps, by map[string]OAuthProvider) {
	for name, p := range by {
		d := ps[name]
		if p.AuthURL != "" {
			d.AuthURL = p.AuthURL
		}
		if p.TokenURL != "" {
			d.TokenURL = p.TokenURL
		}
		if p.AuthStyle != oauth2.AuthStyleAutoDetect {
			d.AuthStyle = p.AuthStyle
		}
		if p.Scopes != nil {
			d.Scopes = p.Scopes
		}
		if p.ScopeSeparator != "" {
			d.ScopeSeparator = p.ScopeSeparator
		}
		if p.AuthParams != nil {
			d.AuthParams = p.AuthParams
		}
		ps[name] = d
	}
}

// OAuthApp is an organization's app at a provider: the JSON value of its org config key
// oauth:<provider>.
type OAuthApp struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// RedirectURL, when set, replaces OAuthOptions.RedirectURL for this organization.
	RedirectURL string `json:"redirect_url,omitempty"`
	// Scopes, when set, replace the provider's default scopes.
	Scopes []string `json:"scopes,omitempty"`
}

// OAuthProviders lists the providers connections can be made to, sorted.
func (e *Connections) OAuthProviders() []string { return slices.Sorted(maps.Keys(e.providers)) }

func (e *Connections) oauthProvider(name string) (OAuthProvider, error) {
	p, ok := e.providers[name]
	if !ok {
		return p, fmt.Errorf("%w: OAuth provider %q (providers: %s)", core.ErrNotFound, orgconfig.ShortKey(name), strings.Join(e.OAuthProviders(), ", "))
	}
	return p, nil
}

// oauthApp reads and checks the organization's app credentials for provider.
func (e *Connections) oauthApp(ctx context.Context, orgID, provider string) (*OAuthApp, error) {
	key := OAuthAppKeyPrefix + provider
	raw, err := e.orgConfig.OrgConfigValue(ctx, orgID, key)
	if errors.Is(err, orgconfig.ErrNoKey) {
		return nil, fmt.Errorf("%w: %q: store the organization's %s app there first, as {\"client_id\": ..., \"client_secret\": ...}", orgconfig.ErrNoKey, key, provider)
	}
	if err != nil {
		return nil, err
	}
	var app OAuthApp
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	// The decoder's message may quote the value: it is not passed on.
	if dec.Decode(&app) != nil || app.ClientID == "" || app.ClientSecret == "" {
		return nil, fmt.Errorf("%w: org config key %q must be a JSON object {\"client_id\", \"client_secret\", \"redirect_url\"?, \"scopes\"?} with both credentials set", ErrOAuthApp, key)
	}
	return &app, nil
}

func (e *Connections) oauthConfig(provider string, p OAuthProvider, app *OAuthApp, redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     app.ClientID,
		ClientSecret: app.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: p.AuthURL, TokenURL: p.TokenURL, AuthStyle: p.AuthStyle},
		RedirectURL:  redirect,
	}
}
