package webhooks

// Webhook signing secrets as a sealed collection, for key rotation (engine/secrets).

import (
	"context"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// WebhookSealedSecrets is the sealed secrets of st's webhook registrations as a collection
// that secrets.ResealCollections moves to the current master key: master-key rotation
// re-seals them with org config, or secrets sealed under a retired key would stop opening
// (and their targets stop receiving). The write is a compare-and-swap on the sealed bytes,
// so a PATCH of the secret in between wins; it changes no updated_at.
func WebhookSealedSecrets(st SealedStore) secrets.SealedCollection {
	return webhookSecretCollection{st}
}

type webhookSecretCollection struct{ st SealedStore }

func (webhookSecretCollection) Kind() string { return "webhook secrets" }

func (c webhookSecretCollection) Orgs(ctx context.Context, f secrets.ListFilter) (svctype.Page[string], error) {
	return c.st.ListWebhookSecretOrgs(ctx, f)
}

func (c webhookSecretCollection) List(ctx context.Context, orgID string, f secrets.ListFilter) (svctype.Page[secrets.SealedValue], error) {
	lf := storage.WebhookListFilter{NotKeyID: f.NotKeyID, ListOptions: f.ListOptions}
	page, err := c.st.ListWebhooks(ctx, orgID, lf)
	out := svctype.Page[secrets.SealedValue]{NextCursor: page.NextCursor, Items: make([]secrets.SealedValue, 0, len(page.Items))}
	for _, w := range page.Items {
		if !w.HasSecret {
			continue
		}
		out.Items = append(out.Items, secrets.SealedValue{
			OrgID: w.OrgID, ID: w.ID, Name: webhookSealName(w.ID), Sealed: w.Sealed, KeyID: w.MasterKeyID,
		})
	}
	return out, err
}

func (c webhookSecretCollection) Reseal(ctx context.Context, old *secrets.SealedValue, sealed []byte, keyID string) error {
	return c.st.ResealWebhookSecret(ctx, &svctype.Webhook{OrgID: old.OrgID, ID: old.ID, Sealed: old.Sealed, MasterKeyID: old.KeyID}, sealed, keyID)
}
