package runtime

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OAuth routes: starting a connection (the provider's authorization URL), the provider's
// callback (no X-Org-Id: the state names the organization), connections from tokens given
// directly, their listing and deletion. No answer carries a token.

// OAuthAuthorization is the answer of GET /oauth/{provider}/authorize.
type OAuthAuthorization struct {
	AuthorizeURL string    `json:"authorize_url" doc:"The provider's authorization page: send the person there (a redirect of your own front end)."`
	State        string    `json:"state" doc:"Names this flow; single use; the provider brings it back to /oauth/callback."`
	ExpiresAt    time.Time `json:"expires_at" doc:"The flow must be finished (the callback reached) before this time: 10 minutes."`
}

// OAuthConnection is a connected account as every answer shows it: never its tokens.
type OAuthConnection struct {
	ID              string     `json:"id" example:"conn_0b7c…" doc:"Connection id."`
	Provider        string     `json:"provider" enum:"google,slack,microsoft" doc:"The provider."`
	Account         string     `json:"account" example:"sales@acme.example" doc:"The organization's label for the account: what the step property __oauth_account__ names."`
	Scopes          []string   `json:"scopes" nullable:"false" doc:"The scopes granted, as the provider reported them (or as given)."`
	ExpiresAt       *time.Time `json:"expires_at,omitempty" doc:"When the current access token expires; it is refreshed shortly before. Absent when the provider gave no expiry."`
	HasRefreshToken bool       `json:"has_refresh_token" doc:"Whether the connection can refresh its access token."`
	Source          string     `json:"source" enum:"oauth,tokens" doc:"oauth: made by the authorize and callback flow; tokens: given to POST /oauth/connections."`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

func oauthConnection(c svctype.OAuthConnection) OAuthConnection {
	scopes := c.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return OAuthConnection{
		ID: c.ID, Provider: c.Provider, Account: c.Account, Scopes: scopes, ExpiresAt: c.ExpiresAt,
		HasRefreshToken: c.HasRefreshToken, Source: c.Source, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// OAuthConnectionBody is the body of POST /oauth/connections. The tokens have no schema
// constraint on purpose: the engine checks them and never quotes them, where Huma would.
type OAuthConnectionBody struct {
	Provider     string     `json:"provider" doc:"google, slack or microsoft."`
	Account      string     `json:"account" doc:"The organization's label for the account: 1-200 letters, digits and @ . _ + : -."`
	AccessToken  string     `json:"access_token" doc:"The access token. Encrypted at rest; never returned."`
	RefreshToken string     `json:"refresh_token,omitempty" doc:"The refresh token, when there is one: the access token is then refreshed before it expires."`
	ExpiresAt    *time.Time `json:"expires_at,omitempty" doc:"When the access token expires (absent: it does not, as Slack bot tokens)."`
	Scopes       []string   `json:"scopes,omitempty" doc:"The scopes the token holds, for the listing."`
}

// Problem codes of the OAuth routes.
const (
	codeOAuthState    = "invalid_oauth_state"
	codeOAuthDenied   = "oauth_denied"
	codeOAuthProvider = "oauth_provider_error"
	codeOAuthApp      = "oauth_app_invalid"
)

func (s *Server) registerOAuth() {
	o := op("authorize-oauth", http.MethodGet, "/oauth/{provider}/authorize", "Start connecting an account: the provider's authorization URL", "OAuth")
	o.Description = "Records a single-use state (10 minutes, bound to the organization and `account`) and answers the " +
		"provider's authorization URL, built with the organization's app from org config `oauth:<provider>` " +
		"(`{\"client_id\", \"client_secret\", \"redirect_url\"?, \"scopes\"?}`). Send the person to `authorize_url`; the provider " +
		"brings them back to `GET /oauth/callback`, which stores the connection. The answer is JSON rather than a 302 " +
		"because this route needs `X-Org-Id`, which a browser navigation does not send: your backend calls it and " +
		"redirects. 404 for an unknown provider or when the organization has no `oauth:<provider>` app."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	register(s, o, failure{in: "query", notFound: "OAuth provider not found"}, s.authorizeOAuth)

	o = op("oauth-callback", http.MethodGet, "/oauth/callback", "The provider's redirect: finish connecting the account (no X-Org-Id)", "OAuth")
	o.Description = "Where the provider sends the person back (register this address as the app's redirect URI). " +
		"Takes `state` (single use), exchanges `code` at the provider's token endpoint with the organization's app " +
		"credentials and stores the connection, replacing the tokens of an account connected before. No `X-Org-Id`: " +
		"the state names the organization. 400 `invalid_oauth_state` for a state unknown, expired or used; 400 " +
		"`oauth_denied` when the provider reports `error` (the person declined); 502 `oauth_provider_error` when the " +
		"token endpoint refuses."
	o.Errors = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusServiceUnavailable}
	o.Metadata = map[string]any{secretsMetadata: true}
	register(s, o, failure{in: "query"}, s.oauthCallback)

	o = op("create-oauth-connection", http.MethodPost, "/oauth/connections", "Store a connection from tokens given directly", "OAuth")
	o.Description = "For tokens obtained elsewhere (a Slack bot token, a flow run by your own app). 201 when the " +
		"organization had no connection of this provider and account, 200 when its tokens were replaced. The tokens " +
		"are encrypted at rest and never returned."
	o.DefaultStatus = http.StatusCreated
	o.Responses = map[string]*huma.Response{"200": {Description: "The account was connected: its tokens were replaced."}}
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable}
	o.Metadata = map[string]any{secretsMetadata: true}
	register(s, o, failure{}, s.createOAuthConnection)
	if ops := s.api.OpenAPI().Paths["/oauth/connections"]; ops != nil && ops.Post != nil {
		if ok, created := ops.Post.Responses["200"], ops.Post.Responses["201"]; ok != nil && created != nil {
			ok.Content = created.Content
		}
	}

	o = op("list-oauth-connections", http.MethodGet, "/oauth/connections", "List the organization's connected accounts (never their tokens)", "OAuth")
	o.Description = "By provider, then account, a page at a time like every list."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listOAuthConnections)

	o = op("delete-oauth-connection", http.MethodDelete, "/oauth/connections/{connectionId}", "Delete a connection and its tokens", "OAuth")
	o.Description = "204; 404 for a missing or another organization's connection. The tokens are not revoked at the provider."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{notFound: "OAuth connection not found"}, s.deleteOAuthConnection)
}

