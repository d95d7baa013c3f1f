package engine

import (
	"github.com/svcflow/svcflow/engine/oauth"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/secrets"
)

// OAuth connections (engine/oauth).
type (
	OAuthOptions         = oauth.OAuthOptions
	OAuthProvider        = oauth.OAuthProvider
	OAuthApp             = oauth.OAuthApp
	OAuthAuthorization   = oauth.OAuthAuthorization
	OAuthCallback        = oauth.OAuthCallback
	OAuthConnectionInput = oauth.OAuthConnectionInput
	// OAuthAPIs are the API base URLs the built-in OAuth tools call (OAuthOptions.APIs):
	// an empty field is the provider's real one.
	OAuthAPIs = oauthtools.APIs
)

const (
	OAuthStateTTL      = oauth.OAuthStateTTL
	OAuthRefreshMargin = oauth.OAuthRefreshMargin
	MaxOAuthTokenLen   = oauth.MaxOAuthTokenLen
	MaxOAuthAccountLen = oauth.MaxOAuthAccountLen
	OAuthAppKeyPrefix  = oauth.OAuthAppKeyPrefix
)

// OAuth errors (engine/oauth documents each).
var (
	ErrOAuthState    = oauth.ErrOAuthState
	ErrOAuthDenied   = oauth.ErrOAuthDenied
	ErrOAuthProvider = oauth.ErrOAuthProvider
	ErrOAuthApp      = oauth.ErrOAuthApp
)

// DefaultOAuthProviders are the real authorization servers of the providers the built-in
// tools use.
func DefaultOAuthProviders() map[string]OAuthProvider { return oauth.DefaultOAuthProviders() }

// OAuthSealedTokens is the sealed tokens of st's OAuth connections as a collection that
// secrets.ResealCollections moves to the current master key.
func OAuthSealedTokens(st OAuthStore) secrets.SealedCollection { return oauth.OAuthSealedTokens(st) }
