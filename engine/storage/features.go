package storage

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Actions is the storage of registered actions, one per (org, name). CreateAction:
// ErrConflict when the name is taken in the org. ReplaceAction replaces every field of the
// action named a.Name but CreatedAt (which it sets on a from the stored row); ErrNotFound
// when there is none, as for DeleteAction. ListActions pages by name; the cursor is opaque.
type Actions interface {
	CreateAction(ctx context.Context, a *svctype.Action) error
	GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error)
	ListActions(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Action], error)
	ReplaceAction(ctx context.Context, a *svctype.Action) error
	DeleteAction(ctx context.Context, orgID, name string) error
}

// ActionsByName reads several of an organization's actions in one query: those of names
// that exist, in any order (the tools of an agent are resolved this way).
type ActionsByName interface {
	GetActions(ctx context.Context, orgID string, names []string) ([]svctype.Action, error)
}

// WorkflowsByID reads several of an organization's workflows (current versions) in one
// query: those of ids that exist, in any order (an agent's workflow tools).
type WorkflowsByID interface {
	GetWorkflows(ctx context.Context, orgID string, ids []string) ([]svctype.Workflow, error)
}

// Agents is the storage of agent runs (svctype.AgentRun). SaveAgentRun writes the status,
// reason, iterations, state, updated_at and finished_at of an existing run (ErrNotFound
// when there is none); ListAgentRuns pages newest first, without State, one status's when
// status is set.
type Agents interface {
	CreateAgentRun(ctx context.Context, r *svctype.AgentRun) error
	GetAgentRun(ctx context.Context, orgID, id string) (*svctype.AgentRun, error)
	SaveAgentRun(ctx context.Context, r *svctype.AgentRun) error
	ListAgentRuns(ctx context.Context, orgID string, status svctype.AgentStatus, opts svctype.ListOptions) (svctype.Page[svctype.AgentRun], error)
	// AgentRunsOf returns the agent runs a workflow run started (its react loop steps'),
	// oldest first, without State.
	AgentRunsOf(ctx context.Context, orgID, parentRunID string) ([]svctype.AgentRun, error)
}

// Deliveries is the storage of webhook deliveries (svctype.Delivery): CreateDeliveries
// inserts them (IDs set by the caller); UpdateDelivery writes the status, attempts, next
// attempt, last answer and times; ListDeliveries pages them newest first (one webhook's when
// webhookID is set), without their bodies. AddDeliveryAttempt appends an attempt (N set by
// the caller). GetCircuit and PutCircuit keep the state of the circuit of a target address,
// as the events package encodes it (nil when there is none); the address itself is not
// stored.
type Deliveries interface {
	CreateDeliveries(ctx context.Context, ds []svctype.Delivery) error
	GetDelivery(ctx context.Context, orgID, id string) (*svctype.Delivery, error)
	UpdateDelivery(ctx context.Context, d *svctype.Delivery) error
	ListDeliveries(ctx context.Context, orgID, webhookID string, opts svctype.ListOptions) (svctype.Page[svctype.Delivery], error)
	AddDeliveryAttempt(ctx context.Context, orgID string, a *svctype.DeliveryAttempt) error
	ListDeliveryAttempts(ctx context.Context, orgID, deliveryID string) ([]svctype.DeliveryAttempt, error)
	GetCircuit(ctx context.Context, orgID, url string) (json.RawMessage, error)
	PutCircuit(ctx context.Context, orgID, url string, state json.RawMessage) error
}

// ApprovalFilter narrows ListApprovals.
type ApprovalFilter struct {
	Status svctype.ApprovalStatus
	Role   string
	svctype.ListOptions
}

