package agents

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what agents reads outside a transaction: agent runs, and the actions and
// workflows an agent's tools name. engine/storage documents each method's contract.
type Store interface {
	GetAgentRun(ctx context.Context, orgID, id string) (*svctype.AgentRun, error)
	ListAgentRuns(ctx context.Context, orgID string, status svctype.AgentStatus, opts svctype.ListOptions) (svctype.Page[svctype.AgentRun], error)
	GetActions(ctx context.Context, orgID string, names []string) ([]svctype.Action, error)
	GetWorkflows(ctx context.Context, orgID string, ids []string) ([]svctype.Workflow, error)
}

// Tx is what agents reads and writes in a transaction (a start's, a turn's checkpoint, a
// cancellation's, a react step's): agent runs, their turns' jobs and call intents, and the
// result in the parent run's context. The transaction itself (storage.Tx) goes back to the
// core, which emits, holds and resumes runs in it.
type Tx interface {
	CreateAgentRun(ctx context.Context, r *svctype.AgentRun) error
	GetAgentRun(ctx context.Context, orgID, id string) (*svctype.AgentRun, error)
	SaveAgentRun(ctx context.Context, r *svctype.AgentRun) error
	AgentRunsOf(ctx context.Context, orgID, parentRunID string) ([]svctype.AgentRun, error)

	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	PutContext(ctx context.Context, orgID, runID, key string, value json.RawMessage) error

	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
	DeleteJobs(ctx context.Context, orgID, kind, runID, workflowID string) error
	OpenCall(ctx context.Context, orgID, runID, key, claim string, at time.Time) (before, now *svctype.CallIntent, err error)
	CloseCalls(ctx context.Context, orgID, runID string) error
}
