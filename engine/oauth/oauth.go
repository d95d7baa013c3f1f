// Package oauth is an organization's OAuth connections: its connected accounts at Google,
// Slack and Microsoft, made with the authorization-code flow or from tokens given directly,
// tokens sealed and refreshed one at a time per connection, and the built-in OAuth tools
// (engine/oauthtools) that use them. There is no platform app: an organization's app is its
// org config value oauth:<provider>. No answer, error, log or event holds a token.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/svcflow/svcflow/engine/actions/outbound"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
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
	// locks: one refresh at a time per connection in this process.
	locks keyedMutex
}

// New returns the connections over st, the organizations' OAuth apps read through oc,
// tokens sealed with keys (nil: none can be stored).
func New(c *core.Core, st Store, oc *orgconfig.OrgConfig, keys *secrets.Keyring, o OAuthOptions) *Connections {
	s := &Connections{core: c, store: st, orgConfig: oc, keys: keys, now: c.Now, providers: DefaultOAuthProviders(),
		redirectURL: o.RedirectURL, client: o.Client}
	for name, p := range o.Providers {
		d := s.providers[name]
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
		s.providers[name] = d
	}
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

// OAuthProviders lists the providers connections can be made to, sorted.
func (e *Connections) OAuthProviders() []string { return slices.Sorted(maps.Keys(e.providers)) }

func (e *Connections) oauthProvider(name string) (OAuthProvider, error) {
	p, ok := e.providers[name]
	if !ok {
		return p, fmt.Errorf("%w: OAuth provider %q (providers: %s)", core.ErrNotFound, orgconfig.ShortKey(name), strings.Join(e.OAuthProviders(), ", "))
	}
	return p, nil
}

var oauthAccountPattern = regexp.MustCompile(`^[A-Za-z0-9@._+:-]+$`)

func checkOAuthAccount(pointer, account string) *core.Problem {
	switch {
	case account == "":
		return &core.Problem{Pointer: pointer, Message: "required: the connected account's label (1-200 letters, digits and @ . _ + : -)"}
	case len(account) > MaxOAuthAccountLen:
		return &core.Problem{Pointer: pointer, Message: fmt.Sprintf("at most %d characters", MaxOAuthAccountLen)}
	case !oauthAccountPattern.MatchString(account):
		return &core.Problem{Pointer: pointer, Message: "only letters, digits and @ . _ + : -"}
	}
	return nil
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

// OAuthConnectionInput is a connection made from tokens the caller already holds.
type OAuthConnectionInput struct {
	Provider     string
	Account      string
	AccessToken  string
	RefreshToken string
	ExpiresAt    *time.Time
	Scopes       []string
}

// CreateOAuthConnection stores a connection from tokens given directly, replacing the
// tokens of the organization's connection of the same provider and account if there is
// one (reported by created=false).
func (e *Connections) CreateOAuthConnection(ctx context.Context, orgID string, in OAuthConnectionInput) (*svctype.OAuthConnection, bool, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, false, err
	}
	var ps []core.Problem
	if _, ok := e.providers[in.Provider]; !ok {
		ps = append(ps, core.Problem{Pointer: "/provider", Message: fmt.Sprintf("one of %s", strings.Join(e.OAuthProviders(), ", "))})
	}
	if pr := checkOAuthAccount("/account", in.Account); pr != nil {
		ps = append(ps, *pr)
	}
	// Problems never quote a token.
	for _, f := range []struct {
		pointer, v string
		required   bool
	}{{"/access_token", in.AccessToken, true}, {"/refresh_token", in.RefreshToken, false}} {
		switch {
		case f.v == "" && f.required:
			ps = append(ps, core.Problem{Pointer: f.pointer, Message: "required"})
		case len(f.v) > MaxOAuthTokenLen:
			ps = append(ps, core.Problem{Pointer: f.pointer, Message: fmt.Sprintf("at most %d bytes", MaxOAuthTokenLen)})
		case strings.ContainsAny(f.v, " \t\r\n"):
			ps = append(ps, core.Problem{Pointer: f.pointer, Message: "must not contain whitespace"})
		}
	}
	if len(in.Scopes) > 100 {
		ps = append(ps, core.Problem{Pointer: "/scopes", Message: "at most 100 scopes"})
	}
	for i, s := range in.Scopes {
		if s == "" || len(s) > 500 || strings.ContainsAny(s, " \t\r\n") {
			ps = append(ps, core.Problem{Pointer: fmt.Sprintf("/scopes/%d", i), Message: "a scope is 1-500 characters without whitespace"})
		}
	}
	if len(ps) > 0 {
		return nil, false, &core.ValidationError{Problems: ps}
	}
	scopes := in.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return e.saveOAuthConnection(ctx, orgID, in.Provider, in.Account, sealedTokens{
		AccessToken: in.AccessToken, RefreshToken: in.RefreshToken, TokenType: "Bearer",
	}, in.ExpiresAt, scopes, "tokens")
}

// sealedTokens is what a connection's sealed value holds.
type sealedTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	TokenType    string `json:"token_type,omitempty"`
}