// Approvals is the storage of approvals (svctype.Approval): CreateApproval inserts one;
// PendingApproval returns a run's pending one (ErrNotFound); DecideApproval writes the
// decision of one still pending (ErrConflict when it was decided meanwhile); ListApprovals
// pages newest first.
type Approvals interface {
	CreateApproval(ctx context.Context, a *svctype.Approval) error
	PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error)
	GetApproval(ctx context.Context, orgID, id string) (*svctype.Approval, error)
	DecideApproval(ctx context.Context, a *svctype.Approval) error
	ListApprovals(ctx context.Context, orgID string, f ApprovalFilter) (svctype.Page[svctype.Approval], error)
}

// FormPauses is the storage of form pauses (svctype.FormPause): FormPauseAt returns a run's
// latest pause at a step; CloseFormPause writes the submission or expiry of one still open
// (ErrConflict when it was closed meanwhile); ListFormPauses pages newest first.
type FormPauses interface {
	CreateFormPause(ctx context.Context, p *svctype.FormPause) error
	GetFormPause(ctx context.Context, orgID, id string) (*svctype.FormPause, error)
	FormPauseAt(ctx context.Context, orgID, runID string, step int) (*svctype.FormPause, error)
	CloseFormPause(ctx context.Context, p *svctype.FormPause) error
	ListFormPauses(ctx context.Context, orgID string, status svctype.FormPauseStatus, opts svctype.ListOptions) (svctype.Page[svctype.FormPause], error)
}

// OrgFeatures is the storage of organization features: all off for an organization that
// set none.
type OrgFeatures interface {
	GetOrgFeatures(ctx context.Context, orgID string) (svctype.OrgFeatures, error)
	PutOrgFeatures(ctx context.Context, orgID string, f svctype.OrgFeatures) error
}

// FormSchemas keeps the schemas generated for PbotForm steps, one per step of a workflow
// version (svctype.GeneratedFormSchema), read and written in the step's transaction.
type FormSchemas interface {
	// GeneratedFormSchema returns the schema kept for the step at k (ErrNotFound when none).
	GeneratedFormSchema(ctx context.Context, k svctype.FormSchemaKey) (*svctype.GeneratedFormSchema, error)
	// KeepGeneratedFormSchema stores s unless a schema is kept for its step already and
	// returns the one kept (the first to commit wins).
	KeepGeneratedFormSchema(ctx context.Context, s *svctype.GeneratedFormSchema) (*svctype.GeneratedFormSchema, error)
}

// OrgConfig is the storage of org config values, sealed (engine/secrets): the store never
// sees a plaintext value.
type OrgConfig = secrets.Store

// Documents is the storage of documents, their database blobs and event subjects.
type Documents = documents.Store

// OAuthConnectionFilter narrows ListOAuthConnections.
type OAuthConnectionFilter struct {
	Provider string
	// NotKeyID, when set, keeps the connections whose tokens are sealed under another
	// master key than this one: what rotation still has to move.
	NotKeyID string
	svctype.ListOptions
}

