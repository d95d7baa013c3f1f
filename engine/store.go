package engine

import (
	"github.com/svcflow/svcflow/engine/storage"
)

// Store is what the engine needs from a database: every part of engine/storage (the run
// core's and each feature's). engine/store implements it with bun for SQLite and
// PostgreSQL; engine/store/storetest is the suite every implementation passes.
type Store = storage.Full

// Tx is the run core's part of a store bound to one transaction; the value implements the
// feature parts of its store too (storage.In).
type Tx = storage.Tx

// Querier is every data operation of the store, usable on the store directly or, through
// storage.In, on a transaction.
type Querier = storage.All

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
