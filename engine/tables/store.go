package tables

import (
	"context"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what the custom-tables feature needs of its store, outside any transaction: the
// routes read and write declarations, rows and indexes through it, indexes are built on it,
// and a custom-table read run ahead of its step's transaction gets it as StepCall.Tables,
// so it is all a step kind may call (svctype.TableStore, which documents each method's
// contract). The engine's store implements it, which the composition root checks at
// compile time; the run core's part of the store (storage.Runs) has no table in it.
type Store interface {
	svctype.TableStore
}

// Tx is what the custom-tables feature calls itself in a transaction: the end of its
// index-building job. A step's transaction goes to the step kind whole, as its tables
// (StepCall.Tables).
type Tx interface {
	CompleteJob(ctx context.Context, job *svctype.Job) error
}

// Creator stores a table's declaration: the feature's store, or the transaction of another
// feature that creates tables with what it publishes (Create).
type Creator interface {
	CreateTable(ctx context.Context, t *svctype.Table) error
}

// Counter reads what CheckRead needs to decide on a where: a table's indexes as stored now
// and how many rows it holds.
type Counter interface {
	TableIndexes(ctx context.Context, orgID, table string) ([]svctype.TableIndex, error)
	CountRows(ctx context.Context, orgID, table string, upTo int) (int, error)
}
