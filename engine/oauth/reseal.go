package oauth

import (
	"context"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OAuthSealedTokens is the sealed tokens of st's OAuth connections as a collection that
// secrets.ResealCollections moves to the current master key: master-key rotation re-seals
// them with org config, or connections sealed under a retired key would stop opening.
// Organizations are found by id alone (ListOAuthConnectionOrgs), then each one's
// connections under another key are read by org id; the write is a compare-and-swap on the
// connection's version and sealed bytes (ResealOAuthConnection), so a refresh or a
// reconnection in between wins and the next pass looks at the connection again. A reseal
// changes no token, no version and no updated_at.
func OAuthSealedTokens(st SealedStore) secrets.SealedCollection { return oauthTokenCollection{st} }

type oauthTokenCollection struct{ st SealedStore }

func (oauthTokenCollection) Kind() string { return "oauth connections" }

func (c oauthTokenCollection) Orgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error) {
	return c.st.ListOAuthConnectionOrgs(ctx, f)
}

func (c oauthTokenCollection) List(ctx context.Context, orgID string, f secrets.ListFilter) (svctype.Page[secrets.SealedValue], error) {
	page, err := c.st.ListOAuthConnections(ctx, orgID, storage.OAuthConnectionFilter{NotKeyID: f.NotKeyID, ListOptions: f.ListOptions})
	out := svctype.Page[secrets.SealedValue]{NextCursor: page.NextCursor, Items: make([]secrets.SealedValue, len(page.Items))}
	for i, conn := range page.Items {
		out.Items[i] = secrets.SealedValue{
			OrgID: conn.OrgID, ID: conn.ID, Name: oauthSealName(conn.ID),
			Sealed: conn.Sealed, KeyID: conn.MasterKeyID, Version: conn.Version,
		}
	}
	return out, err
}

func (c oauthTokenCollection) Reseal(ctx context.Context, old *secrets.SealedValue, sealed []byte, keyID string) error {
	return c.st.ResealOAuthConnection(ctx, &svctype.OAuthConnection{
		OrgID: old.OrgID, ID: old.ID, Sealed: old.Sealed, MasterKeyID: old.KeyID, Version: old.Version,
	}, sealed, keyID)
}
