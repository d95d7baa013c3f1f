// Package oauth is an organization's OAuth connections: its connected accounts at Google,
// Slack and Microsoft, made with the authorization-code flow or from tokens given directly,
// tokens sealed and refreshed one at a time per connection, and the built-in OAuth tools
// (engine/oauthtools) that use them. There is no platform app: an organization's app is its
// org config value oauth:<provider>. No answer, error, log or event holds a token.
package oauth

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/secrets"
)

// OAuth connections: an organization's connected accounts at Google, Slack and Microsoft,
// made with the authorization-code flow (StartOAuth, then FinishOAuth from the callback)
// or from tokens given directly (CreateOAuthConnection), and used by the built-in OAuth
// tools (engine/oauthtools) through OAuthAccessToken.
//
// The organization's OAuth app is its org config value oauth:<provider>, a JSON object
// {client_id, client_secret, redirect_url?, scopes?}: there is no platform app and no
// platform account. Tokens are sealed with the engine's keyring, the organization id and
// the connection id as additional data, and refreshed shortly before they expire, one
// refresh at a time per connection. No answer, error, log, event or run context of the
// engine holds a token.

// Limits and lifetimes of OAuth connections.
const (
	// OAuthStateTTL is how long an authorization flow may take, from StartOAuth to the
	// callback.
	OAuthStateTTL = 10 * time.Minute
	// OAuthRefreshMargin: an access token that expires within it is refreshed before use,
	// so a call does not start with a token that lapses on the way.
	OAuthRefreshMargin = time.Minute
	// MaxOAuthTokenLen bounds an access or refresh token given to CreateOAuthConnection.
	MaxOAuthTokenLen = 16 << 10
	// MaxOAuthAccountLen bounds an account label.
	MaxOAuthAccountLen = 200
	// OAuthAppKeyPrefix starts the org config key of a provider's app credentials:
	// oauth:google, oauth:slack, oauth:microsoft.
	OAuthAppKeyPrefix = "oauth:"
)

// OAuth errors. ErrOAuthState and ErrOAuthDenied are the caller's (the callback's) to
// correct; ErrOAuthProvider is the provider's answer; ErrOAuthApp is the organization's
// configuration. None of their messages carries a token, a code or a client secret.
var (
	ErrOAuthState    = errors.New("the OAuth state is unknown, expired or already used: start the authorization again")
	ErrOAuthDenied   = errors.New("the authorization was not granted")
	ErrOAuthProvider = errors.New("the OAuth provider refused the request")
	ErrOAuthApp      = errors.New("the organization's OAuth app is not usable")
)

// OAuthOptions configure OAuth connections and the built-in OAuth tools (Config.OAuth).
// The zero value talks to the real providers through a guarded outbound client.
type OAuthOptions struct {
	// Providers replaces parts of DefaultOAuthProviders by name: a field left zero keeps
	// the default's. Tests point AuthURL and TokenURL at httptest servers.
	Providers map[string]OAuthProvider
	// APIs are the providers' API base URLs (empty fields: the real ones).
	APIs oauthtools.APIs
	// RedirectURL is the callback address registered with the providers
	// (https://svcflow.example.com/oauth/callback); an organization's app may name its own.
	RedirectURL string
	// AllowPrivateTargets lets token and API calls reach private addresses (tests, or
	// providers on the deployment's own network); ignored when Client is set.
	AllowPrivateTargets bool
	// Client makes every call to a provider; nil builds an outbound client.
	Client *outbound.Client
}

// Connections is the OAuth connections of every organization and the built-in OAuth tools
// that use them.
type Connections struct {
	core        *core.Core
	store       Store
	orgConfig   *orgconfig.OrgConfig
	keys        *secrets.Keyring
	now         func() time.Time
	providers   map[string]OAuthProvider
	redirectURL string
	client      *outbound.Client
	apis        oauthtools.APIs
	// refreshes: one refresh at a time per connection in this process; callers that come
	// while one is under way wait for it and share its token (refresh.go).
	refreshes singleflight.Group
}

// New returns the connections over st, the organizations' OAuth apps read through oc,
// tokens sealed with keys (nil: none can be stored).
func New(c *core.Core, st Store, oc *orgconfig.OrgConfig, keys *secrets.Keyring, o OAuthOptions) *Connections {
	s := &Connections{core: c, store: st, orgConfig: oc, keys: keys, now: c.Now, providers: DefaultOAuthProviders(),
		redirectURL: o.RedirectURL, client: o.Client}
	overrideProviders(s.providers, o.Providers)
	if s.client == nil {
		s.client = outbound.NewClient(outbound.Options{AllowPrivateTargets: o.AllowPrivateTargets})
	}
	s.apis = o.APIs
	return s
}

// Register puts the built-in OAuth tools on c's environment, bound to these connections: a
// kind already there under a tool's name (an embedding program's own) is left alone.
func (e *Connections) Register(c *core.Core) {
	for name, kind := range oauthtools.Kinds(oauthTokens{e}, e.client, e.apis) {
		if _, taken := c.Environment().Lookup(name); !taken {
			c.Environment().RegisterStepKind(name, kind)
		}
	}
}

// oauthTokens is the engine as the built-in tools' token source.
type oauthTokens struct{ e *Connections }

func (t oauthTokens) AccessToken(ctx context.Context, orgID, provider, account string) (string, string, error) {
	return t.e.OAuthAccessToken(ctx, orgID, provider, account)
}
