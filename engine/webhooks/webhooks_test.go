package webhooks_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/webhooks"
	"github.com/svcflow/svcflow/internal/testclock"
	"github.com/svcflow/svcflow/internal/testlog"
)

// webhookSecret is the plaintext secret of these tests: it must never appear in a
// registration, an error, the log or the store.
const webhookSecret = "whsec-3f9a1c7e-never-shown"

type webhookBundle struct {
	eng  *engine.Engine
	st   *store.Store
	key  []byte
	logs *enginetest.LockedBuffer
	ctx  context.Context
	// clk is the engine's and the store's clock: it runs with the wall clock until moved.
	clk *testclock.Clock
	// lookups counts the names resolved.
	lookups atomic.Int64
}

// hosts is the fake DNS of these tests; a name not in it does not resolve.
var webhookHosts = map[string][]string{
	"hooks.example.com":    {"93.184.215.14"},
	"localhost":            {"127.0.0.1", "::1"},
	"metadata.example.com": {"169.254.169.254"},
	"mixed.example.com":    {"93.184.215.14", "10.1.2.3"},
}

func setupWebhooks(t *testing.T, dialect string, cfg engine.Config) *webhookBundle {
	t.Helper()
	clk := testclock.Running()
	cfg.Now = clk.Now
	b := &webhookBundle{st: store.OpenTest(t, dialect, store.WithNow(clk.Now)), logs: &enginetest.LockedBuffer{}, ctx: context.Background(), clk: clk}
	if cfg.Keyring == nil {
		b.key = enginetest.GenerateKey(t)
		cfg.Keyring = enginetest.NewKeyring(t, b.key)
	}
	cfg.Store = b.st
	cfg.Logger = testlog.Tee(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	eng, err := engine.New(cfg)
	require.NoError(t, err)
	webhooks.SetResolver(eng.Webhooks, func(_ context.Context, host string) ([]netip.Addr, error) {
		b.lookups.Add(1)
		addrs, ok := webhookHosts[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	})
	b.eng = eng
	return b
}

func forEachWebhookDialect(t *testing.T, fn func(t *testing.T, b *webhookBundle)) {
	t.Helper()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, setupWebhooks(t, d, engine.Config{}))
		})
	}
}

