// Package webhooks is where events leave svcflow: an organization's webhook registrations
// and catch-all address, the fan-out of every emitted event into deliveries (a core event
// sink, in the event's transaction), and the delivery job that sends each one outside any
// transaction, with retries, signatures and a circuit per target (the rules of package
// events).
package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Webhook registrations (spec section 2, "Webhook registration"; routes /webhooks): an
// organization's targets for registrable events, each with an optional secret sealed under
// the engine's keyring, a filter for document events and an auto_payload. This file
// validates and stores them, serves the delivery side their targets with the secrets opened
// (WebhookTargets, cached per organization) and keeps their health (RecordWebhookHealth).

// Options configure webhooks.
type Options struct {
	// Keyring seals registrations' secrets; nil refuses secrets (orgconfig.ErrNoMasterKey).
	Keyring *secrets.Keyring
	// AllowPrivateTargets lets targets be loopback, private, link-local and metadata
	// addresses (single-tenant deployments and tests).
	AllowPrivateTargets bool
	// HTTP sends deliveries: one attempt per request, no redirects, its connections
	// through the address guard (outbound.NewHTTPClient).
	HTTP *http.Client
	// DeliveryTimeout bounds one delivery attempt (default events.ResponseTimeout).
	DeliveryTimeout time.Duration
}

// Webhooks is the webhook registrations of every organization, the fan-out of every event
// to its targets (Sink), and the delivery job that sends them (Deliver).
type Webhooks struct {
	core      *core.Core
	store     Store
	orgConfig *orgconfig.OrgConfig
	keys      *secrets.Keyring
	log       *slog.Logger
	now       func() time.Time
	hooks     *http.Client
	// allowPrivate: targets may be private addresses; resolve, when set, replaces the name
	// lookup of a target's host (tests).
	allowPrivate    bool
	resolve         func(ctx context.Context, host string) ([]netip.Addr, error)
	deliveryTimeout time.Duration
	cache           webhookCache
	catchAlls       catchAllCache
}

// New returns the webhooks over st, reading the catch-all address through oc.
func New(c *core.Core, st Store, oc *orgconfig.OrgConfig, o Options) *Webhooks {
	w := &Webhooks{core: c, store: st, orgConfig: oc, keys: o.Keyring, log: c.Logger(), now: c.Now, hooks: o.HTTP,
		allowPrivate: o.AllowPrivateTargets, deliveryTimeout: o.DeliveryTimeout}
	if w.deliveryTimeout <= 0 {
		w.deliveryTimeout = events.ResponseTimeout
	}
	if w.hooks == nil {
		w.hooks = outbound.NewHTTPClient(o.AllowPrivateTargets, 256, 64)
	}
	oc.Subscribe(func(orgID, key string) {
		if key == CatchAllKey {
			w.catchAlls.forget(orgID)
		}
	})
	return w
}

// Register puts the fan-out on c as an event sink and the delivery job as a job handler.
func (e *Webhooks) Register(c *core.Core) {
	c.RegisterSink(e.Sink)
	c.RegisterDeliveryPlanner(e.planDeliveries)
	c.RegisterJob(JobDeliver, e.Deliver)
}

// CacheTTL is how long a process uses the registrations (and the catch-all address) it
// read: writes through this process are seen at once, another process's within it.
const CacheTTL = 5 * time.Second

// Bounds and rules of a webhook registration.
const (
	// MaxWebhookSecretLen bounds a secret (1 to 512 bytes).
	MaxWebhookSecretLen = 512
	// MaxWebhookURLLen bounds a target URL, in bytes.
	MaxWebhookURLLen = 2048
	// MaxWebhookAutoPayload bounds auto_payload, as JSON, in bytes.
	MaxWebhookAutoPayload = 64 << 10
	// WebhookDisableAfter is how many deliveries in a row a registered target may fail
	// before it is disabled (spec section 8: "temporarily disabled, re-enabled on next
	// success"). The per-URL circuit (3 failures, 5 minutes) pauses a target that is down
	// for a while; this disables one that keeps failing across circuit openings.
	WebhookDisableAfter = 10
	// webhookResolveTimeout bounds the name resolution of a target's host at registration.
	webhookResolveTimeout = 2 * time.Second
	// maxCachedWebhookOrgs bounds the organizations whose targets are cached; past it the
	// cache is dropped whole (as the action cache).
	maxCachedWebhookOrgs = 4096
)

// CodeTargetNotAllowed is the ValidationError code of a target on a loopback, private,
// link-local or metadata address (the outbound guard's code).
const CodeTargetNotAllowed = outbound.CodeTargetNotAllowed

// WebhookInput is a new registration (POST /webhooks).
type WebhookInput struct {
	// Event is a registrable event or an alias of one (events.Registrable()).
	Event string
	URL   string
	// Secret signs deliveries (1 to 512 bytes); empty: none.
	Secret string
	// Filter is for document events only; nil or empty: none.
	Filter *svctype.WebhookFilter
	// AutoPayload is merged into every payload sent to the target; nil or empty: none.
	AutoPayload map[string]any
}

