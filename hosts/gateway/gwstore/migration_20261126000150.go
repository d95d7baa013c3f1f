package gwstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Migration 20261126000150: sign-in codes, sessions, approver roles, tiers, issued
// licenses, and an account's tier. Models frozen as of this migration.

var migration20261126000150 = migration{
	name:    "20261126000150",
	comment: "gateway sign-in codes, sessions, approver roles, tiers, licenses; account tier",
	up: func(ctx context.Context, tx bun.Tx, postgres bool) error {
		if err := createTables(ctx, tx, (*v15Code)(nil), (*v15Session)(nil), (*v15OrgUser)(nil), (*v15Tier)(nil), (*v15License)(nil)); err != nil {
			return err
		}
		if _, err := tx.NewCreateIndex().Model((*v15License)(nil)).Index("gateway_licenses_account").IfNotExists().
			Column("account_id", "created_at", "id").Exec(ctx); err != nil {
			return err
		}
		return addColumn(ctx, tx, postgres, "gateway_accounts", "tier", "VARCHAR NOT NULL DEFAULT ''")
	},
}

type v15Code struct {
	bun.BaseModel `bun:"table:gateway_codes"`

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

type v15Session struct {
	bun.BaseModel `bun:"table:gateway_sessions"`

	Hash      string    `bun:"hash,pk"`
	Prefix    string    `bun:"prefix,notnull"`
	OrgID     string    `bun:"org_id,notnull"`
	KeyID     string    `bun:"key_id,notnull"`
	Email     string    `bun:"email,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

type v15OrgUser struct {
	bun.BaseModel `bun:"table:gateway_org_users"`

	OrgID         string    `bun:"org_id,pk"`
	Email         string    `bun:"email,pk"`
	ApproverRoles string    `bun:"approver_roles,notnull"`
	UpdatedAt     time.Time `bun:"updated_at,notnull"`
}

type v15Tier struct {
	bun.BaseModel `bun:"table:gateway_tiers"`

	Name        string    `bun:"name,pk"`
	Rate        float64   `bun:"rate,notnull"`
	Burst       int       `bun:"burst,notnull"`
	RunsPerDay  int64     `bun:"runs_per_day,notnull"`
	Features    string    `bun:"features,notnull"`
	Description string    `bun:"description,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

type v15License struct {
	bun.BaseModel `bun:"table:gateway_licenses"`

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