// OAuth is the storage of OAuth connections and of authorization flows in progress. Every
// method names the organization; the store sees tokens sealed only.
type OAuth interface {
	// InsertOAuthConnection inserts c (its ID set by the caller, whose seal names it);
	// ErrConflict when the organization has a connection of c.Provider and c.Account.
	InsertOAuthConnection(ctx context.Context, c *svctype.OAuthConnection) error
	// ReplaceOAuthConnection writes c's sealed tokens, key id, scopes, expiry, refresh flag,
	// source and updated_at over the connection c.ID of c.OrgID, and sets c.Version to the
	// stored version plus one. When ifVersion is not 0 the write happens only over that
	// version (ErrConflict otherwise: another writer got there first). ErrNotFound when
	// there is no such connection. c.CreatedAt is set from the stored row.
	ReplaceOAuthConnection(ctx context.Context, c *svctype.OAuthConnection, ifVersion int64) error
	GetOAuthConnection(ctx context.Context, orgID, id string) (*svctype.OAuthConnection, error)
	// FindOAuthConnection returns the organization's connection of provider and account.
	FindOAuthConnection(ctx context.Context, orgID, provider, account string) (*svctype.OAuthConnection, error)
	// ListOAuthConnections pages the organization's connections by provider, then account;
	// f.Provider, when set, keeps that provider's only.
	ListOAuthConnections(ctx context.Context, orgID string, f OAuthConnectionFilter) (svctype.Page[svctype.OAuthConnection], error)
	DeleteOAuthConnection(ctx context.Context, orgID, id string) error
	// ListOAuthConnectionOrgs pages the ids of the organizations that hold connections (under
	// another master key than f.NotKeyID, when set), in order. It reads no token: master-key
	// rotation walks the organizations with it, then reads each one's connections by org id.
	ListOAuthConnectionOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error)
	// ResealOAuthConnection replaces old's sealed tokens with sealed (under keyID) if the
	// stored connection is still at old.Version with old.Sealed. Neither the version nor
	// updated_at changes: the tokens are the same, and a refresh that read this version
	// must still win its compare-and-swap. ErrConflict when the connection changed since
	// old was read, ErrNotFound when it is gone.
	ResealOAuthConnection(ctx context.Context, old *svctype.OAuthConnection, sealed []byte, keyID string) error

	// CreateOAuthState records a flow in progress (and removes the organization's expired
	// ones). TakeOAuthState deletes and returns the organization's state of hash when it has
	// not expired at now: single use, so of two callbacks with one state one gets it and the
	// other ErrNotFound (as for an expired or unknown state).
	CreateOAuthState(ctx context.Context, s *svctype.OAuthState) error
	TakeOAuthState(ctx context.Context, orgID, hash string, now time.Time) (*svctype.OAuthState, error)
}

// WebhookListFilter narrows Webhooks.ListWebhooks.
type WebhookListFilter struct {
	// Event, when set, keeps the registrations of this canonical event.
	Event string
	// NotKeyID, when set, keeps the registrations whose secret is sealed under another
	// master key: what rotation still has to move.
	NotKeyID string
	svctype.ListOptions
}

// Webhooks is the storage of webhook registrations. Every method names the organization;
// the store sees secrets sealed only.
type Webhooks interface {
	// InsertWebhook inserts w (its ID set by the caller, whose seal names it).
	InsertWebhook(ctx context.Context, w *svctype.Webhook) error
	GetWebhook(ctx context.Context, orgID, id string) (*svctype.Webhook, error)
	// ListWebhooks pages the organization's registrations oldest first (created_at, then
	// id); f.Event keeps one canonical event's, f.NotKeyID those whose secret is sealed
	// under another master key (registrations without a secret are then left out).
	ListWebhooks(ctx context.Context, orgID string, f WebhookListFilter) (svctype.Page[svctype.Webhook], error)
	// UpdateWebhook writes w's registration (event, alias, url, sealed secret and its key
	// id, filter, auto_payload, updated_at) over the stored one, leaving its health alone;
	// ErrNotFound when there is none.
	UpdateWebhook(ctx context.Context, w *svctype.Webhook) error
	DeleteWebhook(ctx context.Context, orgID, id string) error
	// DisableWebhook disables an enabled registration as of at (nothing when it is
	// disabled already); EnableWebhook enables one and resets its failure count, and
	// reports whether anything changed (false as well when there is no such registration).
	DisableWebhook(ctx context.Context, orgID, id string, at time.Time) error
	EnableWebhook(ctx context.Context, orgID, id string) (bool, error)
	// RecordWebhookFailure adds one to a registration's consecutive failures and disables
	// it as of at when they reach threshold, in one statement; it returns the registration
	// as it now is. ErrNotFound when there is none.
	RecordWebhookFailure(ctx context.Context, orgID, id string, threshold int, at time.Time) (*svctype.Webhook, error)
	// ListWebhookSecretOrgs pages the ids of the organizations holding webhook secrets
	// (under another master key than f.NotKeyID, when set), reading no secret: master-key
	// rotation walks the organizations with it.
	ListWebhookSecretOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error)
	// ResealWebhookSecret replaces old's sealed secret with sealed (under keyID) if the
	// stored one is still old.Sealed, changing nothing else (not updated_at): ErrConflict
	// when it changed since old was read, ErrNotFound when the registration is gone.
	ResealWebhookSecret(ctx context.Context, old *svctype.Webhook, sealed []byte, keyID string) error
}

