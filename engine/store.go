package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what the engine needs from a database. engine/store implements it with bun for
// SQLite and PostgreSQL; engine/store/storetest is the suite every implementation passes.
// Every method that touches a tenant resource takes the org id and puts it in its query.
type Store interface {
	Querier
	// InTx runs fn in one transaction: committed when fn returns nil, rolled back otherwise.
	// The Tx passed to fn must not be used after fn returns.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// ClaimJobs leases up to n jobs whose run_at has come and whose lease is free or expired,
	// oldest run_at first, for lease. Each claimed job gets a fresh LeaseToken and Attempts+1.
	// PostgreSQL claims with FOR UPDATE SKIP LOCKED so many workers share the table.
	ClaimJobs(ctx context.Context, n int, lease time.Duration) ([]svctype.Job, error)
	// ExtendLeases pushes lease_until to now+lease for the given jobs that still hold token;
	// a job is named by its OrgID, ID and LeaseToken together.
	ExtendLeases(ctx context.Context, jobs []svctype.Job, lease time.Duration) error
	// Migrate brings the schema up to date; it is safe to call on every start and from
	// several processes at once.
	Migrate(ctx context.Context) error
	Close() error
}

// Tx is a Querier bound to one transaction.
type Tx interface {
	Querier
}

// ApprovalFilter narrows ListApprovals.
type ApprovalFilter struct {
	Status svctype.ApprovalStatus
	Role   string
	svctype.ListOptions
}

// RunFilter narrows ListRuns.
type RunFilter struct {
	WorkflowID string
	Status     svctype.RunStatus
	svctype.ListOptions
}

