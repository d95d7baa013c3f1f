// Package svctype holds the primitive types that the engine, its store, its steps and the
// hosts all share: workflows, runs, steps, events, jobs, tables. It imports nothing of the
// project so that everything can import it without a cycle (River's rivertype). It owns no
// behaviour beyond small helpers on these types.
package svctype

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// RunStatus is the lifecycle state of a run.
type RunStatus string

// Run statuses. running and paused are live; the others are terminal.
const (
	RunRunning         RunStatus = "running"
	RunPaused          RunStatus = "paused"
	RunCompleted       RunStatus = "completed"
	RunFailed          RunStatus = "failed"
	RunCancelled       RunStatus = "cancelled"
	RunRejected        RunStatus = "rejected"
	RunConditionNotMet RunStatus = "condition_not_met"
)

// Terminal reports whether no further step will execute for a run in this status.
func (s RunStatus) Terminal() bool {
	switch s {
	case RunRunning, RunPaused:
		return false
	}
	return true
}

// Valid reports whether s is one of the known statuses.
func (s RunStatus) Valid() bool {
	switch s {
	case RunRunning, RunPaused, RunCompleted, RunFailed, RunCancelled, RunRejected, RunConditionNotMet:
		return true
	}
	return false
}

// StepStatus is the state of one top-level step of a run.
type StepStatus string

// Step statuses.
const (
	StepPending    StepStatus = "pending"
	StepProcessing StepStatus = "processing"
	StepCompleted  StepStatus = "completed"
	StepSkipped    StepStatus = "skipped"
	StepFailed     StepStatus = "failed"
	StepCancelled  StepStatus = "cancelled"
)

// Workflow is one version of an organization's workflow.
type Workflow struct {
	ID         string          `json:"id"`
	OrgID      string          `json:"org_id"`
	Name       string          `json:"name"`
	Version    int             `json:"version"`
	Definition json.RawMessage `json:"definition"`
	Warnings   []string        `json:"warnings,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// Run is one execution of a workflow version.
type Run struct {
	ID              string          `json:"id"`
	OrgID           string          `json:"org_id"`
	WorkflowID      string          `json:"workflow_id"`
	WorkflowVersion int             `json:"workflow_version"`
	Status          RunStatus       `json:"status"`
	Input           json.RawMessage `json:"input"`
	Definition      json.RawMessage `json:"-"`
	Cursor          Cursor          `json:"cursor"`
	Reason          string          `json:"reason,omitempty"`
	IdempotencyKey  string          `json:"-"`
	// IdempotencyRequest is a digest of the request that carried IdempotencyKey (the
	// workflow and the input), kept with the key: the key repeated with another request is
	// refused rather than answered with this run.
	IdempotencyRequest string     `json:"-"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	FinishedAt         *time.Time `json:"finished_at,omitempty"`
}

// Cursor is where a run stands: the next top-level step, and inside a foreach loop the
// next element. It is committed with every step.
type Cursor struct {
	Step int `json:"step"`
	// Loop is set while a foreach step is in progress at Step.
	Loop *LoopCursor `json:"loop,omitempty"`
}

// LoopCursor is the checkpoint of a foreach loop: elements before Next are committed.
type LoopCursor struct {
	Next  int `json:"next"`
	Total int `json:"total"`
	// Items is the loop's items property as pinned when it started (a doc: reference with
	// the version it read), read again by every later slice; empty when nothing was pinned.
	Items string `json:"items,omitempty"`
}

