package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// The process studio's projects, processes and bundles.

type projectModel struct {
	bun.BaseModel `bun:"table:studio_projects,alias:sp"`

	ID          string    `bun:"id,pk"`
	OrgID       string    `bun:"org_id,notnull"`
	Name        string    `bun:"name,notnull"`
	Description string    `bun:"description,notnull"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
}

func (m *projectModel) toProject() (svctype.Project, error) {
	return svctype.Project{ID: m.ID, OrgID: m.OrgID, Name: m.Name, Description: m.Description, CreatedAt: m.CreatedAt.UTC()}, nil
}

type processModel struct {
	bun.BaseModel `bun:"table:studio_processes,alias:spr"`

	ID                string     `bun:"id,pk"`
	OrgID             string     `bun:"org_id,notnull"`
	ProjectID         string     `bun:"project_id,notnull"`
	Name              string     `bun:"name,notnull"`
	Description       string     `bun:"description,notnull"`
	AuthoringMode     string     `bun:"authoring_mode,notnull"`
	WorkflowID        string     `bun:"workflow_id,notnull"`
	WorkflowVersion   int        `bun:"workflow_version,notnull"`
	PublishedBundleID string     `bun:"published_bundle_id,notnull"`
	PublishedAt       *time.Time `bun:"published_at"`
	CreatedAt         time.Time  `bun:"created_at,notnull"`
	UpdatedAt         time.Time  `bun:"updated_at,notnull"`
}

func (m *processModel) toProcess() (svctype.Process, error) {
	return svctype.Process{ID: m.ID, OrgID: m.OrgID, ProjectID: m.ProjectID, Name: m.Name, Description: m.Description,
		AuthoringMode: m.AuthoringMode, WorkflowID: m.WorkflowID, WorkflowVersion: m.WorkflowVersion, PublishedBundleID: m.PublishedBundleID,
		PublishedAt: utcPtr(m.PublishedAt), CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.UpdatedAt.UTC()}, nil
}

type bundleModel struct {
	bun.BaseModel `bun:"table:studio_bundles,alias:sb"`

	ID              string     `bun:"id,pk"`
	OrgID           string     `bun:"org_id,notnull"`
	ProcessID       string     `bun:"process_id,notnull"`
	Version         int        `bun:"version,notnull"`
	Status          string     `bun:"status,notnull"`
	DeploymentShape string     `bun:"deployment_shape,notnull"`
	Summary         string     `bun:"summary,notnull"`
	DSL             string     `bun:"dsl,notnull"`
	PublishNote     string     `bun:"publish_note,notnull"`
	PublishedAt     *time.Time `bun:"published_at"`
	WorkflowID      string     `bun:"workflow_id,notnull"`
	WorkflowVersion int        `bun:"workflow_version,notnull"`
	CreatedAt       time.Time  `bun:"created_at,notnull"`
}

func (m *bundleModel) toBundle() *svctype.Bundle {
	return &svctype.Bundle{ID: m.ID, OrgID: m.OrgID, ProcessID: m.ProcessID, Version: m.Version, Status: svctype.BundleStatus(m.Status),
		DeploymentShape: m.DeploymentShape, Summary: m.Summary, DSL: json.RawMessage(m.DSL), PublishNote: m.PublishNote,
		PublishedAt: utcPtr(m.PublishedAt), WorkflowID: m.WorkflowID, WorkflowVersion: m.WorkflowVersion, CreatedAt: m.CreatedAt.UTC()}
}

// CreateProject inserts p.
func (q *querier) CreateProject(ctx context.Context, p *svctype.Project) error {
	p.CreatedAt = orNow(p.CreatedAt, q.now())
	_, err := q.w.NewInsert().Model(&projectModel{ID: p.ID, OrgID: p.OrgID, Name: p.Name, Description: p.Description, CreatedAt: p.CreatedAt}).Exec(ctx)
	return wrap("create project", err)
}

// GetProject returns one of an organization's projects.
func (q *querier) GetProject(ctx context.Context, orgID, id string) (*svctype.Project, error) {
	var m projectModel
	if err := q.r.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get project", err)
	}
	p, _ := m.toProject()
	return &p, nil
}

// ListProjects pages an organization's projects, newest first.
func (q *querier) ListProjects(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Project], error) {
	sel := q.r.NewSelect().Model((*projectModel)(nil)).Where("org_id = ?", orgID)
	return pageByCreated(ctx, "list projects", sel, true, opts, func(m *projectModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*projectModel).toProject)
}

// CreateProcess inserts p.
func (q *querier) CreateProcess(ctx context.Context, p *svctype.Process) error {
	p.CreatedAt = orNow(p.CreatedAt, q.now())
	p.UpdatedAt = orNow(p.UpdatedAt, p.CreatedAt)
	_, err := q.w.NewInsert().Model(&processModel{ID: p.ID, OrgID: p.OrgID, ProjectID: p.ProjectID, Name: p.Name, Description: p.Description,
		AuthoringMode: p.AuthoringMode, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}).Exec(ctx)
	return wrap("create process", err)
}

// GetProcess returns one of an organization's processes.
func (q *querier) GetProcess(ctx context.Context, orgID, id string) (*svctype.Process, error) {
	var m processModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get process", err)
	}
	p, _ := m.toProcess()
	return &p, nil
}

// ListProcesses pages a project's processes (every project's for ""), newest first.
func (q *querier) ListProcesses(ctx context.Context, orgID, projectID string, opts svctype.ListOptions) (svctype.Page[svctype.Process], error) {
	sel := q.r.NewSelect().Model((*processModel)(nil)).Where("org_id = ?", orgID)
	if projectID != "" {
		sel = sel.Where("project_id = ?", projectID)
	}
	return pageByCreated(ctx, "list processes", sel, true, opts, func(m *processModel) (time.Time, string) { return m.CreatedAt, m.ID }, (*processModel).toProcess)
}

// SetProcessPublished records a publication.
func (q *querier) SetProcessPublished(ctx context.Context, orgID, id, bundleID, workflowID string, workflowVersion int, at time.Time) error {
	const op = "set process published"
	res, err := q.w.NewUpdate().Model((*processModel)(nil)).Set("published_bundle_id = ?", bundleID).Set("workflow_id = ?", workflowID).
		Set("workflow_version = ?", workflowVersion).Set("published_at = ?", at).Set("updated_at = ?", at).Where("org_id = ? AND id = ?", orgID, id).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, notFound)
}

// ProcessOfWorkflow returns the process that publishes the workflow (one at most: a
// publication creates the workflow of a process that has none).
func (q *querier) ProcessOfWorkflow(ctx context.Context, orgID, workflowID string) (*svctype.Process, error) {
	var m processModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND workflow_id = ?", orgID, workflowID).
		OrderExpr("created_at, id").Limit(1).Scan(ctx); err != nil {
		return nil, wrap("process of workflow", err)
	}
	p, _ := m.toProcess()
	return &p, nil
}

// CreateBundle inserts b as the next version of its process. Two composing at once may
// pick the same version: the unique (process, version) index makes the second a conflict,
// which the caller retries.
func (q *querier) CreateBundle(ctx context.Context, b *svctype.Bundle) error {
	const op = "create bundle"
	b.CreatedAt = orNow(b.CreatedAt, q.now())
	var last int
	if err := q.w.NewSelect().Model((*bundleModel)(nil)).ColumnExpr("COALESCE(MAX(version), 0)").
		Where("org_id = ? AND process_id = ?", b.OrgID, b.ProcessID).Scan(ctx, &last); err != nil {
		return wrap(op, err)
	}
	b.Version = last + 1
	_, err := q.w.NewInsert().Model(&bundleModel{ID: b.ID, OrgID: b.OrgID, ProcessID: b.ProcessID, Version: b.Version, Status: string(b.Status),
		DeploymentShape: b.DeploymentShape, Summary: b.Summary, DSL: string(b.DSL), CreatedAt: b.CreatedAt}).Exec(ctx)
	return wrap(op, err)
}

// GetBundle returns one of an organization's bundles.
func (q *querier) GetBundle(ctx context.Context, orgID, id string) (*svctype.Bundle, error) {
	var m bundleModel
	if err := q.w.NewSelect().Model(&m).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx); err != nil {
		return nil, wrap("get bundle", err)
	}
	return m.toBundle(), nil
}

// PublishBundle marks a draft published, once.
func (q *querier) PublishBundle(ctx context.Context, orgID, id, note, workflowID string, workflowVersion int, at time.Time) error {
	const op = "publish bundle"
	res, err := q.w.NewUpdate().Model((*bundleModel)(nil)).Set("status = ?", svctype.BundlePublished).Set("publish_note = ?", note).
		Set("workflow_id = ?", workflowID).Set("workflow_version = ?", workflowVersion).Set("published_at = ?", at).
		Where("org_id = ? AND id = ? AND status = ?", orgID, id, svctype.BundleDraft).Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
}
