package svctype

import "time"

// Account is an integrator's gateway account: it owns organizations and their keys, and is
// reached with its management token (stored as a prefix and a SHA-256 hash only).
type Account struct {
	ID          string    `json:"id"`
	Email       string    `json:"email"`
	Name        string    `json:"name"`
	Status      string    `json:"status"`
	TokenPrefix string    `json:"token_prefix"`
	TokenHash   string    `json:"-"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Account statuses.
const (
	AccountActive    = "active"
	AccountSuspended = "suspended"
)

// GatewayOrg is an organization as the gateway knows it: which account owns it.
type GatewayOrg struct {
	ID        string    `json:"id"`
	AccountID string    `json:"-"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// APIKey is a key to one organization: runtime (server-side calls) or publishable (the
// browser SDK). Stored as a prefix and a SHA-256 hash; ExpiresAt is set when a rotation
// gives it a grace period, RevokedAt when it was deleted.
type APIKey struct {
	ID        string     `json:"id"`
	AccountID string     `json:"-"`
	OrgID     string     `json:"org_id"`
	Kind      string     `json:"kind"`
	Prefix    string     `json:"prefix"`
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Key kinds.
const (
	KeyRuntime     = "runtime"
	KeyPublishable = "publishable"
)

// Usage is one organization's use of the gateway on one day (UTC) for one route class:
// requests forwarded, requests refused by the rate limit, and runs started (workflow
// executions the runtime accepted).
type Usage struct {
	OrgID       string `json:"-"`
	Day         string `json:"day"`
	Class       string `json:"route_class"`
	Requests    int64  `json:"requests"`
	RateLimited int64  `json:"rate_limited"`
	RunsStarted int64  `json:"runs_started"`
}
