package svctype

import (
	"encoding/json"
	"time"
)

// DeliveryStatus is where a webhook delivery stands.
type DeliveryStatus string

// Delivery statuses: pending until an attempt succeeds or the delivery gives up.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// Delivery is one event sent to one target: a registered webhook, or the organization's
// catch-all webhook_url. Body holds the exact bytes every attempt sends.
type Delivery struct {
	ID    string `json:"delivery_id"`
	OrgID string `json:"-"`
	Event string `json:"event"`
	RunID string `json:"run_id,omitempty"`
	// WebhookID is the registered target; empty for the catch-all.
	WebhookID string `json:"webhook_id,omitempty"`
	// Target is "webhook" or "catch_all".
	Target string `json:"target"`
	// URL is the target's address when the delivery was made (the catch-all's is not shown).
	URL    string          `json:"-"`
	Signed bool            `json:"signed"`
	Body   json.RawMessage `json:"-"`
	Status DeliveryStatus  `json:"status"`
	// Attempts counts the requests sent, in every round (a redelivery goes on counting);
	// skips while a circuit is open are not attempts.
	Attempts int `json:"attempts"`
	// Recorded counts the delivery's attempt records (sends and skips, every round).
	Recorded int `json:"-"`
	// Skipped counts the times the target's circuit held the delivery back (attempt
	// records with outcome skipped): Attempts + Skipped is the number of attempt records.
	Skipped        int        `json:"skipped"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
	LastStatusCode int        `json:"last_status_code,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	CompletedAt    *time.Time `json:"completed_at,omitempty"`
}

// DeliveryAttempt is one try of a delivery: a request sent, or a skip while the target's
// circuit was open.
type DeliveryAttempt struct {
	DeliveryID string    `json:"-"`
	N          int       `json:"n"`
	At         time.Time `json:"at"`
	// Outcome: succeeded, retry (failed, tried again at NextAttemptAt), failed (given up),
	// skipped (circuit open: not sent, tried again at NextAttemptAt).
	Outcome       string     `json:"outcome"`
	StatusCode    int        `json:"status_code,omitempty"`
	LatencyMS     int64      `json:"latency_ms"`
	Error         string     `json:"error,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
}
