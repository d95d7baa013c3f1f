package gwstore

import "time"

// Account is an integrator's gateway account: it owns organizations and their keys, and is
// reached with its management token (stored as a prefix and a SHA-256 hash only).
type Account struct {
	ID     string `json:"id"`
	Email  string `json:"email"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// Tier names the account's plan ("" : the deployment's defaults).
	Tier        string    `json:"tier,omitempty"`
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
	// AccountStatus and Tier are the owning account's (filled by APIKeyByHash), so that a
	// suspension or a change of tier reaches every key.
	AccountStatus string `json:"-"`
	Tier          string `json:"-"`
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

// SignInCode is a one-time code sent to a person signing in to an organization's SDK with
// its publishable key: stored as a salted SHA-256 hash, single use, a few tries, short-lived.
type SignInCode struct {
	ID        string
	OrgID     string
	KeyID     string
	Email     string
	Salt      string
	Hash      string
	Attempts  int
	ExpiresAt time.Time
	UsedAt    *time.Time
	CreatedAt time.Time
}

// Session is a person signed in to an organization: its token stored as a prefix and a
// hash. A session opened with a publishable key (KeyID) ends with it: KeyEnded is when
// that key was revoked or expired (filled by SessionByHash). A session opened on a hosted
// public form has no key (KeyID "").
type Session struct {
	Hash      string
	Prefix    string
	OrgID     string
	KeyID     string
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
	KeyEnded  *time.Time
	// FormID is the public form whose sign-in opened the session ("" for an SDK sign-in
	// with the publishable key): such a session works on that form only.
	FormID string
	// AccountStatus is the owning account's (a suspension ends its sessions too).
	AccountStatus string
}

// OrgUser is what an organization's backend says about one of its people: the approver
// roles they hold (spec section 5, rule 5). A person signed in with no row holds none.
type OrgUser struct {
	OrgID         string    `json:"-"`
	Email         string    `json:"email"`
	ApproverRoles []string  `json:"approver_roles"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SignInPolicy is who may sign in to an organization's SDK: always the people its backend
// added (OrgUser); also anyone whose email's domain is in Domains; or, with Anyone, every
// mailbox (a public portal). Without a policy an organization admits its people only.
type SignInPolicy struct {
	OrgID     string    `json:"-"`
	Anyone    bool      `json:"anyone" doc:"Let every mailbox sign in (a public portal). People the organization did not add, and whose domain is not listed, sign in as guests: they work no tasks and read no submitted data."`
	Domains   []string  `json:"domains" maxItems:"100" doc:"Email domains whose people may sign in, as the people added do (lower case, e.g. example.com)."`
	UpdatedAt time.Time `json:"updated_at"`
}

// Tier is a plan the platform operator puts accounts on: each key's rate limit, a daily
// quota of runs per organization (0: none), and the features it opens.
type Tier struct {
	Name        string    `json:"name"`
	Rate        float64   `json:"rate" doc:"Requests a second each key may make (token bucket refill)."`
	Burst       int       `json:"burst" doc:"Requests a key may make at once (token bucket size)."`
	RunsPerDay  int64     `json:"runs_per_day" doc:"Workflow executions an organization may start a day (UTC); 0: no quota."`
	Features    []string  `json:"features" doc:"Features the tier opens, such as agent_forms and agents."`
	UpdatedAt   time.Time `json:"updated_at"`
	Description string    `json:"description,omitempty"`
}

// IssuedLicense is an on-premises license issued to an account, as the gateway keeps it.
type IssuedLicense struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	Licensee  string     `json:"licensee"`
	Seats     int        `json:"seats"`
	Features  []string   `json:"features"`
	NotBefore time.Time  `json:"not_before"`
	ExpiresAt time.Time  `json:"expires_at"`
	License   string     `json:"license" doc:"The signed license, as POST /licensing/validate takes it."`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// AccountUsage is one account's use of the gateway over some days, summed over its
// organizations (operator administration).
type AccountUsage struct {
	AccountID   string `json:"account_id"`
	Requests    int64  `json:"requests"`
	RateLimited int64  `json:"rate_limited"`
	RunsStarted int64  `json:"runs_started"`
}