// StepRecord is the durable record of one top-level step of a run: what the evidence
// route shows.
type StepRecord struct {
	RunID        string          `json:"-"`
	Index        int             `json:"index"`
	Type         string          `json:"type"`
	Status       StepStatus      `json:"status"`
	InputSummary json.RawMessage `json:"input_summary,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	Effects      []Effect        `json:"effects,omitempty"`
	Decisions    []Decision      `json:"decisions,omitempty"`
	Error        string          `json:"error,omitempty"`
	StartedAt    *time.Time      `json:"started_at,omitempty"`
	FinishedAt   *time.Time      `json:"finished_at,omitempty"`
}

// Effect is one durable change a step made outside the run context (a table row written,
// a message sent), in the order it happened.
type Effect struct {
	Kind   string         `json:"kind"`
	Target string         `json:"target,omitempty"`
	Detail map[string]any `json:"detail,omitempty"`
}

// Decision is a choice the engine made at a step: a filter outcome, a gate, a skip.
type Decision struct {
	Kind   string `json:"kind"`
	Result any    `json:"result"`
	Reason string `json:"reason,omitempty"`
}

// Event is one outbox entry, written in the transaction of its cause.
type Event struct {
	Seq        int64           `json:"-"`
	DeliveryID string          `json:"delivery_id"`
	OrgID      string          `json:"-"`
	RunID      string          `json:"-"`
	Event      string          `json:"event"`
	Timestamp  time.Time       `json:"timestamp"`
	Payload    json.RawMessage `json:"payload"`
}

// Job kinds.
const (
	JobRunStep  = "run_step"
	JobSchedule = "schedule"
	// JobBuildIndex builds a custom-table index an upsert declared (BuildIndexPayload).
	JobBuildIndex = "tables.build_index"
)

// Job is one unit of deferred work in the jobs table.
type Job struct {
	ID         int64     `json:"id"`
	OrgID      string    `json:"org_id"`
	Kind       string    `json:"kind"`
	RunID      string    `json:"run_id,omitempty"`
	WorkflowID string    `json:"workflow_id,omitempty"`
	RunAt      time.Time `json:"run_at"`
	Attempts   int       `json:"attempts"`
	// Claims counts every lease ever taken on the job and is never reset: a worker that
	// handed a job back knows, on claiming it again, whether anyone else held it meanwhile.
	Claims     int64           `json:"-"`
	LeaseToken string          `json:"-"`
	LeaseUntil *time.Time      `json:"lease_until,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// Table is a custom table: a name, its declared columns (column -> type) and its indexes.
type Table struct {
	OrgID     string            `json:"-"`
	Name      string            `json:"name"`
	Fields    map[string]string `json:"fields"`
	Indexes   []TableIndex      `json:"indexes"`
	CreatedAt time.Time         `json:"created_at"`
}

// TableIndex is an equality index on one or more columns of a custom table: a where that
// names every one of its columns finds its rows through it instead of reading the table.
// Columns is a set (["a","b"] and ["b","a"] are one index); a building index is kept up to
// date by every write but serves reads only once ready.
type TableIndex struct {
	Columns   []string  `json:"columns"`
	State     string    `json:"state" enum:"building,ready"`
	CreatedAt time.Time `json:"created_at"`
}

// BuildIndexPayload is a JobBuildIndex job's payload: the table and the index's key.
type BuildIndexPayload struct {
	Table string `json:"table"`
	Key   string `json:"key"`
}

// Index states.
const (
	IndexBuilding = "building"
	IndexReady    = "ready"
)

// Key names the index by its column set: the columns sorted, joined by commas (column
// names hold no comma).
func (ix TableIndex) Key() string { return IndexKey(ix.Columns) }

// IndexKey is the key of an index on cols.
func IndexKey(cols []string) string {
	sorted := slices.Clone(cols)
	slices.Sort(sorted)
	return strings.Join(sorted, ",")
}

// Covers reports whether a where naming these columns can use the index: every column of
// the index is among them.
func (ix TableIndex) Covers(where map[string]any) bool {
	for _, c := range ix.Columns {
		if _, ok := where[c]; !ok {
			return false
		}
	}
	return len(ix.Columns) > 0
}

// CoveringIndex returns the ready index serving where (the one naming the most of its
// columns), or false when none does and a read would scan the table.
func (t *Table) CoveringIndex(where map[string]any) (TableIndex, bool) {
	return BestIndex(t.Indexes, where)
}

// BestIndex picks from indexes the ready one naming the most columns of where.
func BestIndex(indexes []TableIndex, where map[string]any) (TableIndex, bool) {
	var (
		best  TableIndex
		found bool
	)
	for _, ix := range indexes {
		if ix.State == IndexReady && ix.Covers(where) && len(ix.Columns) > len(best.Columns) {
			best, found = ix, true
		}
	}
	return best, found
}

// Row is one custom-table row.
type Row struct {
	ID        string         `json:"id"`
	Data      map[string]any `json:"data"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// Page is a cursor-paged slice of a listing.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// ListOptions pages a listing: Limit rows after Cursor (an opaque value the previous page returned).
type ListOptions struct {
	Limit  int
	Cursor string
}

// TableStore is the custom-table part of the engine's store, declared here so that step
// kinds can write rows inside the step's transaction without importing the engine.
// Every method takes the org id and puts it in its query.
type TableStore interface {
	// Custom tables. CreateTable: ErrConflict when the name exists in the org.
	CreateTable(ctx context.Context, t *Table) error
	GetTable(ctx context.Context, orgID, name string) (*Table, error)
	ListTables(ctx context.Context, orgID string, opts ListOptions) (Page[Table], error)
	// InsertRow appends a row. UpsertRow inserts, or replaces the data of, the row whose
	// key columns (keys, in order) equal row's values for them; it reports whether it inserted.
	InsertRow(ctx context.Context, orgID, table string, row map[string]any) (Row, error)
	UpsertRow(ctx context.Context, orgID, table string, keys []string, row map[string]any) (Row, bool, error)
	// ReadRows returns rows whose columns equal every where entry (compared as JSON values:
	// a string matches a string, a number a number), oldest first, at most limit (0 = no limit).
	ReadRows(ctx context.Context, orgID, table string, where map[string]any, limit int) ([]Row, error)
	// ListRows pages the rows ReadRows would return, in the same order (created_at, id):
	// Limit rows (default 50, at most 500) after Cursor, a value only a previous page issues.
	ListRows(ctx context.Context, orgID, table string, where map[string]any, opts ListOptions) (Page[Row], error)
	// UpdateRows merges set into the data of the rows matching where and returns how many changed.
	// An upserted row keeps its identity under its key columns: set changing one moves the row
	// to its new key (upserts find it there, not at the old one). ErrConflict, and nothing
	// changed, when that would give two upserted rows the same key.
	UpdateRows(ctx context.Context, orgID, table string, where, set map[string]any) (int, error)

	// Indexes. TableIndexes reads a table's indexes as stored now (ErrNotFound without the
	// table). AddTableIndex declares one, building (ErrConflict when the table has an index on
	// the same columns); from then on every write keeps its entries. BuildTableIndex writes
	// the entries of the rows after cursor ("" first), at most batch of them, and returns the
	// cursor to pass next ("" when every row is done); ReadyTableIndex lets reads use it.
	TableIndexes(ctx context.Context, orgID, table string) ([]TableIndex, error)
	AddTableIndex(ctx context.Context, orgID, table string, ix TableIndex) error
	BuildTableIndex(ctx context.Context, orgID, table, key, cursor string, batch int) (string, error)
	ReadyTableIndex(ctx context.Context, orgID, table, key string) error
	// CountRows counts a table's rows, stopping at upTo (0 = no bound).
	CountRows(ctx context.Context, orgID, table string, upTo int) (int, error)
	// DBNow is the database's clock; WaitOlderTransactions returns once every transaction
	// that began before since has ended (a declaration's build waits for the writes in
	// flight that did not see it).
	DBNow(ctx context.Context) (time.Time, error)
	WaitOlderTransactions(ctx context.Context, since time.Time, poll time.Duration) error
}

// CallIntent is an outbound call a step is making: recorded, in a short transaction of its
// own, before the call goes out, and removed in the transaction that commits the call's
// result. An intent found open when the run is claimed again means a worker made the call
// and stopped before committing it: the call is made once more with the same Key.
type CallIntent struct {
	RunID string `json:"run_id"`
	// Key is the call's idempotency key (StepCall.IdempotencyKey).
	Key string `json:"key"`
	// Tries counts the calls made, one per claim at most.
	Tries int `json:"tries"`
	// Claim is the lease token of the claim that made the latest try.
	Claim    string        `json:"-"`
	Attempts []CallAttempt `json:"attempts"`
}

// CallAttempt is one try of a call, for the run's evidence.
type CallAttempt struct {
	Try int       `json:"try"`
	At  time.Time `json:"at"`
}
