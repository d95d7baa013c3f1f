package engine

import (
	"github.com/svcflow/svcflow/engine/actions"
	"github.com/svcflow/svcflow/engine/agents"
	"github.com/svcflow/svcflow/engine/authoring"
	"github.com/svcflow/svcflow/engine/extforms"
	"github.com/svcflow/svcflow/engine/hitl"
	"github.com/svcflow/svcflow/engine/oauth"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/runops"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/tables"
	"github.com/svcflow/svcflow/engine/uploads"
	"github.com/svcflow/svcflow/engine/webhooks"
)

// Store is what the engine needs from a database: every part of engine/storage (the run
// core's and each feature's). engine/store implements it with bun for SQLite and
// PostgreSQL; engine/store/storetest is the suite every implementation passes.
type Store = storage.Full

// Tx is a store bound to one transaction: every part, as the run core hands it to the
// features it calls in that transaction.
type Tx = storage.Tx

// Querier is every data operation of the store, on the store or on a transaction.
type Querier = storage.All

// Each feature declares the methods it calls, on its store (Store) and in a transaction
// (Tx); a Store and its Tx implement them all. engine/store checks its types against
// Store and Tx, so a store that lacks a method a feature calls does not build.
var (
	_ actions.Store        = Store(nil)
	_ actions.Tx           = Tx(nil)
	_ agents.Store         = Store(nil)
	_ agents.Tx            = Tx(nil)
	_ authoring.Store      = Store(nil)
	_ authoring.Tx         = Tx(nil)
	_ uploads.Store        = Store(nil)
	_ uploads.Tx           = Tx(nil)
	_ extforms.Store       = Store(nil)
	_ extforms.Tx          = Tx(nil)
	_ hitl.Store           = Store(nil)
	_ hitl.Tx              = Tx(nil)
	_ oauth.Store          = Store(nil)
	_ oauth.Tx             = Tx(nil)
	_ oauth.SealedStore    = Store(nil)
	_ orgconfig.Store      = Store(nil)
	_ runops.Store         = Store(nil)
	_ runops.Tx            = Tx(nil)
	_ tables.Store         = Store(nil)
	_ tables.Tx            = Tx(nil)
	_ webhooks.Store       = Store(nil)
	_ webhooks.Tx          = Tx(nil)
	_ webhooks.SealedStore = Store(nil)
)

// Filters of the store's listings.
type (
	ApprovalFilter        = storage.ApprovalFilter
	RunFilter             = storage.RunFilter
	WebhookListFilter     = storage.WebhookListFilter
	OAuthConnectionFilter = storage.OAuthConnectionFilter
)

// Feature parts of the store, by their engine names.
type (
	WebhookStore      = storage.Webhooks
	OAuthStore        = storage.OAuth
	ExternalFormStore = storage.ExternalForms
	FormSchemaStore   = storage.FormSchemas
	RunStatusWatcher  = storage.RunStatusWatcher
	JobWatcher        = storage.JobWatcher
)
