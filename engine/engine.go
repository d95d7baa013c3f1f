// Package engine is svcflow's runtime as a library: the composition root that assembles the
// run core (engine/core) and the features on its seam, and the façade embedding programs
// and the hosts use. It declares the storage it needs (Store, every part of
// engine/storage) and never speaks HTTP to its callers; hosts/ wraps it.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
	"github.com/svcflow/svcflow/engine/actions"
	"github.com/svcflow/svcflow/engine/agents"
	"github.com/svcflow/svcflow/engine/authoring"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/extforms"
	"github.com/svcflow/svcflow/engine/hitl"
	"github.com/svcflow/svcflow/engine/oauth"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/runops"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
	"github.com/svcflow/svcflow/engine/uploads"
	"github.com/svcflow/svcflow/engine/webhooks"
)

// Config assembles an Engine.
type Config struct {
	// Store is required.
	Store Store
	// Env holds the step kinds; nil means NewEnvironment() (every built-in).
	Env *Environment
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. A timer's due time (a form's expiry, a
	// delivery's retry) is read on it and compared with the store's clock, so a store given
	// a clock of its own (store.WithNow) is given this one.
	Now func() time.Time
	// After is the clock's timer, time.After when nil: a status wait's deadline (?wait=)
	// passes when it fires. internal/testclock's fires when a test moves it.
	After func(time.Duration) <-chan time.Time
	// Lease is how long a claimed job stays with its worker without a heartbeat
	// (default 15s): a worker killed mid-run leaves its jobs claimable after at most this.
	Lease time.Duration
	// Blobs keeps document content; nil keeps it in the database (table document_blobs),
	// written in the same transaction as its version row. documents.NewDirBlobs(dir) keeps
	// it in a directory instead.
	Blobs documents.BlobStore
	// MaxDocumentBytes is the largest content one document version may have; 0 means
	// documents.MaxSize (25 MiB). A matcher's leg given as a CSV document of a million
	// records is about 40 MB.
	MaxDocumentBytes int
	// StepObserver, when set, is told how long each committed unit of run work took (one
	// step, or one foreach element), transaction included: metrics and benchmarks use it.
	StepObserver func(stepType string, d time.Duration)
	// Meter records the engine's metrics (Metrics lists them); nil records nothing.
	Meter svctype.Meter
	// TracerProvider makes the engine's OpenTelemetry spans: a run's, its slices', its
	// steps', model calls' and webhook deliveries' (docs/operations.md, Tracing). Every span
	// of a run is in one trace whose id is derived from the run's id (engine/tracing); give
	// an SDK provider tracing.IDGenerator{} so that the run's span is that trace's root. nil
	// (or a no-op provider) makes no span at all.
	TracerProvider trace.TracerProvider
	// Slice is how long a worker keeps advancing one run before it hands the run back to
	// the queue (at a step boundary) so that queued runs, of any organization, take their
	// turn (default 100ms). A run that ends within its slice never goes back to the queue.
	Slice time.Duration
	// ChainTime is how long a unit of run work may go on running and committing, in its
	// transaction, the quick steps that follow its first (steps that run wholly inside a
	// transaction: no outside call, pause, loop or read run ahead), bounded by Slice too
	// (default DefaultChainTime). Negative commits every step in a transaction of its own.
	ChainTime time.Duration
	// IOConcurrency is how many calls of steps' IO halves (HTTP actions, queries, model
	// calls) may be in flight at once in this process (default DefaultIOConcurrency). A call
	// holds no step slot of its worker, so this is much larger than the slots.
	IOConcurrency int
	// IOPerOrg caps the calls in flight of one organization (default DefaultIOPerOrg), so
	// that one organization's slow third party cannot take every place.
	IOPerOrg int
	// CallTimeout bounds one call of an IO half (default DefaultCallTimeout); kinds set
	// their own shorter timeouts (an HTTP action's per-request timeout).
	CallTimeout time.Duration
	// DeliveryTimeout bounds one webhook delivery attempt (default events.ResponseTimeout,
	// the spec's 10 s): a 2xx must arrive within it. Tests shorten it.
	DeliveryTimeout time.Duration
	// AllowPrivateTargets lets actions reach loopback, private, link-local and metadata
	// addresses (and local databases); off, such a call fails with target_not_allowed. For
	// single-tenant deployments and tests only.
	AllowPrivateTargets bool
	// ModelFactory builds the model client the llm action calls, from the organization's
	// api:llm_base_url and api:llm_api_key and the guarded HTTP client; nil means the
	// OpenAI-compatible client of agent/llm.
	ModelFactory func(baseURL, apiKey string, hc *http.Client) (agent.Model, error)
	// WaitPoll is how often the status of runs that callers wait for is re-read, to catch a
	// change that no notification reported (default 500ms).
	WaitPoll time.Duration
	// Keyring seals and opens org config values (secrets.NewKeyring, secrets.OpenKeyring);
	// nil leaves org config unavailable: its calls fail with secrets.ErrNoMasterKey.
	Keyring *secrets.Keyring
	// OAuth configures OAuth connections and the built-in OAuth tools (oauth.go); the zero
	// value uses the real providers.
	OAuth OAuthOptions
}

