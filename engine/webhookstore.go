package engine

import (
	"context"
	"time"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
)

// WebhookStore is the storage of webhook registrations. Every method names the
// organization; the store sees secrets sealed only.
type WebhookStore interface {
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

// WebhookListFilter narrows WebhookStore.ListWebhooks.
type WebhookListFilter struct {
	// Event, when set, keeps the registrations of this canonical event.
	Event string
	// NotKeyID, when set, keeps the registrations whose secret is sealed under another
	// master key: what rotation still has to move.
	NotKeyID string
	svctype.ListOptions
}