// oauthSealName is the name a connection's tokens are sealed under (with the org id): a
// sealed value copied to another connection or organization does not open.
func oauthSealName(connectionID string) string { return "oauth_connection:" + connectionID }

func (e *Connections) sealTokens(c *svctype.OAuthConnection, t sealedTokens) error {
	if e.keys == nil {
		return orgconfig.ErrNoMasterKey
	}
	plain, err := json.Marshal(t)
	if err != nil {
		return err
	}
	sealed, keyID, err := e.keys.Seal(c.OrgID, oauthSealName(c.ID), plain)
	clear(plain)
	if err != nil {
		return fmt.Errorf("oauth connection %s: %w", c.ID, err)
	}
	c.Sealed, c.MasterKeyID, c.HasRefreshToken = sealed, keyID, t.RefreshToken != ""
	return nil
}

func (e *Connections) openTokens(c *svctype.OAuthConnection) (sealedTokens, error) {
	var t sealedTokens
	if e.keys == nil {
		return t, orgconfig.ErrNoMasterKey
	}
	plain, err := e.keys.Open(c.OrgID, oauthSealName(c.ID), c.Sealed)
	if err != nil {
		return t, fmt.Errorf("the tokens of %s account %q do not open (master key %s): %w", c.Provider, c.Account, c.MasterKeyID, err)
	}
	defer clear(plain)
	if err := json.Unmarshal(plain, &t); err != nil || t.AccessToken == "" {
		return t, fmt.Errorf("the tokens of %s account %q are not readable", c.Provider, c.Account)
	}
	return t, nil
}

// saveOAuthConnection inserts or replaces the organization's connection of provider and
// account. Two saves of a new account at once: the loser's insert conflicts and it
// replaces the winner's row instead.
func (e *Connections) saveOAuthConnection(ctx context.Context, orgID, provider, account string, t sealedTokens, expires *time.Time, scopes []string, source string) (*svctype.OAuthConnection, bool, error) {
	if e.keys == nil {
		return nil, false, orgconfig.ErrNoMasterKey
	}
	var (
		out     *svctype.OAuthConnection
		created bool
	)
	var err error
	for range 2 {
		err = e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
			tx := Tx(stx)
			now := e.now().UTC()
			c := &svctype.OAuthConnection{
				OrgID: orgID, Provider: provider, Account: account, Scopes: scopes, ExpiresAt: utcTime(expires),
				Source: source, CreatedAt: now, UpdatedAt: now,
			}
			cur, err := tx.FindOAuthConnection(ctx, orgID, provider, account)
			switch {
			case err == nil:
				c.ID = cur.ID
			case errors.Is(err, core.ErrNotFound):
				c.ID = "conn_" + uuid.NewString()
			default:
				return err
			}
			if err := e.sealTokens(c, t); err != nil {
				return err
			}
			if cur != nil {
				created = false
				err = tx.ReplaceOAuthConnection(ctx, c, 0)
			} else {
				created = true
				err = tx.InsertOAuthConnection(ctx, c)
			}
			out = c
			return err
		})
		if !errors.Is(err, core.ErrConflict) {
			break
		}
	}
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// ListOAuthConnections pages the organization's connections by provider and account. The
// connections carry no tokens.
func (e *Connections) ListOAuthConnections(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.OAuthConnection], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.OAuthConnection]{}, err
	}
	page, err := e.store.ListOAuthConnections(ctx, orgID, storage.OAuthConnectionFilter{ListOptions: opts})
	for i := range page.Items {
		page.Items[i].Sealed = nil
	}
	return page, err
}