// Engine runs workflows for many organizations against one Store: the run core and every
// feature, whose methods it has (eng.Execute is the core's, eng.CreateWebhook the webhooks').
// The features are fields too, for callers that serve one (eng.Webhooks, eng.HITL).
type Engine struct {
	*core.Core
	*tables.Tables
	*orgconfig.OrgConfig
	*actions.Actions
	*webhooks.Webhooks
	*oauth.Connections
	*uploads.Documents
	*extforms.Forms
	*hitl.HITL
	*agents.Agents
	*authoring.Authoring
	*runops.RunOps

	store Store
}

// feature is a feature as the composition root plugs it into the run core.
type feature interface{ Register(c *core.Core) }

// New returns an engine over cfg.Store with every feature. The store implements what every
// feature calls (Store is storage.Full; store.go holds the checks), which the compiler checks.
func New(cfg Config) (*Engine, error) {
	c, err := core.New(core.Config{Store: cfg.Store, Env: cfg.Env, Logger: cfg.Logger, Now: cfg.Now, After: cfg.After, Lease: cfg.Lease,
		StepObserver: cfg.StepObserver, Meter: cfg.Meter, TracerProvider: cfg.TracerProvider, Slice: cfg.Slice, ChainTime: cfg.ChainTime, IOConcurrency: cfg.IOConcurrency, IOPerOrg: cfg.IOPerOrg,
		CallTimeout: cfg.CallTimeout, WaitPoll: cfg.WaitPoll})
	if err != nil {
		return nil, err
	}
	factory := cfg.ModelFactory
	if factory == nil {
		factory = func(baseURL, apiKey string, hc *http.Client) (agent.Model, error) {
			return llm.New(llm.Options{BaseURL: baseURL, APIKey: apiKey, HTTPClient: hc})
		}
	}
	modelHTTP := outbound.NewHTTPClient(cfg.AllowPrivateTargets, 0, 16)
	model := func(baseURL, apiKey string) (agent.Model, error) {
		m, err := factory(baseURL, apiKey, modelHTTP)
		if err != nil && baseURL != "" {
			// Every caller's base URL is the org config value: named, never quoted.
			return nil, fmt.Errorf("org config %s: %w", orgconfig.LLMBaseURL, err)
		}
		if err != nil {
			return nil, err
		}
		return observedModel{Model: m, meter: c.Meter(), tracer: c.Tracer()}, nil
	}

	e := &Engine{Core: c, store: cfg.Store}
	e.Tables = tables.New(c, cfg.Store)
	e.OrgConfig = orgconfig.New(cfg.Store, cfg.Keyring, c.Logger(), c.Now)
	e.Actions = actions.New(c, cfg.Store, actions.Options{AllowPrivateTargets: cfg.AllowPrivateTargets, Model: model})
	e.Connections = oauth.New(c, cfg.Store, e.OrgConfig, cfg.Keyring, cfg.OAuth)
	e.Webhooks = webhooks.New(c, cfg.Store, e.OrgConfig, webhooks.Options{Keyring: cfg.Keyring,
		AllowPrivateTargets: cfg.AllowPrivateTargets, DeliveryTimeout: cfg.DeliveryTimeout})
	e.HITL = hitl.New(c, cfg.Store, model)
	e.Documents = uploads.New(c, cfg.Store, cfg.Blobs, cfg.MaxDocumentBytes)
	e.Forms = extforms.New(c, cfg.Store)
	e.Agents = agents.New(c, cfg.Store, model)
	e.Authoring = authoring.New(c, e.Actions, cfg.Store).WithModel(model)
	e.RunOps = runops.New(c, cfg.Store)
	for _, f := range []feature{e.Tables, e.OrgConfig, e.Actions, e.Connections, e.Webhooks, e.HITL, e.Documents, e.Agents, e.Authoring, e.RunOps} {
		f.Register(c)
	}
	return e, nil
}

// Org config (engine/orgconfig).
const (
	// MaxOrgConfigKeyLen is the longest key name, in bytes.
	MaxOrgConfigKeyLen = orgconfig.MaxKeyLen
	// MaxOrgConfigValueLen is the largest value, in bytes (64 KiB).
	MaxOrgConfigValueLen = orgconfig.MaxValueLen
	// OrgConfigPrefix marks a reference to an org config value: orgconfig:<key>.
	OrgConfigPrefix = orgconfig.Prefix
)

// Store returns the engine's store (for embedding programs that want InTx).
func (e *Engine) Store() Store { return e.store }

// Ready reports whether the engine's store can serve this build now: it answers a trivial
// query within ctx and has every migration applied (ErrSchemaBehind otherwise). A host's
// readiness probe asks it; it writes nothing.
func (e *Engine) Ready(ctx context.Context) error { return e.store.Ready(ctx) }

// ValidOrgID reports whether id can name an organization: 1-128 characters of
// [A-Za-z0-9_.:-].
func ValidOrgID(id string) bool { return core.ValidOrgID(id) }

// ObserveEvents calls fn with every event the engine emits, in the transaction that appends
// it to the outbox (an event whose transaction then rolls back was observed all the same).
// fn must not block or fail. The test suites watch every payload with it
// (internal/contracttest.WatchEvents); an embedding program may count or log events.
func (e *Engine) ObserveEvents(fn func(svctype.Event)) {
	e.Core.RegisterSink(func(_ context.Context, _ Tx, evs []svctype.Event, _ *core.EventSubject) error {
		for _, ev := range evs {
			fn(ev)
		}
		return nil
	})
}