func problemPointers(t *testing.T, err error) []string {
	t.Helper()
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	out := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		out[i] = p.Pointer
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	b := setupWebhooks(t, "sqlite", engine.Config{})
	ok := engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/in"}
	with := func(f func(in *engine.WebhookInput)) engine.WebhookInput {
		in := ok
		f(&in)
		return in
	}
	tests := []struct {
		name string
		in   engine.WebhookInput
		want []string
	}{
		{"no event", with(func(in *engine.WebhookInput) { in.Event = "" }), []string{"/event"}},
		{"unknown event", with(func(in *engine.WebhookInput) { in.Event = "document.renamed" }), []string{"/event"}},
		{"catch-all only event", with(func(in *engine.WebhookInput) { in.Event = "step.started" }), []string{"/event"}},
		{"no url", with(func(in *engine.WebhookInput) { in.URL = "" }), []string{"/url"}},
		{"ftp url", with(func(in *engine.WebhookInput) { in.URL = "ftp://hooks.example.com/" }), []string{"/url"}},
		{"relative url", with(func(in *engine.WebhookInput) { in.URL = "/hooks" }), []string{"/url"}},
		{"url without host", with(func(in *engine.WebhookInput) { in.URL = "https:///x" }), []string{"/url"}},
		{"url with a port only", with(func(in *engine.WebhookInput) { in.URL = "https://:443/x" }), []string{"/url"}},
		{"unparsable url", with(func(in *engine.WebhookInput) { in.URL = "https://exa mple.com/" }), []string{"/url"}},
		{"url with credentials", with(func(in *engine.WebhookInput) { in.URL = "https://user:pw@hooks.example.com/" }), []string{"/url"}},
		{"url with a user", with(func(in *engine.WebhookInput) { in.URL = "https://user@hooks.example.com/" }), []string{"/url"}},
		{"long url", with(func(in *engine.WebhookInput) { in.URL = "https://hooks.example.com/" + strings.Repeat("a", 2048) }), []string{"/url"}},
		{"long secret", with(func(in *engine.WebhookInput) { in.Secret = strings.Repeat("s", 513) }), []string{"/secret"}},
		{"filter on a run event", with(func(in *engine.WebhookInput) {
			in.Event, in.Filter = "workflow.completed", &svctype.WebhookFilter{Tags: []string{"x"}}
		}), []string{"/filter"}},
		{"empty tag", with(func(in *engine.WebhookInput) { in.Filter = &svctype.WebhookFilter{Tags: []string{"a", ""}} }), []string{"/filter/tags/1"}},
		{"long tag", with(func(in *engine.WebhookInput) {
			in.Filter = &svctype.WebhookFilter{Tags: []string{strings.Repeat("t", 101)}}
		}), []string{"/filter/tags/0"}},
		{"too many tags", with(func(in *engine.WebhookInput) {
			in.Filter = &svctype.WebhookFilter{Tags: strings.Split(strings.Repeat("t,", 51)+"t", ",")}
		}), []string{"/filter/tags"}},
		{"not a media type", with(func(in *engine.WebhookInput) { in.Filter = &svctype.WebhookFilter{ContentType: "csv"} }), []string{"/filter/content_type"}},
		{"bad wildcard", with(func(in *engine.WebhookInput) { in.Filter = &svctype.WebhookFilter{ContentType: "*/*/*"} }), []string{"/filter/content_type"}},
		{"auto_payload too large", with(func(in *engine.WebhookInput) {
			in.AutoPayload = map[string]any{"big": strings.Repeat("x", 64<<10)}
		}), []string{"/auto_payload"}},
		{"everything wrong at once", engine.WebhookInput{Event: "nope", URL: "mailto:x", Secret: strings.Repeat("s", 600),
			Filter: &svctype.WebhookFilter{Tags: []string{""}}}, []string{"/event", "/url", "/secret", "/filter/tags/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.eng.CreateWebhook(b.ctx, "org-a", tt.in)
			require.Equal(t, tt.want, problemPointers(t, err))
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Empty(t, ve.Code, "validation_failed, not a target problem")
			require.NotContains(t, err.Error(), "user:pw", "the URL's credentials are not repeated")
		})
	}

	// The message for an event that cannot be registered lists those that can, aliases too.
	_, err := b.eng.CreateWebhook(b.ctx, "org-a", with(func(in *engine.WebhookInput) { in.Event = "step.started" }))
	require.ErrorContains(t, err, "webhook_url only")
	for _, name := range []string{"workflow_run_started", "workflow.cancelled", "document.expired", "pbot_approval_decided"} {
		require.ErrorContains(t, err, name)
	}

	// Nothing was stored, and no name was looked up for a registration refused anyway.
	page, err := b.eng.ListWebhooks(b.ctx, "org-a", svctype.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Zero(t, b.lookups.Load())

	// Good ones: an empty filter is none; wildcard content types; http; a name that does not
	// resolve (the connect-time guard decides when it does).
	for _, in := range []engine.WebhookInput{
		with(func(in *engine.WebhookInput) { in.Event, in.Filter = "workflow.started", &svctype.WebhookFilter{} }),
		with(func(in *engine.WebhookInput) { in.Filter = &svctype.WebhookFilter{ContentType: "text/*"} }),
		with(func(in *engine.WebhookInput) {
			in.Filter = &svctype.WebhookFilter{ContentType: "text/csv; charset=utf-8"}
		}),
		with(func(in *engine.WebhookInput) { in.URL = "http://unknown.example.com:8443/in?x=1" }),
		with(func(in *engine.WebhookInput) { in.Secret = strings.Repeat("s", 512) }),
	} {
		w, err := b.eng.CreateWebhook(b.ctx, "org-a", in)
		require.NoError(t, err, "%+v", in)
		if in.Filter != nil && in.Filter.IsZero() {
			require.Nil(t, w.Filter)
		}
	}
}

// TestWebhookTargetNotAllowed: a target on a loopback, private, link-local or metadata
// address, written as one or a name resolving to one, is refused early with its own code,
// never naming the address a name resolved to; an engine that allows private targets takes
// them.
func TestWebhookTargetNotAllowed(t *testing.T) {
	t.Parallel()
	b := setupWebhooks(t, "sqlite", engine.Config{})
	open := setupWebhooks(t, "sqlite", engine.Config{AllowPrivateTargets: true})
	for _, u := range []string{
		"http://127.0.0.1:8080/in", "http://[::1]/in", "https://10.0.0.7/in", "https://192.168.1.1/in",
		"http://169.254.169.254/latest/meta-data", "http://[::ffff:127.0.0.1]/in", "http://0.0.0.0/in",
		"http://localhost:9000/in", "https://metadata.example.com/in", "https://mixed.example.com/in",
	} {
		t.Run(u, func(t *testing.T) {
			_, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.uploaded", URL: u})
			var ve *engine.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, engine.CodeTargetNotAllowed, ve.Code)
			require.Equal(t, "target_not_allowed", ve.Code)
			require.Equal(t, []string{"/url"}, problemPointers(t, err))
			for _, resolved := range []string{"10.1.2.3", "169.254.169.254"} {
				if !strings.Contains(u, resolved) {
					require.NotContains(t, err.Error(), resolved, "the address a name resolved to is not told")
				}
			}

			_, err = open.eng.CreateWebhook(open.ctx, "org-a", engine.WebhookInput{Event: "document.uploaded", URL: u})
			require.NoError(t, err, "allowed with AllowPrivateTargets")
		})
	}
	require.Zero(t, open.lookups.Load(), "nothing to look up when private targets are allowed")

	// A PATCH to such a URL is refused the same way, and changes nothing.
	w, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/in"})
	require.NoError(t, err)
	_, err = b.eng.UpdateWebhook(b.ctx, "org-a", w.ID, engine.WebhookPatch{URL: ptr("http://localhost/in")})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, engine.CodeTargetNotAllowed, ve.Code)
	got, err := b.eng.GetWebhook(b.ctx, "org-a", w.ID)
	require.NoError(t, err)
	require.Equal(t, "https://hooks.example.com/in", got.URL)
}