// ExternalForms keeps external forms and their submissions. ReplaceExternalForm writes
// every field but CreatedAt (ErrNotFound when there is none); DeleteExternalForm removes the
// form and its submissions. Listings page newest first.
type ExternalForms interface {
	CreateExternalForm(ctx context.Context, f *svctype.ExternalForm) error
	GetExternalForm(ctx context.Context, orgID, id string) (*svctype.ExternalForm, error)
	// LockExternalForm is GetExternalForm inside a transaction, holding the form's row until
	// it ends: shared (a submission) or exclusive (a change), so the two never interleave.
	LockExternalForm(ctx context.Context, orgID, id string, exclusive bool) (*svctype.ExternalForm, error)
	ListExternalForms(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.ExternalForm], error)
	ReplaceExternalForm(ctx context.Context, f *svctype.ExternalForm) error
	DeleteExternalForm(ctx context.Context, orgID, id string) error
	CreateFormSubmission(ctx context.Context, s *svctype.FormSubmission) error
	ListFormSubmissions(ctx context.Context, orgID, formID string, opts svctype.ListOptions) (svctype.Page[svctype.FormSubmission], error)
}

// Authoring is the storage of the process studio: projects, processes and their bundles,
// every read and write by organization.
type Authoring interface {
	CreateProject(ctx context.Context, p *svctype.Project) error
	GetProject(ctx context.Context, orgID, id string) (*svctype.Project, error)
	ListProjects(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Project], error)
	// CreateProcess inserts p; ErrConflict when its project has a process of that name.
	CreateProcess(ctx context.Context, p *svctype.Process) error
	GetProcess(ctx context.Context, orgID, id string) (*svctype.Process, error)
	ListProcesses(ctx context.Context, orgID, projectID string, opts svctype.ListOptions) (svctype.Page[svctype.Process], error)
	// SetProcessPublished records a publication on the process: the bundle, and the workflow
	// and version it put (what the process runs from then on).
	SetProcessPublished(ctx context.Context, orgID, id, bundleID, workflowID string, workflowVersion int, at time.Time) error
	// ProcessOfWorkflow returns the process that publishes the workflow, or ErrNotFound.
	ProcessOfWorkflow(ctx context.Context, orgID, workflowID string) (*svctype.Process, error)
	// CreateBundle inserts b as its process's next version (b.Version is set).
	CreateBundle(ctx context.Context, b *svctype.Bundle) error
	GetBundle(ctx context.Context, orgID, id string) (*svctype.Bundle, error)
	// PublishBundle marks a draft published; ErrConflict when it was published already.
	PublishBundle(ctx context.Context, orgID, id, note, workflowID string, workflowVersion int, at time.Time) error
	CreateGeneration(ctx context.Context, g *svctype.Generation) error
	GetGeneration(ctx context.Context, orgID, id string) (*svctype.Generation, error)
	// FinishGeneration writes a generation's outcome, once: ErrConflict when it is no
	// longer processing.
	FinishGeneration(ctx context.Context, g *svctype.Generation) error
}

// RunOperations is the storage of run operations (svctype.RunOperation): CreateRunOperation
// inserts one (ID set by the caller; ErrConflict when taken); SaveRunOperation writes its
// status, counts, errors, cursor and times (ErrNotFound when there is none);
// ListRunOperations pages them newest first.
type RunOperations interface {
	CreateRunOperation(ctx context.Context, op *svctype.RunOperation) error
	GetRunOperation(ctx context.Context, orgID, id string) (*svctype.RunOperation, error)
	SaveRunOperation(ctx context.Context, op *svctype.RunOperation) error
	ListRunOperations(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.RunOperation], error)
}
