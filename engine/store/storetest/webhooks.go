package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testWebhooks is the webhook part of the suite (storage.Webhooks): registrations
// created, read, paged, updated, deleted; their health; the re-sealing of their secrets.
// Sealed bytes are opaque to the store, so the suite writes arbitrary ones. Its parts share
// one store; each works in organizations of its own.
func testWebhooks(t *testing.T, b *bundle) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, b *bundle, org string)
	}{
		{"CreateGet", testWebhookCreateGet},
		{"List", testWebhookList},
		{"Update", testWebhookUpdate},
		{"Health", testWebhookHealth},
		{"Delete", testWebhookDelete},
		{"Tenancy", testWebhookTenancy},
		{"Orgs", testWebhookOrgs},
		{"Reseal", testWebhookReseal},
		{"Tx", testWebhookTx},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b, "wh_"+tt.name) })
	}
}

func (b *bundle) webhook(t *testing.T, org, event string, created time.Time) *svctype.Webhook {
	t.Helper()
	w := &svctype.Webhook{
		ID: "whk_" + newID(), OrgID: org, Event: event, URL: "https://hooks.example.com/" + event,
		HasSecret: true, Sealed: []byte{1, 0, 0xff, 7}, MasterKeyID: "k1",
		CreatedAt: created, UpdatedAt: created,
	}
	require.NoError(t, b.s.InsertWebhook(b.ctx, w))
	return w
}

func testWebhookCreateGet(t *testing.T, b *bundle, org string) {
	_, err := b.s.GetWebhook(b.ctx, org, "whk_missing")
	require.ErrorIs(t, err, storage.ErrNotFound)

	created := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("x", 3600))
	w := &svctype.Webhook{
		ID: "whk_" + newID(), OrgID: org, Event: "workflow_run_started", EventAlias: "workflow.started",
		URL: "https://hooks.example.com/a?x=1", HasSecret: true, Sealed: []byte{1, 0, 0xff}, MasterKeyID: "k1",
		AutoPayload: map[string]any{"source": "svcflow", "n": 1.5, "nested": map[string]any{"a": []any{"b"}}},
		CreatedAt:   created, UpdatedAt: created,
	}
	require.NoError(t, b.s.InsertWebhook(b.ctx, w))
	require.True(t, w.CreatedAt.Equal(created.Truncate(time.Microsecond)), "the caller's copy holds the stored time")

	got, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	want := *w
	want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
	require.Equal(t, &want, got)
	require.True(t, got.CreatedAt.Equal(w.CreatedAt))

	// Without a secret, filter set, auto_payload absent.
	doc := &svctype.Webhook{ID: "whk_" + newID(), OrgID: org, Event: "document.uploaded", URL: "http://hooks.example.com/d",
		Filter: &svctype.WebhookFilter{Tags: []string{"invoices", "2026"}, ContentType: "text/csv"}}
	require.NoError(t, b.s.InsertWebhook(b.ctx, doc))
	got, err = b.s.GetWebhook(b.ctx, org, doc.ID)
	require.NoError(t, err)
	require.False(t, got.HasSecret)
	require.Empty(t, got.Sealed)
	require.Empty(t, got.MasterKeyID)
	require.Nil(t, got.AutoPayload)
	require.Equal(t, doc.Filter, got.Filter)
	require.False(t, got.Disabled)
	require.Nil(t, got.DisabledAt)
	require.Zero(t, got.ConsecutiveFailures)
	require.False(t, got.CreatedAt.IsZero(), "created_at set by the store when zero")

	// An id is unique in its organization.
	require.ErrorIs(t, b.s.InsertWebhook(b.ctx, &svctype.Webhook{ID: w.ID, OrgID: org, Event: "document.deleted", URL: "https://x.example.com/"}), storage.ErrConflict)
	got, err = b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.Equal(t, "workflow_run_started", got.Event, "nothing overwritten")
}