func TestWebhookLifecycle(t *testing.T) {
	t.Parallel()
	forEachWebhookDialect(t, func(t *testing.T, b *webhookBundle) {
		org := "org-a"
		w, err := b.eng.CreateWebhook(b.ctx, org, engine.WebhookInput{
			Event: "workflow.completed", URL: "https://hooks.example.com/runs", Secret: webhookSecret,
			AutoPayload: map[string]any{"source": "svcflow", "env": "prod"},
		})
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(w.ID, "whk_"), w.ID)
		require.Equal(t, "workflow_run_completed", w.Event, "the canonical name")
		require.Equal(t, "workflow.completed", w.EventAlias, "and the alias it was registered by")
		require.True(t, w.HasSecret)
		require.Nil(t, w.Sealed, "never handed out")
		require.False(t, w.Disabled)
		require.Equal(t, w.CreatedAt, w.UpdatedAt)

		got, err := b.eng.GetWebhook(b.ctx, org, w.ID)
		require.NoError(t, err)
		require.Nil(t, got.Sealed)
		require.Equal(t, w.URL, got.URL)
		require.Equal(t, map[string]any{"source": "svcflow", "env": "prod"}, got.AutoPayload)

		doc, err := b.eng.CreateWebhook(b.ctx, org, engine.WebhookInput{
			Event: "document.uploaded", URL: "https://hooks.example.com/docs",
			Filter: &svctype.WebhookFilter{Tags: []string{"invoices", "invoices", "2026"}, ContentType: "text/csv"},
		})
		require.NoError(t, err)
		require.Empty(t, doc.EventAlias)
		require.False(t, doc.HasSecret)
		require.Equal(t, &svctype.WebhookFilter{Tags: []string{"invoices", "2026"}, ContentType: "text/csv"}, doc.Filter, "tags once each")

		page, err := b.eng.ListWebhooks(b.ctx, org, svctype.ListOptions{Limit: 1})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, w.ID, page.Items[0].ID, "oldest first")
		require.Nil(t, page.Items[0].Sealed)
		require.NotEmpty(t, page.NextCursor)
		page, err = b.eng.ListWebhooks(b.ctx, org, svctype.ListOptions{Cursor: page.NextCursor})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.Equal(t, doc.ID, page.Items[0].ID)

		// PATCH: only what is given changes.
		b.clk.Advance(2 * time.Millisecond)
		upd, err := b.eng.UpdateWebhook(b.ctx, org, w.ID, engine.WebhookPatch{URL: ptr("https://hooks.example.com/v2")})
		require.NoError(t, err)
		require.Equal(t, "https://hooks.example.com/v2", upd.URL)
		require.Equal(t, "workflow_run_completed", upd.Event)
		require.Equal(t, "workflow.completed", upd.EventAlias)
		require.True(t, upd.HasSecret, "the secret stays")
		require.Equal(t, w.AutoPayload, upd.AutoPayload)
		require.True(t, upd.CreatedAt.Equal(w.CreatedAt))
		require.True(t, upd.UpdatedAt.After(w.UpdatedAt))
		require.Nil(t, upd.Sealed)
		targets := b.targets(t, org, "workflow_run_completed")
		require.Equal(t, []byte(webhookSecret), targets[0].Secret, "the same secret")

		// The secret replaced, then removed.
		_, err = b.eng.UpdateWebhook(b.ctx, org, w.ID, engine.WebhookPatch{Secret: ptr("another-secret-value")})
		require.NoError(t, err)
		require.Equal(t, []byte("another-secret-value"), b.targets(t, org, "workflow_run_completed")[0].Secret)
		upd, err = b.eng.UpdateWebhook(b.ctx, org, w.ID, engine.WebhookPatch{Secret: ptr("")})
		require.NoError(t, err)
		require.False(t, upd.HasSecret)
		require.Nil(t, b.targets(t, org, "workflow_run_completed")[0].Secret)

		// An empty auto_payload clears it; the event changes by name or alias.
		upd, err = b.eng.UpdateWebhook(b.ctx, org, w.ID, engine.WebhookPatch{AutoPayload: map[string]any{}, Event: ptr("workflow_run_failed")})
		require.NoError(t, err)
		require.Nil(t, upd.AutoPayload)
		require.Equal(t, "workflow_run_failed", upd.Event)
		require.Empty(t, upd.EventAlias)

		// A document registration cannot move to a run event while it has a filter...
		_, err = b.eng.UpdateWebhook(b.ctx, org, doc.ID, engine.WebhookPatch{Event: ptr("workflow.started")})
		require.Equal(t, []string{"/filter"}, problemPointers(t, err))
		got, err = b.eng.GetWebhook(b.ctx, org, doc.ID)
		require.NoError(t, err)
		require.Equal(t, "document.uploaded", got.Event, "nothing changed")
		// ...but can when the same patch removes it, and cannot be given one there.
		upd, err = b.eng.UpdateWebhook(b.ctx, org, doc.ID, engine.WebhookPatch{Event: ptr("workflow.started"), Filter: &svctype.WebhookFilter{}})
		require.NoError(t, err)
		require.Nil(t, upd.Filter)
		_, err = b.eng.UpdateWebhook(b.ctx, org, doc.ID, engine.WebhookPatch{Filter: &svctype.WebhookFilter{ContentType: "text/csv"}})
		require.Equal(t, []string{"/filter"}, problemPointers(t, err))

		// Field problems of a patch are located like a creation's.
		_, err = b.eng.UpdateWebhook(b.ctx, org, doc.ID, engine.WebhookPatch{URL: ptr("ftp://x"), Secret: ptr(strings.Repeat("s", 513)), Event: ptr("nope")})
		require.Equal(t, []string{"/event", "/url", "/secret"}, problemPointers(t, err))

		// Disabled by its organization, then enabled again.
		upd, err = b.eng.UpdateWebhook(b.ctx, org, doc.ID, engine.WebhookPatch{Disabled: ptr(true)})
		require.NoError(t, err)
		require.True(t, upd.Disabled)
		require.NotNil(t, upd.DisabledAt)
		require.True(t, b.targets(t, org, "workflow_run_started")[0].Disabled)
		upd, err = b.eng.UpdateWebhook(b.ctx, org, doc.ID, engine.WebhookPatch{Disabled: ptr(false)})
		require.NoError(t, err)
		require.False(t, upd.Disabled)
		require.Nil(t, upd.DisabledAt)

		// Another organization sees none of it.
		_, err = b.eng.GetWebhook(b.ctx, "org-b", w.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.eng.UpdateWebhook(b.ctx, "org-b", w.ID, engine.WebhookPatch{URL: ptr("https://hooks.example.com/evil")})
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.ErrorIs(t, b.eng.DeleteWebhook(b.ctx, "org-b", w.ID), engine.ErrNotFound)
		require.Empty(t, b.targets(t, "org-b", "workflow_run_failed"))

		require.NoError(t, b.eng.DeleteWebhook(b.ctx, org, w.ID))
		_, err = b.eng.GetWebhook(b.ctx, org, w.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.ErrorIs(t, b.eng.DeleteWebhook(b.ctx, org, w.ID), engine.ErrNotFound)
		_, err = b.eng.UpdateWebhook(b.ctx, org, w.ID, engine.WebhookPatch{Disabled: ptr(true)})
		require.ErrorIs(t, err, engine.ErrNotFound)
		require.Empty(t, b.targets(t, org, "workflow_run_failed"))

		_, err = b.eng.CreateWebhook(b.ctx, "bad org!", engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/"})
		require.ErrorIs(t, err, engine.ErrInvalidOrg)
		b.noSecret(t)
	})
}

func (b *webhookBundle) targets(t *testing.T, org, event string) []engine.WebhookTarget {
	t.Helper()
	ts, err := b.eng.WebhookTargets(b.ctx, org, event)
	require.NoError(t, err)
	return ts
}

// noSecret: the plaintext is in no log line and no stored row.
func (b *webhookBundle) noSecret(t *testing.T) {
	t.Helper()
	require.NotContains(t, b.logs.String(), webhookSecret)
	for _, org := range []string{"org-a", "org-b"} {
		page, err := b.st.ListWebhooks(b.ctx, org, engine.WebhookListFilter{ListOptions: svctype.ListOptions{Limit: 500}})
		require.NoError(t, err)
		for _, w := range page.Items {
			require.NotContains(t, string(w.Sealed), webhookSecret)
			require.NotContains(t, w.URL+w.Event, webhookSecret)
		}
	}
}

// TestWebhookSecretSealed: the secret is sealed for its organization and registration: the
// store holds no plaintext, and sealed bytes moved to another registration or organization
// do not open (that target is left out and logged, never sent unsigned).
func TestWebhookSecretSealed(t *testing.T) {
	t.Parallel()
	forEachWebhookDialect(t, func(t *testing.T, b *webhookBundle) {
		a, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.deleted", URL: "https://hooks.example.com/a", Secret: webhookSecret})
		require.NoError(t, err)
		stored, err := b.st.GetWebhook(b.ctx, "org-a", a.ID)
		require.NoError(t, err)
		require.NotEmpty(t, stored.Sealed)
		require.Equal(t, secrets.KeyID(b.key), stored.MasterKeyID)
		b.noSecret(t)

		// Copied onto another registration of the same org, and of another org.
		other, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.deleted", URL: "https://hooks.example.com/other", Secret: "other-secret"})
		require.NoError(t, err)
		moved, err := b.st.GetWebhook(b.ctx, "org-a", other.ID)
		require.NoError(t, err)
		moved.Sealed, moved.MasterKeyID = stored.Sealed, stored.MasterKeyID
		require.NoError(t, b.st.UpdateWebhook(b.ctx, moved))
		require.NoError(t, b.st.InsertWebhook(b.ctx, &svctype.Webhook{ID: a.ID, OrgID: "org-b", Event: "document.deleted", URL: "https://hooks.example.com/b",
			HasSecret: true, Sealed: stored.Sealed, MasterKeyID: stored.MasterKeyID}))

		ts := b.targets(t, "org-a", "document.deleted")
		require.Len(t, ts, 1, "the registration whose secret does not open is left out")
		require.Equal(t, a.ID, ts[0].ID)
		require.Equal(t, []byte(webhookSecret), ts[0].Secret)
		require.Empty(t, b.targets(t, "org-b", "document.deleted"))
		require.Contains(t, b.logs.String(), "webhook secret does not open")
		require.Contains(t, b.logs.String(), other.ID)
		b.noSecret(t)

		// Without a keyring, a secret cannot be set; a registration without one can.
		st := store.OpenTest(t, "sqlite")
		bare, err := engine.New(engine.Config{Store: st, AllowPrivateTargets: true})
		require.NoError(t, err)
		_, err = bare.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.deleted", URL: "https://hooks.example.com/a", Secret: webhookSecret})
		require.ErrorIs(t, err, engine.ErrNoMasterKey)
		require.NotContains(t, err.Error(), webhookSecret)
		_, err = bare.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.deleted", URL: "https://hooks.example.com/a"})
		require.NoError(t, err)
	})
}

// TestWebhookTargetsCache: WebhookTargets reads the store once per organization and
// ActionCacheTTL; a write through the engine is seen at once, one through the store (another
// process) after the TTL.
func TestWebhookTargetsCache(t *testing.T) {
	t.Parallel()
	b := setupWebhooks(t, "sqlite", engine.Config{})
	var mu sync.Mutex
	now := time.Now()
	webhooks.SetCacheClock(b.eng.Webhooks, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	// An event that cannot be registered has no targets, and costs no read.
	ts, err := b.eng.WebhookTargets(b.ctx, "org-a", "step.started")
	require.NoError(t, err)
	require.Nil(t, ts)
	require.Empty(t, b.targets(t, "org-a", "document.uploaded"), "an organization without registrations")

	w, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{
		Event: "workflow.started", URL: "https://hooks.example.com/s", Secret: webhookSecret,
		AutoPayload: map[string]any{"k": "v"},
	})
	require.NoError(t, err)
	ts = b.targets(t, "org-a", "workflow_run_started")
	require.Len(t, ts, 1, "the creation is seen at once")
	require.Equal(t, engine.WebhookTarget{ID: w.ID, URL: w.URL, Secret: []byte(webhookSecret), AutoPayload: map[string]any{"k": "v"}}, ts[0])
	require.Equal(t, ts, b.targets(t, "org-a", "workflow.started"), "an alias names the same event")
	require.Empty(t, b.targets(t, "org-a", "workflow_run_completed"))

	// Another process deletes it: seen after the TTL, not before.
	require.NoError(t, b.st.DeleteWebhook(b.ctx, "org-a", w.ID))
	require.Len(t, b.targets(t, "org-a", "workflow_run_started"), 1)
	advance(engine.ActionCacheTTL)
	require.Empty(t, b.targets(t, "org-a", "workflow_run_started"))

	// Every write through the engine clears the organization's entry.
	w, err = b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/d"})
	require.NoError(t, err)
	require.Len(t, b.targets(t, "org-a", "document.uploaded"), 1)
	_, err = b.eng.UpdateWebhook(b.ctx, "org-a", w.ID, engine.WebhookPatch{URL: ptr("https://hooks.example.com/d2")})
	require.NoError(t, err)
	require.Equal(t, "https://hooks.example.com/d2", b.targets(t, "org-a", "document.uploaded")[0].URL)
	_, err = b.eng.UpdateWebhook(b.ctx, "org-a", w.ID, engine.WebhookPatch{Event: ptr("document.deleted")})
	require.NoError(t, err)
	require.Empty(t, b.targets(t, "org-a", "document.uploaded"))
	require.Len(t, b.targets(t, "org-a", "document.deleted"), 1)
	require.NoError(t, b.eng.DeleteWebhook(b.ctx, "org-a", w.ID))
	require.Empty(t, b.targets(t, "org-a", "document.deleted"))

	// Callers get their own slice.
	_, err = b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.expired", URL: "https://hooks.example.com/e"})
	require.NoError(t, err)
	first := b.targets(t, "org-a", "document.expired")
	first[0].URL = "changed by a caller"
	require.Equal(t, "https://hooks.example.com/e", b.targets(t, "org-a", "document.expired")[0].URL)

	// Many callers at once on a cold cache.
	advance(engine.ActionCacheTTL)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts, err := b.eng.WebhookTargets(b.ctx, "org-a", "document.expired")
			if err == nil && len(ts) != 1 {
				err = errors.New("wrong targets")
			}
			require.NoError(t, err)
		}()
	}
	wg.Wait()
}

