package engine

import (
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/webhooks"
)

// Webhooks and deliveries (engine/webhooks).
type (
	WebhookInput  = webhooks.WebhookInput
	WebhookPatch  = webhooks.WebhookPatch
	WebhookTarget = webhooks.WebhookTarget
	DeliveryDoc   = webhooks.DeliveryDoc
)

const (
	CatchAllKey           = webhooks.CatchAllKey
	JobDeliver            = webhooks.JobDeliver
	TargetWebhook         = webhooks.TargetWebhook
	TargetCatchAll        = webhooks.TargetCatchAll
	MaxWebhookSecretLen   = webhooks.MaxWebhookSecretLen
	MaxWebhookURLLen      = webhooks.MaxWebhookURLLen
	MaxWebhookAutoPayload = webhooks.MaxWebhookAutoPayload
	WebhookDisableAfter   = webhooks.WebhookDisableAfter
	CodeTargetNotAllowed  = webhooks.CodeTargetNotAllowed
)

// WebhookSealedSecrets is the sealed secrets of st's webhook registrations as a collection
// that secrets.ResealCollections moves to the current master key.
func WebhookSealedSecrets(st WebhookStore) secrets.SealedCollection {
	return webhooks.WebhookSealedSecrets(st)
}
