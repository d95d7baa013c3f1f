package oauth

import (
	"encoding/json"
	"fmt"

	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/svctype"
)

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