// DeleteOAuthConnection removes a connection and its tokens; core.ErrNotFound when the
// organization has none of that id. Tokens are not revoked at the provider.
func (e *Connections) DeleteOAuthConnection(ctx context.Context, orgID, id string) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	return e.store.DeleteOAuthConnection(ctx, orgID, id)
}

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
	// One refresh at a time per connection in this process; across processes the write is
	// a compare-and-swap on the connection's version (refreshOAuth).
	unlock := e.locks.lock(orgID + "\x00" + c.ID)
	defer unlock()
	if c, err = e.store.GetOAuthConnection(ctx, orgID, c.ID); err != nil {
		return "", "", err
	}
	t, err := e.openTokens(c)
	if err != nil {
		return "", "", err
	}
	if fresh(c, e.now()) {
		return t.AccessToken, c.Account, nil
	}
	t, err = e.refreshOAuth(ctx, c, t)
	if err != nil {
		return "", "", err
	}
	return t.AccessToken, c.Account, nil
}

func fresh(c *svctype.OAuthConnection, now time.Time) bool {
	return c.ExpiresAt == nil || c.ExpiresAt.After(now.Add(OAuthRefreshMargin))
}

func (e *Connections) selectOAuthConnection(ctx context.Context, orgID, provider, account string) (*svctype.OAuthConnection, error) {
	if _, err := e.oauthProvider(provider); err != nil {
		return nil, err
	}
	const shown = 20
	page, err := e.store.ListOAuthConnections(ctx, orgID, storage.OAuthConnectionFilter{Provider: provider, ListOptions: svctype.ListOptions{Limit: shown + 1}})
	if err != nil {
		return nil, err
	}
	labels := make([]string, 0, len(page.Items))
	for _, c := range page.Items {
		labels = append(labels, fmt.Sprintf("%q", c.Account))
	}
	list := strings.Join(labels, ", ")
	if len(labels) > shown {
		list = strings.Join(labels[:shown], ", ") + ", ..."
	}
	if account != "" {
		c, err := e.store.FindOAuthConnection(ctx, orgID, provider, account)
		if errors.Is(err, core.ErrNotFound) {
			if len(labels) == 0 {
				return nil, fmt.Errorf("no %s account %q is connected to this organization, and no other %s account either: connect it (GET /oauth/%s/authorize?account=%s, or POST /oauth/connections)", provider, account, provider, provider, account)
			}
			return nil, fmt.Errorf("no %s account %q is connected to this organization (connected: %s)", provider, account, list)
		}
		return c, err
	}
	switch len(page.Items) {
	case 0:
		return nil, fmt.Errorf("no %s account is connected to this organization: connect one (GET /oauth/%s/authorize?account=<label>, or POST /oauth/connections)", provider, provider)
	case 1:
		return &page.Items[0], nil
	}
	return nil, fmt.Errorf("several %s accounts are connected to this organization (%s): choose one with the step property %s", provider, list, oauthtools.AccountProperty)
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

// oauthHTTP hands oauth2 an *http.Client that makes its requests through the engine's
// outbound client (address guard, body cap, no redirects).
func (e *Connections) oauthHTTP(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, outboundHTTPClient(e.client))
}

func expiryOf(tok *oauth2.Token) *time.Time {
	if tok.Expiry.IsZero() {
		return nil
	}
	t := tok.Expiry.UTC()
	return &t
}

func utcTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// tokenScopes reads the scopes a token answer granted (space-separated, or Slack's commas).
func tokenScopes(tok *oauth2.Token) []string {
	s, _ := tok.Extra("scope").(string)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// tokenError words a failure of the token endpoint without the request's secrets: oauth2's
// RetrieveError quotes the whole answer, which is replaced by its status and error code.
func tokenError(provider, doing string, err error, secrets ...string) error {
	var msg string
	var re *oauth2.RetrieveError
	var oe *outbound.Error
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		msg = fmt.Sprintf("the token endpoint answered %d", status)
		if re.ErrorCode != "" {
			msg += " " + clip(re.ErrorCode, 100)
		}
		if re.ErrorDescription != "" {
			msg += ": " + clip(re.ErrorDescription, 200)
		}
	case errors.As(err, &oe):
		msg = oe.Error()
	default:
		msg = clip(err.Error(), 300)
	}
	for _, s := range secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return fmt.Errorf("%w: %s: %s: %s", ErrOAuthProvider, provider, doing, msg)
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// oauthTokens is the engine as the built-in tools' token source.
type oauthTokens struct{ e *Connections }

func (t oauthTokens) AccessToken(ctx context.Context, orgID, provider, account string) (string, string, error) {
	return t.e.OAuthAccessToken(ctx, orgID, provider, account)
}

// keyedMutex is one mutex per key, dropped when nobody holds or waits for it.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*refMutex{}
	}
	l := k.m[key]
	if l == nil {
		l = &refMutex{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