func testWebhookList(t *testing.T, b *bundle, org string) {
	base := time.Now().Add(-time.Hour).UTC()
	var want []string
	for i := range 7 {
		// Two pairs share a created_at: the id orders them.
		at := base.Add(time.Duration(i/2) * time.Second)
		event := "document.uploaded"
		if i%3 == 0 {
			event = "workflow_run_failed"
		}
		w := b.webhook(t, org, event, at)
		want = append(want, w.ID)
	}
	// Inserted in time order; within equal times the order is by id.
	for i := 0; i+1 < len(want); i += 2 {
		if want[i] > want[i+1] {
			want[i], want[i+1] = want[i+1], want[i]
		}
	}
	b.webhook(t, org+"_other", "document.uploaded", base)

	for _, limit := range []int{1, 2, 7, 50} {
		all := collect(t, limit, func(w svctype.Webhook) string { return w.ID },
			func(o svctype.ListOptions) (svctype.Page[svctype.Webhook], error) {
				return b.s.ListWebhooks(b.ctx, org, storage.WebhookListFilter{ListOptions: o})
			})
		got := make([]string, len(all))
		for i, w := range all {
			got[i] = w.ID
			require.Equal(t, org, w.OrgID)
			require.NotEmpty(t, w.Sealed, "listed with the sealed secret (the engine strips it)")
		}
		require.Equal(t, want, got, "limit %d", limit)
	}

	page, err := b.s.ListWebhooks(b.ctx, org, storage.WebhookListFilter{Event: "workflow_run_failed"})
	require.NoError(t, err)
	require.Len(t, page.Items, 3)
	for _, w := range page.Items {
		require.Equal(t, "workflow_run_failed", w.Event)
	}

	page, err = b.s.ListWebhooks(b.ctx, org+"_none", storage.WebhookListFilter{})
	require.NoError(t, err)
	require.NotNil(t, page.Items)
	require.Empty(t, page.Items)
	require.Empty(t, page.NextCursor)

	_, err = b.s.ListWebhooks(b.ctx, org, storage.WebhookListFilter{ListOptions: svctype.ListOptions{Cursor: "not a cursor!"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
}

func testWebhookUpdate(t *testing.T, b *bundle, org string) {
	w := b.webhook(t, org, "document.uploaded", time.Time{})
	// Health written meanwhile (a delivery failed): an update of the registration keeps it.
	_, err := b.s.RecordWebhookFailure(b.ctx, org, w.ID, 10, time.Now())
	require.NoError(t, err)

	upd := *w
	upd.Event, upd.EventAlias, upd.URL = "workflow_run_completed", "workflow.completed", "https://other.example.com/x"
	upd.HasSecret, upd.Sealed, upd.MasterKeyID = false, nil, ""
	upd.Filter = nil
	upd.AutoPayload = map[string]any{"k": "v"}
	upd.CreatedAt, upd.UpdatedAt = time.Time{}, w.CreatedAt.Add(time.Hour)
	// Health fields on the value are not the registration's: they are not written.
	upd.Disabled, upd.ConsecutiveFailures = true, 99
	require.NoError(t, b.s.UpdateWebhook(b.ctx, &upd))
	require.True(t, upd.CreatedAt.Equal(w.CreatedAt), "update reports the kept created_at")

	got, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.Equal(t, "workflow_run_completed", got.Event)
	require.Equal(t, "workflow.completed", got.EventAlias)
	require.Equal(t, "https://other.example.com/x", got.URL)
	require.False(t, got.HasSecret)
	require.Empty(t, got.Sealed)
	require.Empty(t, got.MasterKeyID)
	require.Nil(t, got.Filter)
	require.Equal(t, map[string]any{"k": "v"}, got.AutoPayload)
	require.True(t, got.CreatedAt.Equal(w.CreatedAt), "created_at kept")
	require.True(t, got.UpdatedAt.Equal(upd.UpdatedAt), "updated_at %v, want %v", got.UpdatedAt, upd.UpdatedAt)
	require.Equal(t, 1, got.ConsecutiveFailures, "health untouched by an update")
	require.False(t, got.Disabled)

	// A secret set again.
	upd.HasSecret, upd.Sealed, upd.MasterKeyID = true, []byte("sealed2"), "k2"
	require.NoError(t, b.s.UpdateWebhook(b.ctx, &upd))
	got, err = b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.True(t, got.HasSecret)
	require.Equal(t, []byte("sealed2"), got.Sealed)
	require.Equal(t, "k2", got.MasterKeyID)

	missing := upd
	missing.ID = "whk_missing"
	require.ErrorIs(t, b.s.UpdateWebhook(b.ctx, &missing), storage.ErrNotFound)
	_, err = b.s.GetWebhook(b.ctx, org, "whk_missing")
	require.ErrorIs(t, err, storage.ErrNotFound, "an update creates nothing")
}

func testWebhookHealth(t *testing.T, b *bundle, org string) {
	w := b.webhook(t, org, "document.uploaded", time.Time{})
	changed, err := b.s.EnableWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.False(t, changed, "a healthy target: nothing to change")

	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for i := 1; i <= 4; i++ {
		got, err := b.s.RecordWebhookFailure(b.ctx, org, w.ID, 3, t0.Add(time.Duration(i)*time.Minute))
		require.NoError(t, err)
		require.Equal(t, i, got.ConsecutiveFailures)
		require.Equal(t, i >= 3, got.Disabled, "failure %d", i)
		if i < 3 {
			require.Nil(t, got.DisabledAt)
			continue
		}
		require.NotNil(t, got.DisabledAt)
		require.True(t, got.DisabledAt.Equal(t0.Add(3*time.Minute).Truncate(time.Microsecond)),
			"disabled as of the failure that reached the threshold, not a later one: %v", got.DisabledAt)
		require.Equal(t, time.UTC, got.DisabledAt.Location())
	}
	got, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.True(t, got.Disabled)
	require.True(t, got.UpdatedAt.Equal(w.UpdatedAt), "health is not an update of the registration")

	changed, err = b.s.EnableWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.True(t, changed)
	got, err = b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.False(t, got.Disabled)
	require.Nil(t, got.DisabledAt)
	require.Zero(t, got.ConsecutiveFailures)

	// A failure short of the threshold is reset by a success too.
	_, err = b.s.RecordWebhookFailure(b.ctx, org, w.ID, 3, t0)
	require.NoError(t, err)
	changed, err = b.s.EnableWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.True(t, changed)

	// Disabled by hand: as of at; again: the first time is kept.
	require.NoError(t, b.s.DisableWebhook(b.ctx, org, w.ID, t0))
	require.NoError(t, b.s.DisableWebhook(b.ctx, org, w.ID, t0.Add(time.Hour)))
	got, err = b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.True(t, got.Disabled)
	require.True(t, got.DisabledAt.Equal(t0.Truncate(time.Microsecond)))
	// Failures of a disabled target keep counting and keep its disabled_at.
	got, err = b.s.RecordWebhookFailure(b.ctx, org, w.ID, 1, t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.True(t, got.DisabledAt.Equal(t0.Truncate(time.Microsecond)))

	_, err = b.s.RecordWebhookFailure(b.ctx, org, "whk_missing", 3, t0)
	require.ErrorIs(t, err, storage.ErrNotFound)
	changed, err = b.s.EnableWebhook(b.ctx, org, "whk_missing")
	require.NoError(t, err)
	require.False(t, changed)
}

func testWebhookDelete(t *testing.T, b *bundle, org string) {
	w := b.webhook(t, org, "document.uploaded", time.Time{})
	keep := b.webhook(t, org, "document.uploaded", time.Time{})
	require.NoError(t, b.s.DeleteWebhook(b.ctx, org, w.ID))
	_, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteWebhook(b.ctx, org, w.ID), storage.ErrNotFound)
	_, err = b.s.GetWebhook(b.ctx, org, keep.ID)
	require.NoError(t, err)
}

func testWebhookTenancy(t *testing.T, b *bundle, org string) {
	other := org + "_b"
	w := b.webhook(t, org, "document.uploaded", time.Time{})

	_, err := b.s.GetWebhook(b.ctx, other, w.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	evil := *w
	evil.OrgID, evil.URL = other, "https://evil.example.com/"
	require.ErrorIs(t, b.s.UpdateWebhook(b.ctx, &evil), storage.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteWebhook(b.ctx, other, w.ID), storage.ErrNotFound)
	_, err = b.s.RecordWebhookFailure(b.ctx, other, w.ID, 1, time.Now())
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, b.s.DisableWebhook(b.ctx, other, w.ID, time.Now()))
	require.ErrorIs(t, b.s.ResealWebhookSecret(b.ctx, &evil, []byte("x"), "k9"), storage.ErrNotFound)
	page, err := b.s.ListWebhooks(b.ctx, other, storage.WebhookListFilter{})
	require.NoError(t, err)
	require.Empty(t, page.Items)

	got, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.Equal(t, w.URL, got.URL, "org A's registration is intact")
	require.Equal(t, w.Sealed, got.Sealed)
	require.False(t, got.Disabled)
	require.Zero(t, got.ConsecutiveFailures)
}

func testWebhookOrgs(t *testing.T, b *bundle, org string) {
	var mine []string
	for i := range 5 {
		o := fmt.Sprintf("%s_%d", org, i)
		mine = append(mine, o)
		b.webhook(t, o, "document.uploaded", time.Time{})
		b.webhook(t, o, "document.deleted", time.Time{}) // two registrations, one organization
		if i%2 == 0 {
			w := b.webhook(t, o, "document.expired", time.Time{})
			w.MasterKeyID, w.UpdatedAt = "k2", time.Time{}
			require.NoError(t, b.s.UpdateWebhook(b.ctx, w))
		}
	}
	// An organization whose registrations have no secret holds nothing to re-seal.
	require.NoError(t, b.s.InsertWebhook(b.ctx, &svctype.Webhook{ID: "whk_" + newID(), OrgID: org + "_nosecret", Event: "document.uploaded", URL: "https://x.example.com/"}))
	orgs := func(f secrets.ListFilter) []string {
		got := collect(t, 2, func(s string) string { return s }, func(o svctype.ListOptions) (svctype.Page[string], error) {
			f.ListOptions = o
			return b.s.ListWebhookSecretOrgs(b.ctx, f)
		})
		var out []string
		for _, o := range got {
			require.NotEqual(t, org+"_nosecret", o)
			if slices.Contains(mine, o) {
				out = append(out, o)
			}
		}
		return out
	}
	require.Equal(t, mine, orgs(secrets.ListFilter{}), "each organization once, in order")
	require.Equal(t, []string{mine[0], mine[2], mine[4]}, orgs(secrets.ListFilter{NotKeyID: "k1"}))
	require.Equal(t, mine, orgs(secrets.ListFilter{NotKeyID: "k2"}))

	page, err := b.s.ListWebhooks(b.ctx, mine[0], storage.WebhookListFilter{NotKeyID: "k1"})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "document.expired", page.Items[0].Event)
	page, err = b.s.ListWebhooks(b.ctx, org+"_nosecret", storage.WebhookListFilter{NotKeyID: "k1"})
	require.NoError(t, err)
	require.Empty(t, page.Items, "a registration without a secret is not under another key")

	_, err = b.s.ListWebhookSecretOrgs(b.ctx, secrets.ListFilter{ListOptions: svctype.ListOptions{Cursor: "not a cursor!"}})
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
}

// testWebhookReseal: a reseal swaps the sealed secret and its key id over the bytes it read,
// and nothing else; from a stale read it is refused.
func testWebhookReseal(t *testing.T, b *bundle, org string) {
	w := b.webhook(t, org, "document.uploaded", time.Time{})
	read, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.NoError(t, b.s.ResealWebhookSecret(b.ctx, read, []byte("new"), "k2"))
	got, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("new"), got.Sealed)
	require.Equal(t, "k2", got.MasterKeyID)
	require.True(t, got.UpdatedAt.Equal(read.UpdatedAt), "a reseal is not an update")
	require.Equal(t, read.URL, got.URL)

	require.ErrorIs(t, b.s.ResealWebhookSecret(b.ctx, read, []byte("again"), "k2"), storage.ErrConflict)

	// A PATCH of the secret after the read wins.
	upd := *got
	upd.Sealed, upd.MasterKeyID, upd.UpdatedAt = []byte("patched"), "k1", time.Time{}
	require.NoError(t, b.s.UpdateWebhook(b.ctx, &upd))
	require.ErrorIs(t, b.s.ResealWebhookSecret(b.ctx, got, []byte("stale"), "k2"), storage.ErrConflict)
	now, err := b.s.GetWebhook(b.ctx, org, w.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("patched"), now.Sealed)

	require.NoError(t, b.s.DeleteWebhook(b.ctx, org, w.ID))
	require.ErrorIs(t, b.s.ResealWebhookSecret(b.ctx, now, []byte("gone"), "k2"), storage.ErrNotFound)
}

func testWebhookTx(t *testing.T, b *bundle, org string) {
	taken := b.webhook(t, org, "document.uploaded", time.Time{})
	errRollback := errors.New("roll back")
	var rolled string
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		w := &svctype.Webhook{ID: "whk_" + newID(), OrgID: org, Event: "document.uploaded", URL: "https://x.example.com/"}
		rolled = w.ID
		if err := tx.InsertWebhook(ctx, w); err != nil {
			return err
		}
		// A conflict leaves the transaction usable (PostgreSQL aborts on a unique violation).
		dup := *taken
		if err := tx.InsertWebhook(ctx, &dup); !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("InsertWebhook: want a conflict, got %v", err)
		}
		if _, err := tx.RecordWebhookFailure(ctx, org, taken.ID, 1, time.Now()); err != nil {
			return err
		}
		if _, err := tx.GetWebhook(ctx, org, w.ID); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	_, err = b.s.GetWebhook(b.ctx, org, rolled)
	require.ErrorIs(t, err, storage.ErrNotFound)
	got, err := b.s.GetWebhook(b.ctx, org, taken.ID)
	require.NoError(t, err)
	require.False(t, got.Disabled, "the failure was rolled back")
	require.Zero(t, got.ConsecutiveFailures)
}
