package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// Store is what the gateway needs of its database (hosts/gateway/gwstore implements it, the
// composition root checks that it does): accounts, the organizations they own, and the keys
// to those organizations; people, usage and the operator's records; and whether it can
// answer (GET /readyz). Accounts are above organizations, so their reads are by account id
// or by a credential's hash (the step that finds the account); every organization and key
// read names its account. Errors wrap gwstore.ErrNotFound, gwstore.ErrConflict and
// gwstore.ErrInvalidCursor.
type Store interface {
	// CreateAccount inserts a; ErrConflict when its email is taken.
	CreateAccount(ctx context.Context, a *gwstore.Account) error
	GetAccount(ctx context.Context, id string) (*gwstore.Account, error)
	// AccountByToken finds the account whose management token hashes to hash.
	AccountByToken(ctx context.Context, hash string) (*gwstore.Account, error)
	// SetAccountToken replaces an account's management token (the old one stops at once).
	SetAccountToken(ctx context.Context, id, prefix, hash string, at time.Time) error
	// CreateGatewayOrg inserts o; ErrConflict when its id is taken (by any account: an
	// organization id is global, as X-Org-Id is).
	CreateGatewayOrg(ctx context.Context, o *gwstore.GatewayOrg) error
	GetGatewayOrg(ctx context.Context, accountID, orgID string) (*gwstore.GatewayOrg, error)
	ListGatewayOrgs(ctx context.Context, accountID string, opts svctype.ListOptions) (svctype.Page[gwstore.GatewayOrg], error)
	// UpdateGatewayOrg writes o's name and updated_at; ErrNotFound for another account's.
	UpdateGatewayOrg(ctx context.Context, o *gwstore.GatewayOrg) error
	CreateAPIKey(ctx context.Context, k *gwstore.APIKey) error
	GetAPIKey(ctx context.Context, accountID, orgID, id string) (*gwstore.APIKey, error)
	// APIKeyByHash finds the key whose secret hashes to hash.
	APIKeyByHash(ctx context.Context, hash string) (*gwstore.APIKey, error)
	// ListAPIKeys pages an organization's keys, newest first.
	ListAPIKeys(ctx context.Context, accountID, orgID string, opts svctype.ListOptions) (svctype.Page[gwstore.APIKey], error)
	// EndAPIKey sets a key's expires_at (a rotation's grace) or, with revoke, its
	// revoked_at, to at; ErrNotFound for another account's or organization's key.
	EndAPIKey(ctx context.Context, accountID, orgID, id string, at time.Time, revoke bool) error
	// AddUsage adds each delta's counts to its (org, day, class) row, in one transaction.
	AddUsage(ctx context.Context, deltas []gwstore.Usage) error
	// TakeTokens takes up to want tokens from a key's bucket shared by every gateway process
	// (holding burst, refilled at rate a second since its last take, full at first use) and
	// returns how many it took.
	TakeTokens(ctx context.Context, keyID string, want, rate, burst float64, now time.Time) (float64, error)
	// ListUsage returns an organization's usage rows of days from..to (YYYY-MM-DD,
	// inclusive), by day then class.
	ListUsage(ctx context.Context, orgID, from, to string) ([]gwstore.Usage, error)

	// PutSignInCode stores c as the one code of its (organization, email), replacing any
	// earlier one.
	PutSignInCode(ctx context.Context, c *gwstore.SignInCode) error
	// TrySignInCode counts one attempt at the (organization, email) code and returns it, when
	// it is unused, unexpired at now and has had fewer than maxAttempts; ErrNotFound otherwise.
	TrySignInCode(ctx context.Context, orgID, email string, maxAttempts int, now time.Time) (*gwstore.SignInCode, error)
	// UseSignInCode marks the code used; ErrConflict when it was used meanwhile.
	UseSignInCode(ctx context.Context, orgID, id string, now time.Time) error
	CreateSession(ctx context.Context, s *gwstore.Session) error
	// SessionByHash finds the session whose token hashes to hash, with its key's end.
	SessionByHash(ctx context.Context, hash string) (*gwstore.Session, error)
	// EndSession removes an organization's session.
	EndSession(ctx context.Context, orgID, hash string) error
	// PutOrgUser sets a person's approver roles in an organization.
	PutOrgUser(ctx context.Context, u *gwstore.OrgUser) error
	GetOrgUser(ctx context.Context, orgID, email string) (*gwstore.OrgUser, error)
	// ListOrgUsers pages an organization's people by email.
	ListOrgUsers(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[gwstore.OrgUser], error)
	DeleteOrgUser(ctx context.Context, orgID, email string) error
	// PutSignInPolicy sets who may sign in to an organization's SDK.
	PutSignInPolicy(ctx context.Context, p *gwstore.SignInPolicy) error
	// GetSignInPolicy is an organization's policy; ErrNotFound when it never set one.
	GetSignInPolicy(ctx context.Context, orgID string) (*gwstore.SignInPolicy, error)

	// Operator administration: above accounts, so these reads name no account.
	// ListAccounts pages every account, oldest first.
	ListAccounts(ctx context.Context, opts svctype.ListOptions) (svctype.Page[gwstore.Account], error)
	// SetAccountStatus suspends or resumes an account; SetAccountTier puts it on a tier.
	SetAccountStatus(ctx context.Context, id, status string, at time.Time) error
	SetAccountTier(ctx context.Context, id, tier string, at time.Time) error
	PutTier(ctx context.Context, t *gwstore.Tier) error
	GetTier(ctx context.Context, name string) (*gwstore.Tier, error)
	ListTiers(ctx context.Context) ([]gwstore.Tier, error)
	CreateLicense(ctx context.Context, l *gwstore.IssuedLicense) error
	// GetLicense finds a license by id (any account's: validation and the operator).
	GetLicense(ctx context.Context, id string) (*gwstore.IssuedLicense, error)
	// ListLicenses lists an account's licenses, newest first ("" : every account's).
	ListLicenses(ctx context.Context, accountID string) ([]gwstore.IssuedLicense, error)
	RevokeLicense(ctx context.Context, id string, at time.Time) error
	// UsageByAccount sums the usage of days from..to of each account's organizations.
	UsageByAccount(ctx context.Context, from, to string) ([]gwstore.AccountUsage, error)
	// RunsStartedOn is an organization's runs started on day, as flushed so far.
	RunsStartedOn(ctx context.Context, orgID, day string) (int64, error)

	// Ready is nil when the database answers and has every migration of this build, the
	// engine's and the gateway's, applied: GET /readyz.
	Ready(ctx context.Context) error
}

// ready is the store's readiness as the probes read it (runtime.RegisterProbes): the
// gateway's migrations missing are migrations_pending, as the engine's are.
func (s *Server) ready(ctx context.Context) error {
	err := s.store.Ready(ctx)
	if errors.Is(err, gwstore.ErrSchemaBehind) {
		return fmt.Errorf("%w: %w", engine.ErrSchemaBehind, err)
	}
	return err
}
