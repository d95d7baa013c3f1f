package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// OAuth connections (storage.OAuth): one row per connection, tokens sealed; and the
// authorization flows in progress, by the hash of their state. Every query names the org.

type oauthConnectionModel struct {
	bun.BaseModel `bun:"table:oauth_connections,alias:oc"`

	OrgID       string     `bun:"org_id,pk"`
	ID          string     `bun:"id,pk"`
	Provider    string     `bun:"provider"`
	Account     string     `bun:"account"`
	Scopes      string     `bun:"scopes,type:text"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	HasRefresh  bool       `bun:"has_refresh"`
	Source      string     `bun:"source"`
	Sealed      []byte     `bun:"sealed"`
	MasterKeyID string     `bun:"master_key_id"`
	Version     int64      `bun:"version"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}

func oauthConnectionToModel(c *svctype.OAuthConnection) (*oauthConnectionModel, error) {
	scopes := c.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	raw, err := json.Marshal(scopes)
	if err != nil {
		return nil, err
	}
	return &oauthConnectionModel{
		OrgID: c.OrgID, ID: c.ID, Provider: c.Provider, Account: c.Account, Scopes: string(raw),
		ExpiresAt: dbTimePtr(c.ExpiresAt), HasRefresh: c.HasRefreshToken, Source: c.Source,
		Sealed: c.Sealed, MasterKeyID: c.MasterKeyID, Version: c.Version,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}, nil
}

func (m *oauthConnectionModel) toConnection() (*svctype.OAuthConnection, error) {
	scopes := []string{}
	if err := json.Unmarshal([]byte(m.Scopes), &scopes); err != nil {
		return nil, fmt.Errorf("oauth connection %q: stored scopes: %w", m.ID, err)
	}
	return &svctype.OAuthConnection{
		ID: m.ID, OrgID: m.OrgID, Provider: m.Provider, Account: m.Account, Scopes: scopes,
		ExpiresAt: utcPtr(m.ExpiresAt), HasRefreshToken: m.HasRefresh, Source: m.Source,
		Sealed: m.Sealed, MasterKeyID: m.MasterKeyID, Version: m.Version,
		CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC(),
	}, nil
}

// InsertOAuthConnection inserts a connection at version 1; ErrConflict when the org has one
// of that provider and account.
func (q *querier) InsertOAuthConnection(ctx context.Context, c *svctype.OAuthConnection) error {
	const op = "insert oauth connection"
	c.CreatedAt = orNow(c.CreatedAt, q.now())
	c.UpdatedAt = orNow(c.UpdatedAt, c.CreatedAt)
	c.Version = 1
	m, err := oauthConnectionToModel(c)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return insertNew(ctx, q.w, op, m)
}

// ReplaceOAuthConnection overwrites the tokens and what describes them, optionally only
// over ifVersion.
func (q *querier) ReplaceOAuthConnection(ctx context.Context, c *svctype.OAuthConnection, ifVersion int64) error {
	const op = "replace oauth connection"
	c.UpdatedAt = orNow(c.UpdatedAt, q.now())
	m, err := oauthConnectionToModel(c)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	var stored oauthConnectionModel
	upd := q.w.NewUpdate().Model(&stored).
		Set("scopes = ?", m.Scopes).
		Set("expires_at = ?", m.ExpiresAt).
		Set("has_refresh = ?", m.HasRefresh).
		Set("source = ?", m.Source).
		Set("sealed = ?", m.Sealed).
		Set("master_key_id = ?", m.MasterKeyID).
		Set("updated_at = ?", m.UpdatedAt).
		Set("version = version + 1").
		Where("org_id = ? AND id = ?", c.OrgID, c.ID)
	if ifVersion != 0 {
		upd = upd.Where("version = ?", ifVersion)
	}
	err = upd.Returning("version, created_at").Scan(ctx)
	if err == nil {
		c.Version, c.CreatedAt = stored.Version, stored.CreatedAt.UTC()
		return nil
	}
	err = wrap(op, err)
	if ifVersion != 0 && errors.Is(err, storage.ErrNotFound) {
		// No row at that version: gone, or written by someone else first.
		if _, gerr := q.GetOAuthConnection(ctx, c.OrgID, c.ID); gerr != nil {
			return gerr
		}
		return conflict(op)
	}
	return err
}

func (q *querier) GetOAuthConnection(ctx context.Context, orgID, id string) (*svctype.OAuthConnection, error) {
	var m oauthConnectionModel
	if err := q.r.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get oauth connection", err)
	}
	return m.toConnection()
}

func (q *querier) FindOAuthConnection(ctx context.Context, orgID, provider, account string) (*svctype.OAuthConnection, error) {
	var m oauthConnectionModel
	err := q.r.NewSelect().Model(&m).
		Where("org_id = ? AND provider = ? AND account = ?", orgID, provider, account).
		Scan(ctx)
	if err != nil {
		return nil, wrap("find oauth connection", err)
	}
	return m.toConnection()
}