type authorizeOAuthInput struct {
	OrgParam
	Provider string `path:"provider" doc:"google, slack or microsoft."`
	Account  string `query:"account" required:"true" doc:"The label the organization gives the account (1-200 letters, digits and @ . _ + : -), what __oauth_account__ will name."`
}

func (s *Server) authorizeOAuth(ctx context.Context, in *authorizeOAuthInput) (*answer[OAuthAuthorization], error) {
	a, err := s.eng.Connections.StartOAuth(ctx, in.OrgID, in.Provider, in.Account)
	if err != nil {
		return nil, err
	}
	return &answer[OAuthAuthorization]{Body: OAuthAuthorization{AuthorizeURL: a.URL, State: a.State, ExpiresAt: a.ExpiresAt}}, nil
}

type oauthCallbackInput struct {
	State            string `query:"state" doc:"The state of GET /oauth/{provider}/authorize."`
	Code             string `query:"code" doc:"The authorization code."`
	Error            string `query:"error" doc:"The provider's error, when access was not granted."`
	ErrorDescription string `query:"error_description" doc:"The provider's explanation of error."`
}

func (s *Server) oauthCallback(ctx context.Context, in *oauthCallbackInput) (*answer[OAuthConnection], error) {
	c, err := s.eng.Connections.FinishOAuth(ctx, engine.OAuthCallback{State: in.State, Code: in.Code, Error: in.Error, ErrorDescription: in.ErrorDescription})
	if err != nil {
		return nil, err
	}
	return &answer[OAuthConnection]{Body: oauthConnection(*c)}, nil
}

type createOAuthConnectionInput struct {
	OrgParam
	Body OAuthConnectionBody
}

// connectionOutput is 201 for a new connection, 200 for tokens replaced.
type connectionOutput struct {
	Status int
	Body   OAuthConnection
}

func (s *Server) createOAuthConnection(ctx context.Context, in *createOAuthConnectionInput) (*connectionOutput, error) {
	c, created, err := s.eng.Connections.CreateOAuthConnection(ctx, in.OrgID, engine.OAuthConnectionInput{
		Provider: in.Body.Provider, Account: in.Body.Account, AccessToken: in.Body.AccessToken,
		RefreshToken: in.Body.RefreshToken, ExpiresAt: in.Body.ExpiresAt, Scopes: in.Body.Scopes,
	})
	if err != nil {
		return nil, err
	}
	out := &connectionOutput{Status: http.StatusOK, Body: oauthConnection(*c)}
	if created {
		out.Status = http.StatusCreated
	}
	return out, nil
}

type listOAuthConnectionsInput struct {
	OrgParam
	Paging
}

func (s *Server) listOAuthConnections(ctx context.Context, in *listOAuthConnectionsInput) (*answer[List[OAuthConnection]], error) {
	page, err := s.eng.Connections.ListOAuthConnections(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[OAuthConnection]]{Body: listOf(page, oauthConnection)}, nil
}

type connectionPath struct {
	OrgParam
	ConnectionID string `path:"connectionId" doc:"Connection id."`
}

func (s *Server) deleteOAuthConnection(ctx context.Context, in *connectionPath) (*struct{}, error) {
	if err := s.eng.Connections.DeleteOAuthConnection(ctx, in.OrgID, in.ConnectionID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