// WebhookPatch changes a registration (PATCH /webhooks/{id}): a nil field is left as it
// is. Secret "" removes the secret; an empty Filter removes the filter, an empty (non-nil)
// AutoPayload the auto_payload. Disabled false re-enables the target and resets its
// failure count; true disables it until a success or a patch re-enables it.
type WebhookPatch struct {
	Event       *string
	URL         *string
	Secret      *string
	Filter      *svctype.WebhookFilter
	AutoPayload map[string]any
	Disabled    *bool
}

// WebhookTarget is a registration as the delivery side needs it, secret opened. It is
// shared with other callers: read it, never modify it (Secret and AutoPayload included).
type WebhookTarget struct {
	ID  string
	URL string
	// Secret signs the delivery (X-Svc-Signature); nil when the registration has none.
	Secret      []byte
	Filter      *svctype.WebhookFilter
	AutoPayload map[string]any
	// Disabled targets kept failing (WebhookDisableAfter) or were disabled by their
	// organization; whether one is still tried (a success re-enables it) is the delivery
	// side's decision.
	Disabled bool
}

// sealWebhookSecret seals secret for w (nil clears it).
func (e *Webhooks) sealWebhookSecret(w *svctype.Webhook, secret string) error {
	if secret == "" {
		w.Sealed, w.MasterKeyID, w.HasSecret = nil, "", false
		return nil
	}
	if e.keys == nil {
		return orgconfig.ErrNoMasterKey
	}
	sealed, keyID, err := e.keys.Seal(w.OrgID, webhookSealName(w.ID), []byte(secret))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", w.ID, err)
	}
	w.Sealed, w.MasterKeyID, w.HasSecret = sealed, keyID, true
	return nil
}

// CreateWebhook validates and stores a new registration for the organization: a
// *core.ValidationError naming each field that is wrong (code target_not_allowed when the
// target's address is refused), orgconfig.ErrNoMasterKey for a secret without a keyring.
func (e *Webhooks) CreateWebhook(ctx context.Context, orgID string, in WebhookInput) (*svctype.Webhook, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	w := &svctype.Webhook{ID: "whk_" + uuid.NewString(), OrgID: orgID, URL: in.URL}
	var ps []core.Problem
	var p *core.Problem
	if w.Event, w.EventAlias, p = webhookEvent(in.Event); p != nil {
		ps = append(ps, *p)
	}
	u, p := checkWebhookURL(in.URL)
	if p != nil {
		ps = append(ps, *p)
	}
	if in.Secret != "" {
		ps = append(ps, checkWebhookSecret(in.Secret)...)
	}
	var more []core.Problem
	w.Filter, more = checkWebhookFilter(in.Filter)
	ps = append(ps, more...)
	w.AutoPayload, more = checkWebhookAutoPayload(in.AutoPayload)
	ps = append(ps, more...)
	if w.Event != "" {
		ps = append(ps, checkWebhookShape(w)...)
	}
	if len(ps) > 0 {
		return nil, &core.ValidationError{Problems: ps}
	}
	if ve := e.checkWebhookTarget(ctx, u); ve != nil {
		return nil, ve
	}
	if err := e.sealWebhookSecret(w, in.Secret); err != nil {
		return nil, err
	}
	now := e.now().UTC()
	w.CreatedAt, w.UpdatedAt = now, now
	if err := e.store.InsertWebhook(ctx, w); err != nil {
		return nil, err
	}
	e.cache.forget(orgID)
	w.Sealed = nil
	return w, nil
}

// GetWebhook returns a registration (without its sealed secret).
func (e *Webhooks) GetWebhook(ctx context.Context, orgID, id string) (*svctype.Webhook, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	w, err := e.store.GetWebhook(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	w.Sealed = nil
	return w, e.showCircuit(ctx, w)
}

// showCircuit fills w.Circuit from the circuit of its target's address.
func (e *Webhooks) showCircuit(ctx context.Context, w *svctype.Webhook) error {
	c, err := e.circuit(ctx, e.store, w.OrgID, w.URL)
	if err != nil {
		return err
	}
	w.Circuit = &svctype.WebhookCircuit{State: circuitStateName(c.State), Failures: c.Failures}
	if c.State == events.CircuitOpen {
		until := c.OpenUntil.UTC()
		w.Circuit.OpenUntil = &until
	}
	return nil
}

// ListWebhooks pages the organization's registrations, oldest first.
func (e *Webhooks) ListWebhooks(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Webhook], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Webhook]{}, err
	}
	page, err := e.store.ListWebhooks(ctx, orgID, storage.WebhookListFilter{ListOptions: opts})
	if err != nil {
		return page, err
	}
	for i := range page.Items {
		page.Items[i].Sealed = nil
		if err := e.showCircuit(ctx, &page.Items[i]); err != nil {
			return page, err
		}
	}
	return page, nil
}

