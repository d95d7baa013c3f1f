package gwstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/sqlpage"
)

// The gateway's people (sign-in codes, SDK sessions, approver roles) and its operator's
// records (tiers, issued licenses).

type signInCodeModel struct {
	bun.BaseModel `bun:"table:gateway_codes,alias:gc"`

	ID        string     `bun:"id,notnull,unique"`
	OrgID     string     `bun:"org_id,pk"`
	Email     string     `bun:"email,pk"`
	KeyID     string     `bun:"key_id,notnull"`
	Salt      string     `bun:"salt,notnull"`
	Hash      string     `bun:"hash,notnull"`
	Attempts  int        `bun:"attempts,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	UsedAt    *time.Time `bun:"used_at"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
}

// PutSignInCode stores c as its (organization, email)'s one code.
func (s *Store) PutSignInCode(ctx context.Context, c *SignInCode) error {
	c.CreatedAt = orNow(c.CreatedAt, now())
	m := &signInCodeModel{ID: c.ID, OrgID: c.OrgID, Email: c.Email, KeyID: c.KeyID, Salt: c.Salt, Hash: c.Hash,
		ExpiresAt: c.ExpiresAt, CreatedAt: c.CreatedAt}
	_, err := s.w.NewInsert().Model(m).On("CONFLICT (org_id, email) DO UPDATE").
		Set("id = EXCLUDED.id").Set("key_id = EXCLUDED.key_id").Set("salt = EXCLUDED.salt").Set("hash = EXCLUDED.hash").
		Set("attempts = 0").Set("expires_at = EXCLUDED.expires_at").Set("used_at = NULL").Set("created_at = EXCLUDED.created_at").
		Exec(ctx)
	return wrap("put sign-in code", err)
}

// TrySignInCode counts an attempt at a live code and returns it: one statement, so that
// concurrent tries are each counted and none passes the limit.
func (s *Store) TrySignInCode(ctx context.Context, orgID, email string, maxAttempts int, at time.Time) (*SignInCode, error) {
	var ms []signInCodeModel
	err := s.w.NewUpdate().Model(&ms).Set("attempts = attempts + 1").
		Where("org_id = ? AND email = ? AND used_at IS NULL AND expires_at > ? AND attempts < ?", orgID, email, at, maxAttempts).
		Returning("*").Scan(ctx)
	if err != nil {
		return nil, wrap("try sign-in code", err)
	}
	if len(ms) == 0 {
		return nil, notFound("try sign-in code")
	}
	m := ms[0]
	return &SignInCode{ID: m.ID, OrgID: m.OrgID, KeyID: m.KeyID, Email: m.Email, Salt: m.Salt, Hash: m.Hash,
		Attempts: m.Attempts, ExpiresAt: m.ExpiresAt.UTC(), CreatedAt: m.CreatedAt.UTC()}, nil
}