// TestRecordWebhookHealth: WebhookDisableAfter failures in a row disable a target (seen by
// WebhookTargets at once), a success re-enables it and resets the count.
func TestRecordWebhookHealth(t *testing.T) {
	t.Parallel()
	forEachWebhookDialect(t, func(t *testing.T, b *webhookBundle) {
		w, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/d"})
		require.NoError(t, err)
		at := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
		for i := 1; i < engine.WebhookDisableAfter; i++ {
			require.NoError(t, b.eng.RecordWebhookHealth(b.ctx, "org-a", w.ID, false, at))
		}
		got, err := b.eng.GetWebhook(b.ctx, "org-a", w.ID)
		require.NoError(t, err)
		require.Equal(t, engine.WebhookDisableAfter-1, got.ConsecutiveFailures)
		require.False(t, got.Disabled)
		require.False(t, b.targets(t, "org-a", "document.uploaded")[0].Disabled)

		require.NoError(t, b.eng.RecordWebhookHealth(b.ctx, "org-a", w.ID, false, at.Add(time.Minute)))
		got, err = b.eng.GetWebhook(b.ctx, "org-a", w.ID)
		require.NoError(t, err)
		require.True(t, got.Disabled)
		require.Equal(t, engine.WebhookDisableAfter, got.ConsecutiveFailures)
		require.True(t, got.DisabledAt.Equal(at.Add(time.Minute)))
		require.True(t, got.UpdatedAt.Equal(w.UpdatedAt), "health is not an update of the registration")
		require.True(t, b.targets(t, "org-a", "document.uploaded")[0].Disabled, "seen at once")
		require.Contains(t, b.logs.String(), "webhook target disabled")
		require.NotContains(t, b.logs.String(), w.URL, "the log does not name the URL (it may carry a token)")

		require.NoError(t, b.eng.RecordWebhookHealth(b.ctx, "org-a", w.ID, true, time.Time{}))
		got, err = b.eng.GetWebhook(b.ctx, "org-a", w.ID)
		require.NoError(t, err)
		require.False(t, got.Disabled)
		require.Nil(t, got.DisabledAt)
		require.Zero(t, got.ConsecutiveFailures)
		require.False(t, b.targets(t, "org-a", "document.uploaded")[0].Disabled)

		// Another organization's, or a missing one.
		require.ErrorIs(t, b.eng.RecordWebhookHealth(b.ctx, "org-b", w.ID, false, at), engine.ErrNotFound)
		require.NoError(t, b.eng.RecordWebhookHealth(b.ctx, "org-b", w.ID, true, at), "a success has nothing to record")
		got, err = b.eng.GetWebhook(b.ctx, "org-a", w.ID)
		require.NoError(t, err)
		require.Zero(t, got.ConsecutiveFailures)
	})
}