// UpdateWebhook applies p to a registration (PATCH): only the fields p sets change, and the
// result is checked whole (a filter stays allowed only on a document event). A new URL's
// address is checked as on creation; a URL left as it is is not checked again. core.ErrNotFound
// when the organization has no such registration.
func (e *Webhooks) UpdateWebhook(ctx context.Context, orgID, id string, p WebhookPatch) (*svctype.Webhook, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	// What can be checked alone is checked, resolved and sealed before the transaction, so
	// that no name lookup holds it (on SQLite, the one writer).
	var (
		ps            []core.Problem
		event, alias  string
		filter        *svctype.WebhookFilter
		auto          map[string]any
		sealedFor     = &svctype.Webhook{ID: id, OrgID: orgID}
		prob          *core.Problem
		u             *url.URL
		more          []core.Problem
		clearedFilter = p.Filter != nil && p.Filter.IsZero()
	)
	if p.Event != nil {
		if event, alias, prob = webhookEvent(*p.Event); prob != nil {
			ps = append(ps, *prob)
		}
	}
	if p.URL != nil {
		if u, prob = checkWebhookURL(*p.URL); prob != nil {
			ps = append(ps, *prob)
		}
	}
	if p.Secret != nil && *p.Secret != "" {
		ps = append(ps, checkWebhookSecret(*p.Secret)...)
	}
	if p.Filter != nil {
		filter, more = checkWebhookFilter(p.Filter)
		ps = append(ps, more...)
	}
	if p.AutoPayload != nil {
		auto, more = checkWebhookAutoPayload(p.AutoPayload)
		ps = append(ps, more...)
	}
	if len(ps) > 0 {
		return nil, &core.ValidationError{Problems: ps}
	}
	if u != nil {
		if ve := e.checkWebhookTarget(ctx, u); ve != nil {
			return nil, ve
		}
	}
	if p.Secret != nil {
		if err := e.sealWebhookSecret(sealedFor, *p.Secret); err != nil {
			return nil, err
		}
	}

	var out *svctype.Webhook
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		w, err := tx.GetWebhook(ctx, orgID, id)
		if err != nil {
			return err
		}
		if p.Event != nil {
			w.Event, w.EventAlias = event, alias
		}
		if p.URL != nil {
			w.URL = *p.URL
		}
		if p.Secret != nil {
			w.Sealed, w.MasterKeyID, w.HasSecret = sealedFor.Sealed, sealedFor.MasterKeyID, sealedFor.HasSecret
		}
		if p.Filter != nil {
			w.Filter = filter
			if clearedFilter {
				w.Filter = nil
			}
		}
		if p.AutoPayload != nil {
			w.AutoPayload = auto
		}
		if ps := checkWebhookShape(w); len(ps) > 0 {
			return &core.ValidationError{Problems: ps}
		}
		now := e.now().UTC()
		w.UpdatedAt = now
		if err := tx.UpdateWebhook(ctx, w); err != nil {
			return err
		}
		if p.Disabled != nil {
			if *p.Disabled {
				err = tx.DisableWebhook(ctx, orgID, id, now)
			} else {
				_, err = tx.EnableWebhook(ctx, orgID, id)
			}
			if err != nil {
				return err
			}
		}
		out, err = tx.GetWebhook(ctx, orgID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.cache.forget(orgID)
	out.Sealed = nil
	return out, nil
}

// DeleteWebhook removes a registration and its secret; core.ErrNotFound when there is none.
func (e *Webhooks) DeleteWebhook(ctx context.Context, orgID, id string) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	if err := e.store.DeleteWebhook(ctx, orgID, id); err != nil {
		return err
	}
	e.cache.forget(orgID)
	return nil
}

// RecordWebhookHealth records the outcome of a delivery to a registered target (after its
// retries). A failure adds one to its consecutive failures and disables it when they reach
// WebhookDisableAfter; a success resets them and re-enables it (spec section 8). at dates a
// disabling (zero: now). A success on a registration that no longer exists is not an
// error (there is nothing to record); a failure is core.ErrNotFound.
func (e *Webhooks) RecordWebhookHealth(ctx context.Context, orgID, id string, success bool, at time.Time) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	if success {
		changed, err := e.store.EnableWebhook(ctx, orgID, id)
		if err != nil {
			return err
		}
		if changed {
			e.cache.forget(orgID)
			e.log.InfoContext(ctx, "webhook target healthy again", "org_id", orgID, "webhook_id", id)
		}
		return nil
	}
	if at.IsZero() {
		at = e.now()
	}
	w, err := e.store.RecordWebhookFailure(ctx, orgID, id, WebhookDisableAfter, at.UTC())
	if err != nil {
		return err
	}
	if w.Disabled && w.ConsecutiveFailures == WebhookDisableAfter {
		e.cache.forget(orgID)
		e.log.WarnContext(ctx, "webhook target disabled after consecutive failures", "org_id", orgID, "webhook_id", id,
			"failures", w.ConsecutiveFailures)
	}
	return nil
}
