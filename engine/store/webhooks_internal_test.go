package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestWebhookStatementsCarryOrgID: every statement the webhook methods send names the org
// (DESIGN.md: the store puts the org id in every query), on both dialects. The one
// exception is ListWebhookSecretOrgs, which selects org ids only, for rotation.
func TestWebhookStatementsCarryOrgID(t *testing.T) {
	t.Parallel()
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		s := OpenTest(t, dialect)
		q, log := loggedQuerier(s)

		w := &svctype.Webhook{OrgID: "o", ID: "whk_1", Event: "document.uploaded", URL: "https://h.example.com/",
			HasSecret: true, Sealed: []byte{1, 2, 3}, MasterKeyID: "k1", Filter: &svctype.WebhookFilter{Tags: []string{"t"}}}
		require.NoError(t, q.InsertWebhook(ctx, w))
		_, err := q.GetWebhook(ctx, "o", "whk_1")
		require.NoError(t, err)
		_, err = q.ListWebhooks(ctx, "o", storage.WebhookListFilter{Event: "document.uploaded", NotKeyID: "k2", ListOptions: svctype.ListOptions{Limit: 1}})
		require.NoError(t, err)
		require.NoError(t, q.UpdateWebhook(ctx, w))
		_, err = q.RecordWebhookFailure(ctx, "o", "whk_1", 1, time.Now())
		require.NoError(t, err)
		_, err = q.EnableWebhook(ctx, "o", "whk_1")
		require.NoError(t, err)
		require.NoError(t, q.DisableWebhook(ctx, "o", "whk_1", time.Now()))
		require.NoError(t, q.ResealWebhookSecret(ctx, w, []byte{4, 5, 6}, "k2"))
		require.NoError(t, q.DeleteWebhook(ctx, "o", "whk_1"))
		log.mu.Lock()
		n0 := len(log.stmts)
		log.mu.Unlock()
		_, err = q.ListWebhookSecretOrgs(ctx, secrets.ListFilter{NotKeyID: "k2"})
		require.NoError(t, err)

		log.mu.Lock()
		defer log.mu.Unlock()
		n := 0
		for i, stmt := range log.stmts {
			if !strings.Contains(stmt, `"webhooks"`) {
				continue
			}
			plain := strings.ReplaceAll(stmt, `"`, "")
			if i >= n0 {
				require.Contains(t, plain, "SELECT DISTINCT org_id", "the cross-organization listing reads org ids only: %s", plain)
				continue
			}
			n++
			if strings.HasPrefix(plain, "INSERT ") {
				require.Contains(t, plain, "(org_id, id, ", "an insert into webhooks without the org id")
				continue
			}
			require.Contains(t, plain, "org_id = 'o'", "a statement on webhooks that does not select by org id: %s", plain)
		}
		require.Equal(t, 9, n)
	})
}
