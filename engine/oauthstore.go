package engine

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OAuthStore is the storage of OAuth connections and of authorization flows in progress.
// Every method names the organization; the store sees tokens sealed only.
type OAuthStore interface {
	// InsertOAuthConnection inserts c (its ID set by the caller, whose seal names it);
	// ErrConflict when the organization has a connection of c.Provider and c.Account.
	InsertOAuthConnection(ctx context.Context, c *svctype.OAuthConnection) error
	// ReplaceOAuthConnection writes c's sealed tokens, key id, scopes, expiry, refresh flag,
	// source and updated_at over the connection c.ID of c.OrgID, and sets c.Version to the
	// stored version plus one. When ifVersion is not 0 the write happens only over that
	// version (ErrConflict otherwise: another writer got there first). ErrNotFound when
	// there is no such connection. c.CreatedAt is set from the stored row.
	ReplaceOAuthConnection(ctx context.Context, c *svctype.OAuthConnection, ifVersion int64) error
	GetOAuthConnection(ctx context.Context, orgID, id string) (*svctype.OAuthConnection, error)
	// FindOAuthConnection returns the organization's connection of provider and account.
	FindOAuthConnection(ctx context.Context, orgID, provider, account string) (*svctype.OAuthConnection, error)
	// ListOAuthConnections pages the organization's connections by provider, then account;
	// f.Provider, when set, keeps that provider's only.
	ListOAuthConnections(ctx context.Context, orgID string, f OAuthConnectionFilter) (svctype.Page[svctype.OAuthConnection], error)
	DeleteOAuthConnection(ctx context.Context, orgID, id string) error
	// ListOAuthConnectionOrgs pages the ids of the organizations that hold connections (under
	// another master key than f.NotKeyID, when set), in order. It reads no token: master-key
	// rotation walks the organizations with it, then reads each one's connections by org id.
	ListOAuthConnectionOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error)
	// ResealOAuthConnection replaces old's sealed tokens with sealed (under keyID) if the
	// stored connection is still at old.Version with old.Sealed. Neither the version nor
	// updated_at changes: the tokens are the same, and a refresh that read this version
	// must still win its compare-and-swap. ErrConflict when the connection changed since
	// old was read, ErrNotFound when it is gone.
	ResealOAuthConnection(ctx context.Context, old *svctype.OAuthConnection, sealed []byte, keyID string) error

	// CreateOAuthState records a flow in progress (and removes the organization's expired
	// ones). TakeOAuthState deletes and returns the organization's state of hash when it has
	// not expired at now: single use, so of two callbacks with one state one gets it and the
	// other ErrNotFound (as for an expired or unknown state).
	CreateOAuthState(ctx context.Context, s *svctype.OAuthState) error
	TakeOAuthState(ctx context.Context, orgID, hash string, now time.Time) (*svctype.OAuthState, error)
}

// OAuthConnectionFilter narrows ListOAuthConnections.
type OAuthConnectionFilter struct {
	Provider string
	// NotKeyID, when set, keeps the connections whose tokens are sealed under another
	// master key than this one: what rotation still has to move.
	NotKeyID string
	svctype.ListOptions
}
