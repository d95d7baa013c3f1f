package gwstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Migration 20261124000140: the gateway's accounts, organizations and keys, usage and the
// shared rate-limit buckets. Models frozen as of this migration.

var migration20261124000140 = migration{
	name:    "20261124000140",
	comment: "gateway accounts, orgs, keys and usage",
	up: func(ctx context.Context, tx bun.Tx, _ bool) error {
		if err := createTables(ctx, tx, (*v14Account)(nil), (*v14GatewayOrg)(nil), (*v14APIKey)(nil), (*v14Usage)(nil), (*v14Bucket)(nil)); err != nil {
			return err
		}
		if _, err := tx.NewCreateIndex().Model((*v14GatewayOrg)(nil)).Index("gateway_orgs_account").IfNotExists().
			Column("account_id", "created_at", "id").Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewCreateIndex().Model((*v14APIKey)(nil)).Index("gateway_keys_org").IfNotExists().
			Column("account_id", "org_id", "created_at", "id").Exec(ctx)
		return err
	},
}

type v14Account struct {
	bun.BaseModel `bun:"table:gateway_accounts"`

	ID          string    `bun:"id,pk"`
	Email       string    `bun:"email,notnull,unique"`
	Name        string    `bun:"name,notnull"`
	Status      string    `bun:"status,notnull"`
	TokenPrefix string    `bun:"token_prefix,notnull"`
	TokenHash   string    `bun:"token_hash,notnull,unique"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

type v14GatewayOrg struct {
	bun.BaseModel `bun:"table:gateway_orgs"`

	ID        string    `bun:"id,pk"`
	AccountID string    `bun:"account_id,notnull"`
	Name      string    `bun:"name,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}

type v14APIKey struct {
	bun.BaseModel `bun:"table:gateway_keys"`

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

type v14Usage struct {
	bun.BaseModel `bun:"table:gateway_usage"`

	OrgID       string `bun:"org_id,pk"`
	Day         string `bun:"day,pk"`
	Class       string `bun:"class,pk"`
	Requests    int64  `bun:"requests,notnull"`
	RateLimited int64  `bun:"rate_limited,notnull"`
	RunsStarted int64  `bun:"runs_started,notnull"`
}

type v14Bucket struct {
	bun.BaseModel `bun:"table:gateway_buckets"`

	KeyID     string    `bun:"key_id,pk"`
	Tokens    float64   `bun:"tokens,notnull"`
	UpdatedAt time.Time `bun:"updated_at,notnull"`
}
