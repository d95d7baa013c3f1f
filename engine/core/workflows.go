package core

import (
	"context"

	"github.com/google/uuid"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// CreateWorkflow validates and stores a new workflow (version 1).
func (e *Core) CreateWorkflow(ctx context.Context, orgID string, in WorkflowInput) (*svctype.Workflow, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	c, err := e.checkWorkflow(ctx, orgID, in, nil)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC()
	w := &svctype.Workflow{
		ID: "wfl-" + uuid.NewString(), OrgID: orgID, Name: in.Name, Version: 1,
		Definition: compact(in.Definition), Warnings: c.warnings, CreatedAt: now, UpdatedAt: now,
	}
	err = e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.CreateWorkflow(ctx, w); err != nil {
			return err
		}
		return e.scheduleTx(ctx, tx, w, c.def)
	})
	if err != nil {
		return nil, err
	}
	e.Notify()
	return w, nil
}

// UpdateWorkflow validates and stores a new version of a workflow; runs already started
// keep the version they started with.
func (e *Core) UpdateWorkflow(ctx context.Context, orgID, id string, in WorkflowInput) (*svctype.Workflow, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	c, err := e.checkWorkflow(ctx, orgID, in, nil)
	if err != nil {
		return nil, err
	}
	var w *svctype.Workflow
	err = e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		cur, err := tx.GetWorkflow(ctx, orgID, id)
		if err != nil {
			return err
		}
		w = &svctype.Workflow{
			ID: id, OrgID: orgID, Name: in.Name, Version: cur.Version + 1,
			Definition: compact(in.Definition), Warnings: c.warnings,
			CreatedAt: cur.CreatedAt, UpdatedAt: e.now().UTC(),
		}
		if err := tx.UpdateWorkflow(ctx, w); err != nil {
			return err
		}
		return e.scheduleTx(ctx, tx, w, c.def)
	})
	if err != nil {
		return nil, err
	}
	e.Notify()
	return w, nil
}

// CheckWorkflowWith validates in as CreateWorkflow does, counting as defined the step types
// known says are (the actions a bundle registers with it): a *ValidationError naming each
// problem, or the warnings CreateWorkflow would store ("<pointer>: <message>", such as a
// step type nothing defines).
func (e *Core) CheckWorkflowWith(ctx context.Context, orgID string, in WorkflowInput, known func(string) bool) ([]string, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	c, err := e.checkWorkflow(ctx, orgID, in, known)
	if err != nil {
		return nil, err
	}
	return c.warnings, nil
}

// PutWorkflowTx stores in, checked with known, inside the caller's transaction: a new
// workflow when id is "", else a new version of id. The caller commits, then calls Notify.
func (e *Core) PutWorkflowTx(ctx context.Context, tx storage.Tx, orgID, id string, in WorkflowInput, known func(string) bool) (*svctype.Workflow, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	c, err := e.checkWorkflow(ctx, orgID, in, known)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC()
	w := &svctype.Workflow{ID: id, OrgID: orgID, Name: in.Name, Version: 1, Definition: compact(in.Definition), Warnings: c.warnings,
		CreatedAt: now, UpdatedAt: now}
	if id == "" {
		w.ID = "wfl-" + uuid.NewString()
		err = tx.CreateWorkflow(ctx, w)
	} else {
		cur, gerr := tx.GetWorkflow(ctx, orgID, id)
		if gerr != nil {
			return nil, gerr
		}
		w.Version, w.CreatedAt = cur.Version+1, cur.CreatedAt
		err = tx.UpdateWorkflow(ctx, w)
	}
	if err != nil {
		return nil, err
	}
	return w, e.scheduleTx(ctx, tx, w, c.def)
}

// GetWorkflow returns the current version of a workflow.
func (e *Core) GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetWorkflow(ctx, orgID, id)
}

// GetWorkflowVersion returns one version of a workflow, current or earlier (every version
// is kept until the workflow is deleted): ErrNotFound for a version it never had.
func (e *Core) GetWorkflowVersion(ctx context.Context, orgID, id string, version int) (*svctype.Workflow, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetWorkflowVersion(ctx, orgID, id, version)
}

// ListWorkflows pages an organization's workflows.
func (e *Core) ListWorkflows(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Workflow], error) {
	if err := CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Workflow]{}, err
	}
	return e.store.ListWorkflows(ctx, orgID, opts)
}

// DeleteWorkflow removes a workflow, its versions and its schedule. Its runs stay readable;
// runs still in progress finish on the version they started with. A delete hook
// (OnDeleteWorkflow) may refuse it: nothing is deleted then.
func (e *Core) DeleteWorkflow(ctx context.Context, orgID, id string) error {
	if err := CheckOrg(orgID); err != nil {
		return err
	}
	return e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		for _, h := range e.deleteWorkflowHooks() {
			if err := h(ctx, tx, orgID, id); err != nil {
				return err
			}
		}
		if err := tx.DeleteWorkflow(ctx, orgID, id); err != nil {
			return err
		}
		return tx.DeleteJobs(ctx, orgID, svctype.JobSchedule, "", id)
	})
}
