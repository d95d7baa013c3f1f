package svctype

import "time"

// ActionKind is what a registered action does when a step or an agent's tool uses it.
type ActionKind string

// Action kinds (spec: "Action registration").
const (
	ActionHTTP        ActionKind = "http"
	ActionDB          ActionKind = "db"
	ActionLLM         ActionKind = "llm"
	ActionCustomTable ActionKind = "custom-table"
	ActionNWayMatch   ActionKind = "nway_match"
)

// ActionKinds lists every kind, in the spec's order.
var ActionKinds = []ActionKind{ActionHTTP, ActionDB, ActionLLM, ActionCustomTable, ActionNWayMatch}

// Action is an organization's registered action: a named, stored configuration that a
// workflow step names as its type. One flat shape for every kind, as the spec writes it;
// which fields a kind reads is in the comments, and the engine refuses a registration that
// sets another kind's field (engine.CreateAction). Zero means absent: the engine fills the
// defaults it documents (HTTPMethod POST) when it stores the action.
//
// Values read from a cache (engine.LookupAction) are shared: treat them as read-only.
type Action struct {
	OrgID       string     `json:"-"`
	Name        string     `json:"action_name"`
	Kind        ActionKind `json:"kind"`
	Description string     `json:"description,omitempty"`

	// http: the target (an http(s) URL or an orgconfig:<key> reference), the method (GET,
	// POST, PUT, PATCH, DELETE; default POST), headers (a value may be orgconfig:<key>),
	// the spec's passthrough flag (its meaning is the http executor's to define), whether a
	// non-idempotent call may be retried (RetryNonIdempotent), and the per-call timeout
	// (1-300 seconds; 0: the executor's default).
	URL                string            `json:"url,omitempty"`
	HTTPMethod         string            `json:"http_method,omitempty"`
	Headers            map[string]string `json:"headers,omitempty"`
	Passthrough        bool              `json:"passthrough,omitempty"`
	RetryNonIdempotent bool              `json:"retry_non_idempotent,omitempty"`
	TimeoutSeconds     int               `json:"timeout_seconds,omitempty"`

	// db: an orgconfig:db:<name> reference and a query with positional parameters ($1).
	Datasource string `json:"datasource,omitempty"`
	Query      string `json:"query,omitempty"`

	// llm: a prompt with {{var}} placeholders, the model (empty: the org's default) and the
	// most tokens a reply may have (0: the executor's default; at most 100,000).
	Template  string `json:"template,omitempty"`
	Model     string `json:"model,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`

	// custom-table and nway_match: the configuration, checked by the same create-time
	// validation as a step of that type.
	Properties map[string]any `json:"properties,omitempty"`

	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}
