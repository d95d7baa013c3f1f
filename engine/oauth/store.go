package oauth

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what OAuth connections read and write outside a transaction: the connections
// (a refresh's compare-and-swap among them) and the authorization flows in progress.
// engine/storage documents each method's contract.
type Store interface {
	GetOAuthConnection(ctx context.Context, orgID, id string) (*svctype.OAuthConnection, error)
	FindOAuthConnection(ctx context.Context, orgID, provider, account string) (*svctype.OAuthConnection, error)
	ListOAuthConnections(ctx context.Context, orgID string, f storage.OAuthConnectionFilter) (svctype.Page[svctype.OAuthConnection], error)
	ReplaceOAuthConnection(ctx context.Context, c *svctype.OAuthConnection, ifVersion int64) error
	DeleteOAuthConnection(ctx context.Context, orgID, id string) error
	CreateOAuthState(ctx context.Context, s *svctype.OAuthState) error
	TakeOAuthState(ctx context.Context, orgID, hash string, now time.Time) (*svctype.OAuthState, error)
}

// Tx is what a connection's storing reads and writes in its transaction: the connection of
// a provider and account, inserted or replaced.
type Tx interface {
	FindOAuthConnection(ctx context.Context, orgID, provider, account string) (*svctype.OAuthConnection, error)
	InsertOAuthConnection(ctx context.Context, c *svctype.OAuthConnection) error
	ReplaceOAuthConnection(ctx context.Context, c *svctype.OAuthConnection, ifVersion int64) error
}

// SealedStore is what master-key rotation reads and writes of the connections
// (OAuthSealedTokens): the organizations that hold some, their connections under another
// key, and the compare-and-swap of their sealed tokens.
type SealedStore interface {
	ListOAuthConnectionOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error)
	ListOAuthConnections(ctx context.Context, orgID string, f storage.OAuthConnectionFilter) (svctype.Page[svctype.OAuthConnection], error)
	ResealOAuthConnection(ctx context.Context, old *svctype.OAuthConnection, sealed []byte, keyID string) error
}
