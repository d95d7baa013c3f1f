package hitl

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what hitl reads outside a transaction: the pauses a person is shown and the run
// they belong to. engine/storage documents each method's contract.
type Store interface {
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	GetApproval(ctx context.Context, orgID, id string) (*svctype.Approval, error)
	PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error)
	ListApprovals(ctx context.Context, orgID string, f storage.ApprovalFilter) (svctype.Page[svctype.Approval], error)
	FormPauseAt(ctx context.Context, orgID, runID string, step int) (*svctype.FormPause, error)
	ListFormPauses(ctx context.Context, orgID string, status svctype.FormPauseStatus, opts svctype.ListOptions) (svctype.Page[svctype.FormPause], error)
	GetOrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error)
}

// Tx is what hitl reads and writes in a transaction (a step's that pauses, a decision's, a
// submission's, a timer's, a cancellation's): its approvals, form pauses and kept form
// schemas, the run's context and its own timers. The transaction itself (storage.Tx) goes
// back to the core, which resumes the run in it.
type Tx interface {
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	GetContext(ctx context.Context, orgID, runID string, keys ...string) (map[string]json.RawMessage, error)
	PutContext(ctx context.Context, orgID, runID, key string, value json.RawMessage) error

	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
	DeleteJobs(ctx context.Context, orgID, kind, runID, workflowID string) error

	CreateApproval(ctx context.Context, a *svctype.Approval) error
	GetApproval(ctx context.Context, orgID, id string) (*svctype.Approval, error)
	PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error)
	DecideApproval(ctx context.Context, a *svctype.Approval) error

	CreateFormPause(ctx context.Context, p *svctype.FormPause) error
	GetFormPause(ctx context.Context, orgID, id string) (*svctype.FormPause, error)
	FormPauseAt(ctx context.Context, orgID, runID string, step int) (*svctype.FormPause, error)
	CloseFormPause(ctx context.Context, p *svctype.FormPause) error

	GetOrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error)
	GeneratedFormSchema(ctx context.Context, k svctype.FormSchemaKey) (*svctype.GeneratedFormSchema, error)
	KeepGeneratedFormSchema(ctx context.Context, s *svctype.GeneratedFormSchema) (*svctype.GeneratedFormSchema, error)
}
