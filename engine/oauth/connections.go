package oauth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

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

func utcTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
