package svctype

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is where an approval stands.
type ApprovalStatus string

// Approval statuses: pending until decided.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalCancelled: the run was cancelled while it waited.
	ApprovalCancelled ApprovalStatus = "cancelled"
)

// Actor is who did something: {type: api|user|system, id}.
type Actor struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Approval is a PbotApproval step's request to a role, and its decision.
type Approval struct {
	ID             string          `json:"approval_id"`
	OrgID          string          `json:"-"`
	RunID          string          `json:"run_id"`
	WorkflowID     string          `json:"workflow_id"`
	StepIndex      int             `json:"step_id"`
	ApproverRole   string          `json:"approver_role"`
	Status         ApprovalStatus  `json:"status"`
	Comment        string          `json:"comment"`
	RequestPayload json.RawMessage `json:"request_payload"`
	ExpiresAt      *time.Time      `json:"expires_at"`
	Approved       *bool           `json:"approved,omitempty"`
	// DecisionComment is the decider's comment ("expired" for an expiry).
	DecisionComment string     `json:"decision_comment,omitempty"`
	DecidedBy       *Actor     `json:"decided_by,omitempty"`
	DecidedAt       *time.Time `json:"decided_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
}