// ListOAuthConnections pages by (provider, account), which is unique in an org.
func (q *querier) ListOAuthConnections(ctx context.Context, orgID string, f storage.OAuthConnectionFilter) (svctype.Page[svctype.OAuthConnection], error) {
	const op = "list oauth connections"
	var page svctype.Page[svctype.OAuthConnection]
	limit := pageLimit(f.ListOptions)
	sel := q.r.NewSelect().Model((*oauthConnectionModel)(nil)).
		Where("org_id = ?", orgID).
		Order("provider", "account").
		Limit(int64(limit + 1))
	if f.Provider != "" {
		sel = sel.Where("provider = ?", f.Provider)
	}
	if f.NotKeyID != "" {
		sel = sel.Where("master_key_id <> ?", f.NotKeyID)
	}
	if f.Cursor != "" {
		parts, err := decodeCursor(f.Cursor, 2)
		if err != nil {
			return page, err
		}
		sel = sel.Where("(provider > ? OR (provider = ? AND account > ?))", parts[0], parts[0], parts[1])
	}
	var ms []oauthConnectionModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return page, wrap(op, err)
	}
	page, err := pageOf(ms, limit, func(m *oauthConnectionModel) string { return encodeCursor(m.Provider, m.Account) },
		valueOf((*oauthConnectionModel).toConnection))
	if err != nil {
		return page, wrap(op, err)
	}
	return page, nil
}

func (q *querier) DeleteOAuthConnection(ctx context.Context, orgID, id string) error {
	const op = "delete oauth connection"
	res, err := q.w.NewDelete().Model((*oauthConnectionModel)(nil)).
		Where("org_id = ? AND id = ?", orgID, id).
		Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// ListOAuthConnectionOrgs pages the organizations that hold connections, by id. It selects
// org_id only: rotation goes organization by organization, and every read of tokens names
// one.
func (q *querier) ListOAuthConnectionOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error) {
	return sealedOrgs[oauthConnectionModel](ctx, q, "list oauth connection organizations", "", f)
}

// ResealOAuthConnection swaps the sealed tokens if the row is still at old's version with
// old's bytes, leaving version and updated_at alone.
func (q *querier) ResealOAuthConnection(ctx context.Context, old *svctype.OAuthConnection, sealed []byte, keyID string) error {
	const op = "reseal oauth connection"
	res, err := q.w.NewUpdate().Model((*oauthConnectionModel)(nil)).
		Set("sealed = ?", sealed).
		Set("master_key_id = ?", keyID).
		Where("org_id = ? AND id = ? AND version = ? AND sealed = ?", old.OrgID, old.ID, old.Version, old.Sealed).
		Exec(ctx)
	return resealOutcome(op, res, err, func() error { _, err := q.GetOAuthConnection(ctx, old.OrgID, old.ID); return err })
}

type oauthStateModel struct {
	bun.BaseModel `bun:"table:oauth_states,alias:os"`

	OrgID       string    `bun:"org_id,pk"`
	StateHash   string    `bun:"state_hash,pk"`
	Provider    string    `bun:"provider"`
	Account     string    `bun:"account"`
	RedirectURL string    `bun:"redirect_url"`
	ExpiresAt   time.Time `bun:"expires_at"`
	CreatedAt   time.Time `bun:"created_at"`
}

// CreateOAuthState inserts a state; the org's expired states go in the same transaction.
func (q *querier) CreateOAuthState(ctx context.Context, s *svctype.OAuthState) error {
	const op = "create oauth state"
	s.CreatedAt = orNow(s.CreatedAt, q.now())
	m := &oauthStateModel{
		OrgID: s.OrgID, StateHash: s.Hash, Provider: s.Provider, Account: s.Account,
		RedirectURL: s.RedirectURL, ExpiresAt: dbTime(s.ExpiresAt), CreatedAt: s.CreatedAt,
	}
	return q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		if _, err := db.NewDelete().Model((*oauthStateModel)(nil)).
			Where("org_id = ? AND expires_at <= ?", s.OrgID, s.CreatedAt).
			Exec(ctx); err != nil {
			return wrap(op, err)
		}
		_, err := db.NewInsert().Model(m).Exec(ctx)
		return wrap(op, err)
	})
}

// TakeOAuthState deletes the state and returns it when it was unexpired: one statement, so
// two takers cannot both get it.
func (q *querier) TakeOAuthState(ctx context.Context, orgID, hash string, at time.Time) (*svctype.OAuthState, error) {
	const op = "take oauth state"
	var ms []oauthStateModel
	err := q.w.NewDelete().Model(&ms).
		Where("org_id = ? AND state_hash = ?", orgID, hash).
		Returning("*").
		Scan(ctx)
	if err != nil {
		return nil, wrap(op, err)
	}
	if len(ms) == 0 || !ms[0].ExpiresAt.After(dbTime(at)) {
		return nil, notFound(op) // an expired state is deleted as well
	}
	m := ms[0]
	return &svctype.OAuthState{
		OrgID: m.OrgID, Hash: m.StateHash, Provider: m.Provider, Account: m.Account,
		RedirectURL: m.RedirectURL, ExpiresAt: m.ExpiresAt.UTC(), CreatedAt: m.CreatedAt.UTC(),
	}, nil
}
