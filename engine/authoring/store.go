package authoring

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what the studio calls on its store outside a publication's or a generation's
// transaction: projects, processes, bundles, generations, and the custom tables a bundle's
// steps name. engine/storage documents each method's contract.
type Store interface {
	// InTx runs fn in one transaction (storage.Store.InTx).
	InTx(ctx context.Context, fn func(ctx context.Context, tx storage.Tx) error) error

	CreateProject(ctx context.Context, p *svctype.Project) error
	GetProject(ctx context.Context, orgID, id string) (*svctype.Project, error)
	ListProjects(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Project], error)
	CreateProcess(ctx context.Context, p *svctype.Process) error
	GetProcess(ctx context.Context, orgID, id string) (*svctype.Process, error)
	CreateBundle(ctx context.Context, b *svctype.Bundle) error
	GetBundle(ctx context.Context, orgID, id string) (*svctype.Bundle, error)
	GetGeneration(ctx context.Context, orgID, id string) (*svctype.Generation, error)
	GetTable(ctx context.Context, orgID, name string) (*svctype.Table, error)
}

// Tx is what the studio reads and writes in a transaction (a publication's, a generation's,
// a workflow deletion's): the bundle published and its process, the tables and workflow it
// keeps, the generations and their jobs. The transaction itself (storage.Tx) goes to the
// core (PutWorkflowTx, Emit), to actions (PutActionTx) and to engine/tables (Create).
type Tx interface {
	PublishBundle(ctx context.Context, orgID, id, note, workflowID string, workflowVersion int, at time.Time) error
	SetProcessPublished(ctx context.Context, orgID, id, bundleID, workflowID string, workflowVersion int, at time.Time) error
	ProcessOfWorkflow(ctx context.Context, orgID, workflowID string) (*svctype.Process, error)
	CreateGeneration(ctx context.Context, g *svctype.Generation) error
	FinishGeneration(ctx context.Context, g *svctype.Generation) error

	GetTable(ctx context.Context, orgID, name string) (*svctype.Table, error)
	GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error)
	EnqueueJob(ctx context.Context, job *svctype.Job) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
}