// UseSignInCode marks a code used, once.
func (s *Store) UseSignInCode(ctx context.Context, orgID, id string, at time.Time) error {
	const op = "use sign-in code"
	res, err := s.w.NewUpdate().Model((*signInCodeModel)(nil)).Set("used_at = ?", at).
		Where("org_id = ? AND id = ? AND used_at IS NULL", orgID, id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
}

type sessionModel struct {
	bun.BaseModel `bun:"table:gateway_sessions,alias:gs"`

	Hash      string    `bun:"hash,pk"`
	Prefix    string    `bun:"prefix,notnull"`
	OrgID     string    `bun:"org_id,notnull"`
	KeyID     string    `bun:"key_id,notnull"`
	Email     string    `bun:"email,notnull"`
	FormID    string    `bun:"form_id,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// CreateSession inserts ss.
func (s *Store) CreateSession(ctx context.Context, ss *Session) error {
	ss.CreatedAt = orNow(ss.CreatedAt, now())
	_, err := s.w.NewInsert().Model(&sessionModel{Hash: ss.Hash, Prefix: ss.Prefix, OrgID: ss.OrgID, KeyID: ss.KeyID, Email: ss.Email,
		FormID: ss.FormID, CreatedAt: ss.CreatedAt, ExpiresAt: ss.ExpiresAt}).Exec(ctx)
	return wrap("create session", err)
}

// SessionByHash finds a session and when its publishable key ended.
func (s *Store) SessionByHash(ctx context.Context, hash string) (*Session, error) {
	var m struct {
		sessionModel  `bun:",extend"`
		KeyRevoked    *time.Time `bun:"key_revoked"`
		KeyExpires    *time.Time `bun:"key_expires"`
		AccountStatus string     `bun:"account_status"`
	}
	err := s.r.NewSelect().Model(&m).ColumnExpr("gs.*").
		ColumnExpr("gk.revoked_at AS key_revoked, gk.expires_at AS key_expires, COALESCE(ga.status, '') AS account_status").
		Join("LEFT JOIN gateway_keys AS gk ON gk.id = gs.key_id AND gk.org_id = gs.org_id").
		Join("LEFT JOIN gateway_orgs AS go ON go.id = gs.org_id").
		Join("LEFT JOIN gateway_accounts AS ga ON ga.id = go.account_id").Where("gs.hash = ?", hash).Scan(ctx)
	if err != nil {
		return nil, wrap("session by hash", err)
	}
	ss := &Session{Hash: m.Hash, Prefix: m.Prefix, OrgID: m.OrgID, KeyID: m.KeyID, Email: m.Email,
		FormID: m.FormID, CreatedAt: m.CreatedAt.UTC(), ExpiresAt: m.ExpiresAt.UTC(), AccountStatus: m.AccountStatus}
	for _, t := range []*time.Time{m.KeyRevoked, m.KeyExpires} {
		if t != nil && (ss.KeyEnded == nil || t.Before(*ss.KeyEnded)) {
			ss.KeyEnded = utcPtr(t)
		}
	}
	return ss, nil
}

// EndSession removes an organization's session.
func (s *Store) EndSession(ctx context.Context, orgID, hash string) error {
	const op = "end session"
	res, err := s.w.NewDelete().Model((*sessionModel)(nil)).Where("org_id = ? AND hash = ?", orgID, hash).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

type orgUserModel struct {
	bun.BaseModel `bun:"table:gateway_org_users,alias:gou"`

	OrgID         string    `bun:"org_id,pk"`
	Email         string    `bun:"email,pk"`
	ApproverRoles string    `bun:"approver_roles,notnull"`
	UpdatedAt     time.Time `bun:"updated_at,notnull"`
}

func (m *orgUserModel) toUser() (OrgUser, error) {
	u := OrgUser{OrgID: m.OrgID, Email: m.Email, UpdatedAt: m.UpdatedAt.UTC()}
	return u, json.Unmarshal([]byte(m.ApproverRoles), &u.ApproverRoles)
}

// PutOrgUser sets a person's approver roles.
func (s *Store) PutOrgUser(ctx context.Context, u *OrgUser) error {
	u.UpdatedAt = orNow(u.UpdatedAt, now())
	if u.ApproverRoles == nil {
		u.ApproverRoles = []string{}
	}
	b, err := json.Marshal(u.ApproverRoles)
	if err != nil {
		return err
	}
	_, err = s.w.NewInsert().Model(&orgUserModel{OrgID: u.OrgID, Email: u.Email, ApproverRoles: string(b), UpdatedAt: u.UpdatedAt}).
		On("CONFLICT (org_id, email) DO UPDATE").Set("approver_roles = EXCLUDED.approver_roles").
		Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return wrap("put org user", err)
}

// GetOrgUser returns one of an organization's people.
func (s *Store) GetOrgUser(ctx context.Context, orgID, email string) (*OrgUser, error) {
	var m orgUserModel
	if err := s.r.NewSelect().Model(&m).Where("org_id = ? AND email = ?", orgID, email).Scan(ctx); err != nil {
		return nil, wrap("get org user", err)
	}
	u, err := m.toUser()
	return &u, wrap("get org user", err)
}

// ListOrgUsers pages an organization's people by email; the cursor is the last email.
func (s *Store) ListOrgUsers(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[OrgUser], error) {
	limit := pageLimit(opts)
	sel := s.r.NewSelect().Model((*orgUserModel)(nil)).Where("org_id = ?", orgID).OrderExpr("email ASC").Limit(int64(limit + 1))
	if opts.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
		if err != nil || len(after) == 0 {
			return svctype.Page[OrgUser]{}, malformedCursor()
		}
		sel = sel.Where("email > ?", string(after))
	}
	var ms []orgUserModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return svctype.Page[OrgUser]{}, wrap("list org users", err)
	}
	page, err := sqlpage.Of(ms, limit, func(m *orgUserModel) string { return base64.RawURLEncoding.EncodeToString([]byte(m.Email)) },
		(*orgUserModel).toUser)
	return page, wrap("list org users", err)
}

// DeleteOrgUser removes a person's roles.
func (s *Store) DeleteOrgUser(ctx context.Context, orgID, email string) error {
	const op = "delete org user"
	res, err := s.w.NewDelete().Model((*orgUserModel)(nil)).Where("org_id = ? AND email = ?", orgID, email).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// ListAccounts pages every account, oldest first.
func (s *Store) ListAccounts(ctx context.Context, opts svctype.ListOptions) (svctype.Page[Account], error) {
	sel := s.r.NewSelect().Model((*accountModel)(nil))
	return pageByCreated(ctx, "list accounts", sel, false, opts,
		func(m *accountModel) (time.Time, string) { return m.CreatedAt, m.ID },
		func(m *accountModel) (Account, error) { return *m.toAccount(), nil })
}

// SetAccountStatus suspends or resumes an account.
func (s *Store) SetAccountStatus(ctx context.Context, id, status string, at time.Time) error {
	return s.setAccount(ctx, "set account status", id, "status", status, at)
}

// SetAccountTier puts an account on a tier.
func (s *Store) SetAccountTier(ctx context.Context, id, tier string, at time.Time) error {
	return s.setAccount(ctx, "set account tier", id, "tier", tier, at)
}

func (s *Store) setAccount(ctx context.Context, op, id, col, value string, at time.Time) error {
	res, err := s.w.NewUpdate().Model((*accountModel)(nil)).Set("? = ?", bun.Ident(col), value).Set("updated_at = ?", at).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

type tierModel struct {
	bun.BaseModel `bun:"table:gateway_tiers,alias:gt"`

	Name        string    `bun:"name,pk"`
	Rate        float64   `bun:"rate,notnull"`
	Burst       int       `bun:"burst,notnull"`
	RunsPerDay  int64     `bun:"runs_per_day,notnull"`
	Features    string    `bun:"features,notnull"`
	Description string    `bun:"description,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

func (m *tierModel) toTier() (Tier, error) {
	t := Tier{Name: m.Name, Rate: m.Rate, Burst: m.Burst, RunsPerDay: m.RunsPerDay, Description: m.Description, UpdatedAt: m.UpdatedAt.UTC()}
	return t, json.Unmarshal([]byte(m.Features), &t.Features)
}

// PutTier creates or replaces a tier.
func (s *Store) PutTier(ctx context.Context, t *Tier) error {
	t.UpdatedAt = orNow(t.UpdatedAt, now())
	if t.Features == nil {
		t.Features = []string{}
	}
	b, err := json.Marshal(t.Features)
	if err != nil {
		return err
	}
	_, err = s.w.NewInsert().Model(&tierModel{Name: t.Name, Rate: t.Rate, Burst: t.Burst, RunsPerDay: t.RunsPerDay, Features: string(b),
		Description: t.Description, UpdatedAt: t.UpdatedAt}).
		On("CONFLICT (name) DO UPDATE").Set("rate = EXCLUDED.rate").Set("burst = EXCLUDED.burst").
		Set("runs_per_day = EXCLUDED.runs_per_day").Set("features = EXCLUDED.features").
		Set("description = EXCLUDED.description").Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return wrap("put tier", err)
}

// GetTier returns a tier by name.
func (s *Store) GetTier(ctx context.Context, name string) (*Tier, error) {
	var m tierModel
	if err := s.r.NewSelect().Model(&m).Where("name = ?", name).Scan(ctx); err != nil {
		return nil, wrap("get tier", err)
	}
	t, err := m.toTier()
	return &t, wrap("get tier", err)
}

// ListTiers lists every tier by name.
func (s *Store) ListTiers(ctx context.Context) ([]Tier, error) {
	var ms []tierModel
	if err := s.r.NewSelect().Model(&ms).OrderExpr("name ASC").Scan(ctx); err != nil {
		return nil, wrap("list tiers", err)
	}
	out := make([]Tier, 0, len(ms))
	for i := range ms {
		t, err := ms[i].toTier()
		if err != nil {
			return nil, wrap("list tiers", err)
		}
		out = append(out, t)
	}
	return out, nil
}

type licenseModel struct {
	bun.BaseModel `bun:"table:gateway_licenses,alias:gl"`

	ID        string     `bun:"id,pk"`
	AccountID string     `bun:"account_id,notnull"`
	Licensee  string     `bun:"licensee,notnull"`
	Seats     int        `bun:"seats,notnull"`
	Features  string     `bun:"features,notnull"`
	NotBefore time.Time  `bun:"not_before,notnull"`
	ExpiresAt time.Time  `bun:"expires_at,notnull"`
	License   string     `bun:"license,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

func (m *licenseModel) toLicense() (IssuedLicense, error) {
	l := IssuedLicense{ID: m.ID, AccountID: m.AccountID, Licensee: m.Licensee, Seats: m.Seats, NotBefore: m.NotBefore.UTC(),
		ExpiresAt: m.ExpiresAt.UTC(), License: m.License, CreatedAt: m.CreatedAt.UTC(), RevokedAt: utcPtr(m.RevokedAt)}
	return l, json.Unmarshal([]byte(m.Features), &l.Features)
}

// CreateLicense records an issued license.
func (s *Store) CreateLicense(ctx context.Context, l *IssuedLicense) error {
	l.CreatedAt = orNow(l.CreatedAt, now())
	if l.Features == nil {
		l.Features = []string{}
	}
	b, err := json.Marshal(l.Features)
	if err != nil {
		return err
	}
	_, err = s.w.NewInsert().Model(&licenseModel{ID: l.ID, AccountID: l.AccountID, Licensee: l.Licensee, Seats: l.Seats, Features: string(b),
		NotBefore: l.NotBefore, ExpiresAt: l.ExpiresAt, License: l.License, CreatedAt: l.CreatedAt}).Exec(ctx)
	return wrap("create license", err)
}

// GetLicense finds a license by id.
func (s *Store) GetLicense(ctx context.Context, id string) (*IssuedLicense, error) {
	var m licenseModel
	if err := s.r.NewSelect().Model(&m).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, wrap("get license", err)
	}
	l, err := m.toLicense()
	return &l, wrap("get license", err)
}

// ListLicenses lists an account's licenses (every account's for ""), newest first.
func (s *Store) ListLicenses(ctx context.Context, accountID string) ([]IssuedLicense, error) {
	var ms []licenseModel
	sel := s.r.NewSelect().Model(&ms).OrderExpr("created_at DESC, id DESC")
	if accountID != "" {
		sel = sel.Where("account_id = ?", accountID)
	}
	if err := sel.Scan(ctx); err != nil {
		return nil, wrap("list licenses", err)
	}
	out := make([]IssuedLicense, 0, len(ms))
	for i := range ms {
		l, err := ms[i].toLicense()
		if err != nil {
			return nil, wrap("list licenses", err)
		}
		out = append(out, l)
	}
	return out, nil
}

// RevokeLicense marks a license revoked (once: a second revocation keeps the first time).
func (s *Store) RevokeLicense(ctx context.Context, id string, at time.Time) error {
	const op = "revoke license"
	res, err := s.w.NewUpdate().Model((*licenseModel)(nil)).Set("revoked_at = COALESCE(revoked_at, ?)", at).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// UsageByAccount sums each account's organizations' usage of days from..to.
func (s *Store) UsageByAccount(ctx context.Context, from, to string) ([]AccountUsage, error) {
	var out []AccountUsage
	err := s.r.NewSelect().TableExpr("gateway_usage AS gu").Join("JOIN gateway_orgs AS go ON go.id = gu.org_id").
		ColumnExpr("go.account_id AS account_id").
		ColumnExpr("SUM(gu.requests) AS requests, SUM(gu.rate_limited) AS rate_limited, SUM(gu.runs_started) AS runs_started").
		Where("gu.day >= ? AND gu.day <= ?", from, to).GroupExpr("go.account_id").OrderExpr("go.account_id ASC").Scan(ctx, &out)
	if err != nil {
		return nil, wrap("usage by account", err)
	}
	if out == nil {
		out = []AccountUsage{}
	}
	return out, nil
}

// RunsStartedOn is an organization's runs started on day.
func (s *Store) RunsStartedOn(ctx context.Context, orgID, day string) (int64, error) {
	var n int64
	err := s.r.NewSelect().Model((*usageModel)(nil)).ColumnExpr("COALESCE(SUM(runs_started), 0)").
		Where("org_id = ? AND day = ?", orgID, day).Scan(ctx, &n)
	return n, wrap("runs started on", err)
}

type signInPolicyModel struct {
	bun.BaseModel `bun:"table:gateway_signin_policies,alias:gsp"`

	OrgID     string    `bun:"org_id,pk"`
	Anyone    bool      `bun:"anyone,notnull"`
	Domains   string    `bun:"domains,type:text,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

// PutSignInPolicy sets an organization's sign-in policy.
func (s *Store) PutSignInPolicy(ctx context.Context, p *SignInPolicy) error {
	p.UpdatedAt = orNow(p.UpdatedAt, now())
	if p.Domains == nil {
		p.Domains = []string{}
	}
	b, err := json.Marshal(p.Domains)
	if err != nil {
		return err
	}
	_, err = s.w.NewInsert().Model(&signInPolicyModel{OrgID: p.OrgID, Anyone: p.Anyone, Domains: string(b), UpdatedAt: p.UpdatedAt}).
		On("CONFLICT (org_id) DO UPDATE").Set("anyone = EXCLUDED.anyone").Set("domains = EXCLUDED.domains").
		Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return wrap("put sign-in policy", err)
}

// GetSignInPolicy reads an organization's sign-in policy.
func (s *Store) GetSignInPolicy(ctx context.Context, orgID string) (*SignInPolicy, error) {
	var m signInPolicyModel
	if err := s.r.NewSelect().Model(&m).Where("org_id = ?", orgID).Scan(ctx); err != nil {
		return nil, wrap("get sign-in policy", err)
	}
	p := &SignInPolicy{OrgID: m.OrgID, Anyone: m.Anyone, UpdatedAt: m.UpdatedAt.UTC()}
	return p, wrap("get sign-in policy", json.Unmarshal([]byte(m.Domains), &p.Domains))
}