// Querier is every data operation, usable on the store directly or inside a transaction.
type Querier interface {
	// Workflows. CreateWorkflow inserts version 1 (ErrConflict when the name is taken in the
	// org); UpdateWorkflow stores w as a new version w.Version (the caller increments it) and
	// makes it current (ErrNotFound, ErrConflict on a taken name). Get returns the current
	// version; GetWorkflowVersion a given one (kept after updates so runs can name theirs).
	// DeleteWorkflow removes the workflow, its versions and the form schemas generated for
	// them; runs stay.
	CreateWorkflow(ctx context.Context, w *svctype.Workflow) error
	UpdateWorkflow(ctx context.Context, w *svctype.Workflow) error
	GetWorkflow(ctx context.Context, orgID, id string) (*svctype.Workflow, error)
	GetWorkflowVersion(ctx context.Context, orgID, id string, version int) (*svctype.Workflow, error)
	ListWorkflows(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Workflow], error)
	DeleteWorkflow(ctx context.Context, orgID, id string) error

	// Runs. CreateRun inserts a run (Definition included). When run.IdempotencyKey is set,
	// the key is recorded until keyExpires; if an unexpired record of that key already exists
	// in the org, CreateRun inserts nothing and returns ErrConflict.
	// RunIDForIdempotencyKey returns the run id recorded for an unexpired key, or ErrNotFound.
	CreateRun(ctx context.Context, run *svctype.Run, keyExpires time.Time) error
	RunIDForIdempotencyKey(ctx context.Context, orgID, key string, now time.Time) (string, error)
	GetRun(ctx context.Context, orgID, id string) (*svctype.Run, error)
	// UpdateRun writes Status, Cursor, Reason, UpdatedAt and FinishedAt of an existing run.
	// A store that implements RunStatusWatcher announces, at commit, a status other than
	// running to the watchers of every process.
	UpdateRun(ctx context.Context, run *svctype.Run) error
	// RunStatuses returns the status of each of the org's runs in ids that exists.
	RunStatuses(ctx context.Context, orgID string, ids []string) (map[string]svctype.RunStatus, error)
	// ListRuns pages runs newest first; the cursor is opaque to callers.
	ListRuns(ctx context.Context, orgID string, f RunFilter) (svctype.Page[svctype.Run], error)

	// Run context, stored one row per key: PutContext inserts or replaces one key.
	// GetContext returns every key, or only the given keys (those that exist).
	PutContext(ctx context.Context, orgID, runID, key string, value json.RawMessage) error
	GetContext(ctx context.Context, orgID, runID string, keys ...string) (map[string]json.RawMessage, error)

	// Step records, one per top-level step index: PutStep inserts or replaces.
	PutStep(ctx context.Context, orgID string, rec *svctype.StepRecord) error
	ListSteps(ctx context.Context, orgID, runID string) ([]svctype.StepRecord, error)
	// StepStatuses returns each recorded step's status by index: what a status poll needs,
	// without the records' JSON columns.
	StepStatuses(ctx context.Context, orgID, runID string) (map[int]svctype.StepStatus, error)

	// Foreach progress: one output per element, inserted or replaced by (run, step, item).
	PutLoopItem(ctx context.Context, orgID, runID string, step, item int, output json.RawMessage) error
	ListLoopItems(ctx context.Context, orgID, runID string, step int) ([]json.RawMessage, error)

	// Outbox. AppendEvents assigns Seq in order. ListRunEvents pages a run's events oldest first.
	AppendEvents(ctx context.Context, events []svctype.Event) error
	ListRunEvents(ctx context.Context, orgID, runID string, opts svctype.ListOptions) (svctype.Page[svctype.Event], error)

	// Jobs. Leases are set and compared on the store's clock only (ClaimJobs, RenewJob,
	// ExtendLeases all take a duration), so an engine with an injected clock cannot hold a
	// lease that the store already considers expired. A job is named by its OrgID and ID
	// together: another organization's job is never touched. EnqueueJob inserts a job (ID
	// assigned). RenewJob verifies that the job still holds job.LeaseToken (else
	// ErrLeaseLost), and sets its run_at (the store's now when zero), payload and attempts,
	// and keeps the lease for lease more, or frees it when lease is 0.
	// CompleteJob deletes a job that still holds its token (else ErrLeaseLost).
	// DeleteJobs removes an org's jobs of a kind for a run or a workflow (whichever id is set).
	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
	DeleteJobs(ctx context.Context, orgID, kind, runID, workflowID string) error

	// Outbound call intents (svctype.CallIntent). OpenCall records a try of call key made
	// under claim (a job's lease token) and returns the intent before this try (nil when it
	// was not open) and after it; CloseCalls removes every open intent of a run.
	OpenCall(ctx context.Context, orgID, runID, key, claim string, at time.Time) (before, now *svctype.CallIntent, err error)
	CloseCalls(ctx context.Context, orgID, runID string) error

	// Registered actions, one per (org, name). CreateAction: ErrConflict when the name is
	// taken in the org. ReplaceAction replaces every field of the action named a.Name but
	// CreatedAt (which it sets on a from the stored row); ErrNotFound when there is none, as
	// for DeleteAction. ListActions pages by name; the cursor is opaque to callers.
	CreateAction(ctx context.Context, a *svctype.Action) error
	GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error)
	ListActions(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Action], error)
	ReplaceAction(ctx context.Context, a *svctype.Action) error
	DeleteAction(ctx context.Context, orgID, name string) error

	// Webhook deliveries (svctype.Delivery): CreateDeliveries inserts them (IDs set by the
	// caller); UpdateDelivery writes the status, attempts, next attempt, last answer and
	// times; ListDeliveries pages them newest first (one webhook's when webhookID is set),
	// without their bodies. AddDeliveryAttempt appends an attempt (N set by the caller).
	// GetCircuit and PutCircuit keep the state of the circuit of a target address, as the
	// events package encodes it (nil when there is none); the address itself is not stored.
	CreateDeliveries(ctx context.Context, ds []svctype.Delivery) error
	GetDelivery(ctx context.Context, orgID, id string) (*svctype.Delivery, error)
	UpdateDelivery(ctx context.Context, d *svctype.Delivery) error
	ListDeliveries(ctx context.Context, orgID, webhookID string, opts svctype.ListOptions) (svctype.Page[svctype.Delivery], error)
	AddDeliveryAttempt(ctx context.Context, orgID string, a *svctype.DeliveryAttempt) error
	ListDeliveryAttempts(ctx context.Context, orgID, deliveryID string) ([]svctype.DeliveryAttempt, error)
	GetCircuit(ctx context.Context, orgID, url string) (json.RawMessage, error)
	PutCircuit(ctx context.Context, orgID, url string, state json.RawMessage) error

	// Approvals (svctype.Approval): CreateApproval inserts one; PendingApproval returns a
	// run's pending one (ErrNotFound); DecideApproval writes the decision of one still
	// pending (ErrConflict when it was decided meanwhile); ListApprovals pages newest first.
	CreateApproval(ctx context.Context, a *svctype.Approval) error
	PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error)
	GetApproval(ctx context.Context, orgID, id string) (*svctype.Approval, error)
	DecideApproval(ctx context.Context, a *svctype.Approval) error
	ListApprovals(ctx context.Context, orgID string, f ApprovalFilter) (svctype.Page[svctype.Approval], error)

	// Form pauses (svctype.FormPause): FormPauseAt returns a run's latest pause at a step;
	// CloseFormPause writes the submission or expiry of one still open (ErrConflict when it
	// was closed meanwhile); ListFormPauses pages newest first.
	CreateFormPause(ctx context.Context, p *svctype.FormPause) error
	GetFormPause(ctx context.Context, orgID, id string) (*svctype.FormPause, error)
	FormPauseAt(ctx context.Context, orgID, runID string, step int) (*svctype.FormPause, error)
	CloseFormPause(ctx context.Context, p *svctype.FormPause) error
	ListFormPauses(ctx context.Context, orgID string, status svctype.FormPauseStatus, opts svctype.ListOptions) (svctype.Page[svctype.FormPause], error)

	// Organization features: all off for an organization that set none.
	GetOrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error)
	PutOrgFeatures(ctx context.Context, orgID string, f svctype.OrgFeatures) error

	// Custom tables (the methods steps use are declared in svctype.TableStore).
	svctype.TableStore
	documents.Store
	// Org config, sealed (engine/secrets): the store never sees a plaintext value.
	secrets.Store
	// OAuth connections (tokens sealed) and authorization flows in progress (oauth.go).
	OAuthStore
	// Webhook registrations (secrets sealed) and their health (webhooks.go).
	WebhookStore
	// External forms and their submissions (externalforms.go).
	ExternalFormStore
	// Form schemas generated for PbotForm steps (formgen.go).
	FormSchemaStore
}
