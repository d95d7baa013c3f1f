package svctype

import (
	"encoding/json"
	"time"
)

// Project groups an organization's processes (the process studio).
type Project struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"-"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// Process is a business process authored in the studio: its bundles are its versions, and
// the published one is the workflow it runs.
type Process struct {
	ID            string `json:"id"`
	OrgID         string `json:"-"`
	ProjectID     string `json:"project_id"`
	Name          string `json:"name"`
	Description   string `json:"description"`
	AuthoringMode string `json:"authoring_mode"`
	WorkflowID    string `json:"workflow_id,omitempty"`
	// WorkflowVersion is the version of WorkflowID its last publication put: what the
	// process runs, whatever later edits of the workflow outside the studio.
	WorkflowVersion   int        `json:"workflow_version,omitempty"`
	PublishedBundleID string     `json:"published_bundle_id,omitempty"`
	PublishedAt       *time.Time `json:"published_at,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// BundleStatus is where a bundle stands.
type BundleStatus string

// Bundle statuses: a draft until published, then immutable.
const (
	BundleDraft     BundleStatus = "draft"
	BundlePublished BundleStatus = "published"
)

// Bundle is one version of a process: the workflow definition and what it needs (actions
// to register, custom tables to create), as composed from a DSL document.
type Bundle struct {
	ID              string          `json:"id"`
	OrgID           string          `json:"-"`
	ProcessID       string          `json:"process_id"`
	Version         int             `json:"version"`
	Status          BundleStatus    `json:"status"`
	DeploymentShape string          `json:"deployment_shape,omitempty"`
	Summary         string          `json:"summary,omitempty"`
	DSL             json.RawMessage `json:"dsl"`
	PublishNote     string          `json:"publish_note,omitempty"`
	PublishedAt     *time.Time      `json:"published_at,omitempty"`
	WorkflowID      string          `json:"workflow_id,omitempty"`
	// WorkflowVersion is the version of WorkflowID its publication put.
	WorkflowVersion int       `json:"workflow_version,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// GenerationStatus is where a drafting from a prompt stands.
type GenerationStatus string

// Generation statuses.
const (
	GenerationProcessing GenerationStatus = "processing"
	GenerationCompleted  GenerationStatus = "completed"
	GenerationFailed     GenerationStatus = "failed"
)

// Generation is a workflow bundle drafted from a prompt by the organization's model.
type Generation struct {
	ID          string           `json:"generation_id"`
	OrgID       string           `json:"-"`
	Prompt      string           `json:"prompt"`
	Model       string           `json:"model,omitempty"`
	Temperature *float64         `json:"temperature,omitempty"`
	Status      GenerationStatus `json:"status"`
	Attempts    int              `json:"attempts"`
	Bundle      json.RawMessage  `json:"bundle,omitempty"`
	Errors      []string         `json:"errors,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
}
