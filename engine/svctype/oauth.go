package svctype

import "time"

// OAuthConnection is an organization's connected account at an OAuth provider (google,
// slack, microsoft). Its tokens travel sealed (Sealed, under the engine's keyring with the
// organization id and the connection id as additional data): no field of this type holds
// a token in plaintext, and Sealed is never encoded to JSON.
type OAuthConnection struct {
	ID       string `json:"id"`
	OrgID    string `json:"-"`
	Provider string `json:"provider"`
	// Account is the organization's label for the connected account (a mailbox, a
	// workspace), what the step property __oauth_account__ names.
	Account string   `json:"account"`
	Scopes  []string `json:"scopes"`
	// ExpiresAt is when the access token expires; nil when the provider did not say.
	ExpiresAt       *time.Time `json:"expires_at,omitempty"`
	HasRefreshToken bool       `json:"has_refresh_token"`
	// Source says how the tokens were given: "oauth" (the authorize and callback flow) or
	// "tokens" (POST /oauth/connections).
	Source string `json:"source"`

	Sealed      []byte `json:"-"`
	MasterKeyID string `json:"-"`
	// Version grows by one with every write of the tokens: a refresh persists its token
	// only over the version it read (compare and swap).
	Version int64 `json:"-"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// OAuthState is an authorization flow in progress: the state parameter's hash (never the
// state itself), the organization and account it is for, and its deadline. It is single
// use: the callback takes it.
type OAuthState struct {
	OrgID       string
	Hash        string
	Provider    string
	Account     string
	RedirectURL string
	ExpiresAt   time.Time
	CreatedAt   time.Time
}
