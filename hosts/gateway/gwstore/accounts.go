package gwstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// The gateway's accounts, organizations and keys.

type accountModel struct {
	bun.BaseModel `bun:"table:gateway_accounts,alias:ga"`

	ID          string    `bun:"id,pk"`
	Email       string    `bun:"email,notnull,unique"`
	Name        string    `bun:"name,notnull"`
	Status      string    `bun:"status,notnull"`
	Tier        string    `bun:"tier,notnull"`
	TokenPrefix string    `bun:"token_prefix,notnull"`
	TokenHash   string    `bun:"token_hash,notnull,unique"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

func (m *accountModel) toAccount() *Account {
	return &Account{ID: m.ID, Email: m.Email, Name: m.Name, Status: m.Status, Tier: m.Tier, TokenPrefix: m.TokenPrefix,
		TokenHash: m.TokenHash, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}
}

type gatewayOrgModel struct {
	bun.BaseModel `bun:"table:gateway_orgs,alias:go"`

	ID        string    `bun:"id,pk"`
	AccountID string    `bun:"account_id,notnull"`
	Name      string    `bun:"name,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

func (m *gatewayOrgModel) toOrg() (GatewayOrg, error) {
	return GatewayOrg{ID: m.ID, AccountID: m.AccountID, Name: m.Name, CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}, nil
}

type apiKeyModel struct {
	bun.BaseModel `bun:"table:gateway_keys,alias:gk"`

	ID        string     `bun:"id,pk"`
	AccountID string     `bun:"account_id,notnull"`
	OrgID     string     `bun:"org_id,notnull"`
	Kind      string     `bun:"kind,notnull"`
	Prefix    string     `bun:"prefix,notnull"`
	Hash      string     `bun:"hash,notnull,unique"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	ExpiresAt *time.Time `bun:"expires_at"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

func (m *apiKeyModel) toKey() (APIKey, error) {
	k := APIKey{ID: m.ID, AccountID: m.AccountID, OrgID: m.OrgID, Kind: m.Kind, Prefix: m.Prefix, Hash: m.Hash,
		CreatedAt: m.CreatedAt.UTC(), ExpiresAt: utcPtr(m.ExpiresAt), RevokedAt: utcPtr(m.RevokedAt)}
	return k, nil
}

// CreateAccount inserts a; ErrConflict when its email is taken.
func (s *Store) CreateAccount(ctx context.Context, a *Account) error {
	t := now()
	a.CreatedAt = orNow(a.CreatedAt, t)
	a.UpdatedAt = orNow(a.UpdatedAt, a.CreatedAt)
	m := &accountModel{ID: a.ID, Email: a.Email, Name: a.Name, Status: a.Status, Tier: a.Tier, TokenPrefix: a.TokenPrefix, TokenHash: a.TokenHash,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	_, err := s.w.NewInsert().Model(m).Exec(ctx)
	return wrap("create account", err)
}

// GetAccount returns an account by id.
func (s *Store) GetAccount(ctx context.Context, id string) (*Account, error) {
	var m accountModel
	if err := s.w.NewSelect().Model(&m).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, wrap("get account", err)
	}
	return m.toAccount(), nil
}

// AccountByToken finds the account whose management token hashes to hash.
func (s *Store) AccountByToken(ctx context.Context, hash string) (*Account, error) {
	var m accountModel
	if err := s.r.NewSelect().Model(&m).Where("token_hash = ?", hash).Scan(ctx); err != nil {
		return nil, wrap("account by token", err)
	}
	return m.toAccount(), nil
}

// SetAccountToken replaces an account's management token.
func (s *Store) SetAccountToken(ctx context.Context, id, prefix, hash string, at time.Time) error {
	const op = "set account token"
	res, err := s.w.NewUpdate().Model((*accountModel)(nil)).Set("token_prefix = ?", prefix).Set("token_hash = ?", hash).
		Set("updated_at = ?", at).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// CreateGatewayOrg inserts o; ErrConflict when its id is taken.
func (s *Store) CreateGatewayOrg(ctx context.Context, o *GatewayOrg) error {
	t := now()
	o.CreatedAt = orNow(o.CreatedAt, t)
	o.UpdatedAt = orNow(o.UpdatedAt, o.CreatedAt)
	_, err := s.w.NewInsert().Model(&gatewayOrgModel{ID: o.ID, AccountID: o.AccountID, Name: o.Name, CreatedAt: o.CreatedAt,
		UpdatedAt: o.UpdatedAt}).Exec(ctx)
	return wrap("create gateway org", err)
}

// GetGatewayOrg returns one of the account's organizations.
func (s *Store) GetGatewayOrg(ctx context.Context, accountID, orgID string) (*GatewayOrg, error) {
	var m gatewayOrgModel
	if err := s.w.NewSelect().Model(&m).Where("account_id = ? AND id = ?", accountID, orgID).Scan(ctx); err != nil {
		return nil, wrap("get gateway org", err)
	}
	o, _ := m.toOrg()
	return &o, nil
}

// ListGatewayOrgs pages the account's organizations, oldest first.
func (s *Store) ListGatewayOrgs(ctx context.Context, accountID string, opts svctype.ListOptions) (svctype.Page[GatewayOrg], error) {
	sel := s.r.NewSelect().Model((*gatewayOrgModel)(nil)).Where("account_id = ?", accountID)
	return pageByCreated(ctx, "list gateway orgs", sel, false, opts,
		func(m *gatewayOrgModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*gatewayOrgModel).toOrg)
}

// UpdateGatewayOrg writes o's name.
func (s *Store) UpdateGatewayOrg(ctx context.Context, o *GatewayOrg) error {
	const op = "update gateway org"
	o.UpdatedAt = orNow(o.UpdatedAt, now())
	res, err := s.w.NewUpdate().Model((*gatewayOrgModel)(nil)).Set("name = ?", o.Name).Set("updated_at = ?", o.UpdatedAt).
		Where("account_id = ? AND id = ?", o.AccountID, o.ID).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// CreateAPIKey inserts k.
func (s *Store) CreateAPIKey(ctx context.Context, k *APIKey) error {
	k.CreatedAt = orNow(k.CreatedAt, now())
	_, err := s.w.NewInsert().Model(&apiKeyModel{ID: k.ID, AccountID: k.AccountID, OrgID: k.OrgID, Kind: k.Kind, Prefix: k.Prefix,
		Hash: k.Hash, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt}).Exec(ctx)
	return wrap("create api key", err)
}

// GetAPIKey returns one of an organization's keys.
func (s *Store) GetAPIKey(ctx context.Context, accountID, orgID, id string) (*APIKey, error) {
	var m apiKeyModel
	if err := s.w.NewSelect().Model(&m).Where("account_id = ? AND org_id = ? AND id = ?", accountID, orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get api key", err)
	}
	k, _ := m.toKey()
	return &k, nil
}

// APIKeyByHash finds the key whose secret hashes to hash.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*APIKey, error) {
	var m struct {
		apiKeyModel   `bun:",extend"`
		AccountStatus string `bun:"account_status"`
		Tier          string `bun:"tier"`
	}
	err := s.r.NewSelect().Model(&m).ColumnExpr("gk.*").ColumnExpr("ga.status AS account_status, ga.tier AS tier").
		Join("JOIN gateway_accounts AS ga ON ga.id = gk.account_id").Where("gk.hash = ?", hash).Scan(ctx)
	if err != nil {
		return nil, wrap("api key by hash", err)
	}
	k, _ := m.toKey()
	k.AccountStatus, k.Tier = m.AccountStatus, m.Tier
	return &k, nil
}

// ListAPIKeys pages an organization's keys, newest first.
func (s *Store) ListAPIKeys(ctx context.Context, accountID, orgID string, opts svctype.ListOptions) (svctype.Page[APIKey], error) {
	sel := s.r.NewSelect().Model((*apiKeyModel)(nil)).Where("account_id = ? AND org_id = ?", accountID, orgID)
	return pageByCreated(ctx, "list api keys", sel, true, opts,
		func(m *apiKeyModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*apiKeyModel).toKey)
}

// EndAPIKey sets a key's expires_at, or its revoked_at.
func (s *Store) EndAPIKey(ctx context.Context, accountID, orgID, id string, at time.Time, revoke bool) error {
	const op = "end api key"
	col := "expires_at"
	if revoke {
		col = "revoked_at"
	}
	res, err := s.w.NewUpdate().Model((*apiKeyModel)(nil)).Set("? = ?", bun.Ident(col), at).
		Where("account_id = ? AND org_id = ? AND id = ?", accountID, orgID, id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

type usageModel struct {
	bun.BaseModel `bun:"table:gateway_usage,alias:gu"`

	OrgID       string `bun:"org_id,pk"`
	Day         string `bun:"day,pk"`
	Class       string `bun:"class,pk"`
	Requests    int64  `bun:"requests,notnull"`
	RateLimited int64  `bun:"rate_limited,notnull"`
	RunsStarted int64  `bun:"runs_started,notnull"`
}

// AddUsage adds each delta to its row.
func (s *Store) AddUsage(ctx context.Context, deltas []Usage) error {
	if len(deltas) == 0 {
		return nil
	}
	return s.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		for _, d := range deltas {
			m := &usageModel{OrgID: d.OrgID, Day: d.Day, Class: d.Class, Requests: d.Requests, RateLimited: d.RateLimited, RunsStarted: d.RunsStarted}
			_, err := db.NewInsert().Model(m).
				On("CONFLICT (org_id, day, class) DO UPDATE").
				Set("requests = gu.requests + EXCLUDED.requests").
				Set("rate_limited = gu.rate_limited + EXCLUDED.rate_limited").
				Set("runs_started = gu.runs_started + EXCLUDED.runs_started").
				Exec(ctx)
			if err != nil {
				return wrap("add usage", err)
			}
		}
		return nil
	})
}

type bucketModel struct {
	bun.BaseModel `bun:"table:gateway_buckets,alias:gb"`

	KeyID     string    `bun:"key_id,pk"`
	Tokens    float64   `bun:"tokens,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// TakeTokens takes up to want tokens from a key's shared bucket, in one short transaction
// holding the bucket's row (PostgreSQL FOR UPDATE; SQLite's one writer).
func (s *Store) TakeTokens(ctx context.Context, keyID string, want, rate, burst float64, at time.Time) (float64, error) {
	var took float64
	err := s.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		// A new bucket starts full. The row is made first so that concurrent first takers
		// queue on its lock: two that both saw no row would each take from a full bucket.
		full := bucketModel{KeyID: keyID, Tokens: burst, UpdatedAt: at}
		if _, err := db.NewInsert().Model(&full).On("CONFLICT (key_id) DO NOTHING").Exec(ctx); err != nil {
			return wrap("take tokens", err)
		}
		var m bucketModel
		sel := db.NewSelect().Model(&m).Where("key_id = ?", keyID)
		if s.postgres {
			sel = sel.For("UPDATE")
		}
		if err := sel.Scan(ctx); err != nil {
			return wrap("take tokens", err)
		}
		tokens := min(burst, m.Tokens+max(0, at.Sub(m.UpdatedAt).Seconds())*rate)
		took = max(0, min(want, tokens))
		_, err := db.NewUpdate().Model((*bucketModel)(nil)).Where("key_id = ?", keyID).
			Set("tokens = ?", tokens-took).Set("updated_at = ?", laterOf(at, m.UpdatedAt)).Exec(ctx)
		return wrap("take tokens", err)
	})
	return took, err
}

// ListUsage returns an organization's usage rows of days from..to.
func (s *Store) ListUsage(ctx context.Context, orgID, from, to string) ([]Usage, error) {
	var ms []usageModel
	err := s.r.NewSelect().Model(&ms).Where("org_id = ? AND day >= ? AND day <= ?", orgID, from, to).
		OrderExpr("day ASC, class ASC").Scan(ctx)
	if err != nil {
		return nil, wrap("list usage", err)
	}
	out := make([]Usage, 0, len(ms))
	for _, m := range ms {
		out = append(out, Usage{OrgID: m.OrgID, Day: m.Day, Class: m.Class, Requests: m.Requests, RateLimited: m.RateLimited, RunsStarted: m.RunsStarted})
	}
	return out, nil
}
