package runops

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what run operations read outside a transaction: the runs a filter matches and
// the operations. engine/storage documents each method's contract.
type Store interface {
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	RunRetries(ctx context.Context, orgID, runID string) (of, by *svctype.RunRetry, err error)
	ListRuns(ctx context.Context, orgID string, f storage.RunFilter) (svctype.Page[svctype.Run], error)
	GetRunOperation(ctx context.Context, orgID, id string) (*svctype.RunOperation, error)
	ListRunOperations(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.RunOperation], error)
}

// Tx is what a retry and an operation's batch write in a transaction: the failed run, held
// while its retry starts, and the operation's progress with its job. The transaction itself
// (storage.Tx) goes to the core, which starts the retry.
type Tx interface {
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	RunRetries(ctx context.Context, orgID, runID string) (of, by *svctype.RunRetry, err error)
	CreateRunOperation(ctx context.Context, op *svctype.RunOperation) error
	GetRunOperation(ctx context.Context, orgID, id string) (*svctype.RunOperation, error)
	SaveRunOperation(ctx context.Context, op *svctype.RunOperation) error
	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
}