// TestWebhookSecretsSurviveMasterKeyRotation: rotation re-seals webhook secrets with the
// other sealed values; a process holding the new key alone opens them.
func TestWebhookSecretsSurviveMasterKeyRotation(t *testing.T) {
	t.Parallel()
	forEachWebhookDialect(t, func(t *testing.T, b *webhookBundle) {
		var ids []string
		for _, org := range []string{"org-a", "org-b"} {
			w, err := b.eng.CreateWebhook(b.ctx, org, engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/" + org, Secret: webhookSecret + org})
			require.NoError(t, err)
			ids = append(ids, w.ID)
		}
		_, err := b.eng.CreateWebhook(b.ctx, "org-a", engine.WebhookInput{Event: "document.uploaded", URL: "https://hooks.example.com/plain"})
		require.NoError(t, err)

		keyB := enginetest.GenerateKey(t)
		stats, err := secrets.ResealCollections(b.ctx, enginetest.NewKeyring(t, keyB, b.key), secrets.ResealOptions{Grace: time.Millisecond, PageSize: 1},
			secrets.OrgConfig(b.st), engine.WebhookSealedSecrets(b.st))
		require.NoError(t, err)
		require.Equal(t, secrets.CollectionStats{Kind: "webhook secrets", Orgs: 2, Resealed: 2}, stats.Collections[1])

		after, err := engine.New(engine.Config{Store: b.st, Keyring: enginetest.NewKeyring(t, keyB)})
		require.NoError(t, err)
		for i, org := range []string{"org-a", "org-b"} {
			ts, err := after.WebhookTargets(b.ctx, org, "document.uploaded")
			require.NoError(t, err)
			var secret []byte
			for _, tg := range ts {
				if tg.ID == ids[i] {
					secret = tg.Secret
				}
			}
			require.Equal(t, []byte(webhookSecret+org), secret)
			w, err := b.st.GetWebhook(b.ctx, org, ids[i])
			require.NoError(t, err)
			require.Equal(t, secrets.KeyID(keyB), w.MasterKeyID)
		}
	})
}
