package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Store is what webhooks read and write outside a transaction: the registrations and their
// health, the deliveries with their attempts, and what Reads reads. engine/storage documents
// each method's contract.
type Store interface {
	Reads
	InsertWebhook(ctx context.Context, w *svctype.Webhook) error
	GetWebhook(ctx context.Context, orgID, id string) (*svctype.Webhook, error)
	DeleteWebhook(ctx context.Context, orgID, id string) error
	EnableWebhook(ctx context.Context, orgID, id string) (bool, error)
	RecordWebhookFailure(ctx context.Context, orgID, id string, threshold int, at time.Time) (*svctype.Webhook, error)

	GetDelivery(ctx context.Context, orgID, id string) (*svctype.Delivery, error)
	ListDeliveries(ctx context.Context, orgID, webhookID string, opts svctype.ListOptions) (svctype.Page[svctype.Delivery], error)
	ListDeliveryAttempts(ctx context.Context, orgID, deliveryID string) ([]svctype.DeliveryAttempt, error)
}

// Tx is what webhooks read and write in a transaction (an event's fan-out, an attempt's
// record, a redelivery, a change of a registration): deliveries, their attempts and jobs,
// circuits, and registrations.
type Tx interface {
	Reads
	GetWebhook(ctx context.Context, orgID, id string) (*svctype.Webhook, error)
	UpdateWebhook(ctx context.Context, w *svctype.Webhook) error
	DisableWebhook(ctx context.Context, orgID, id string, at time.Time) error
	EnableWebhook(ctx context.Context, orgID, id string) (bool, error)

	CreateDeliveries(ctx context.Context, ds []svctype.Delivery) error
	GetDelivery(ctx context.Context, orgID, id string) (*svctype.Delivery, error)
	UpdateDelivery(ctx context.Context, d *svctype.Delivery) error
	AddDeliveryAttempt(ctx context.Context, orgID string, a *svctype.DeliveryAttempt) error
	PutCircuit(ctx context.Context, orgID, url string, state json.RawMessage) error

	EnqueueJob(ctx context.Context, job *svctype.Job) error
	RenewJob(ctx context.Context, job *svctype.Job, lease time.Duration) error
	CompleteJob(ctx context.Context, job *svctype.Job) error
}

// Reads is what webhooks read through either the store or a transaction (inside one, a
// second connection could be one the pool does not have): the registrations an event goes
// to, the circuit of a target, and the catch-all address (org config).
type Reads interface {
	ListWebhooks(ctx context.Context, orgID string, f storage.WebhookListFilter) (svctype.Page[svctype.Webhook], error)
	GetCircuit(ctx context.Context, orgID, url string) (json.RawMessage, error)
	orgconfig.Values
}

// SealedStore is what master-key rotation reads and writes of the registrations
// (WebhookSealedSecrets): the organizations that hold secrets, their registrations, and
// the compare-and-swap of a sealed secret.
type SealedStore interface {
	ListWebhookSecretOrgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error)
	ListWebhooks(ctx context.Context, orgID string, f storage.WebhookListFilter) (svctype.Page[svctype.Webhook], error)
	ResealWebhookSecret(ctx context.Context, old *svctype.Webhook, sealed []byte, keyID string) error
}
