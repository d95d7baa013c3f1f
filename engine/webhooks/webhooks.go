// Package webhooks is where events leave svcflow: an organization's webhook registrations
// and catch-all address, the fan-out of every emitted event into deliveries (a core event
// sink, in the event's transaction), and the delivery job that sends each one outside any
// transaction, with retries, signatures and a circuit per target (the rules of package
// events).
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/documents"
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

// webhookSealName is the name a registration's secret is sealed under (with the org id):
// a sealed value copied to another registration or organization does not open.
func webhookSealName(id string) string { return "webhook:" + id }

// webhookEvent resolves a registration's event name to its canonical name and alias.
func webhookEvent(name string) (canonical, alias string, p *core.Problem) {
	if name == "" {
		return "", "", &core.Problem{Pointer: "/event", Message: "required: one of " + strings.Join(events.Registrable(), ", ")}
	}
	canonical, ok := events.Canonical(name)
	if !ok {
		what := "is not an event"
		if _, known := events.Lookup(name); known {
			what = "reaches the org config webhook_url only and cannot be registered"
		}
		return "", "", &core.Problem{Pointer: "/event", Message: fmt.Sprintf("%q %s: one of %s", name, what, strings.Join(events.Registrable(), ", "))}
	}
	if canonical != name {
		alias = name
	}
	return canonical, alias, nil
}

// checkWebhookURL checks a target URL's form (not its address).
func checkWebhookURL(raw string) (*url.URL, *core.Problem) {
	bad := func(msg string) (*url.URL, *core.Problem) { return nil, &core.Problem{Pointer: "/url", Message: msg} }
	switch {
	case raw == "":
		return bad("required: an http:// or https:// URL")
	case len(raw) > MaxWebhookURLLen:
		return bad(fmt.Sprintf("at most %d bytes", MaxWebhookURLLen))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// Not the parser's message: it quotes the URL, which may hold a token.
		return bad("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must be an http:// or https:// URL")
	case u.User != nil:
		return bad("must not carry credentials (user:password@): give the target a secret, which signs every delivery")
	case u.Hostname() == "":
		return bad("has no host")
	}
	return u, nil
}

// checkWebhookTarget refuses a target whose host is, or resolves to, an address that the
// outbound guard refuses, unless the engine allows private targets. This is the early,
// friendly error; the guard at connect time is what protects (a name may resolve elsewhere
// by then). A name that does not resolve within webhookResolveTimeout is accepted for the
// same reason. The message never names an address a name resolved to.
func (e *Webhooks) checkWebhookTarget(ctx context.Context, u *url.URL) *core.ValidationError {
	if e.allowPrivate {
		return nil
	}
	refused := func(what string) *core.ValidationError {
		return &core.ValidationError{Code: CodeTargetNotAllowed, Problems: []core.Problem{{Pointer: "/url", Message: what +
			": webhook targets must be public addresses (loopback, private, link-local and metadata addresses are refused)"}}}
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		var te *outbound.TargetError
		if err := outbound.CheckAddr(ip); errors.As(err, &te) {
			return refused("the host is a " + te.Reason)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, webhookResolveTimeout)
	defer cancel()
	addrs, err := e.resolveHost(ctx, host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		var te *outbound.TargetError
		if err := outbound.CheckAddr(a); errors.As(err, &te) {
			return refused(fmt.Sprintf("the host %q resolves to a %s", host, te.Reason))
		}
	}
	return nil
}

// resolveHost looks a target's host name up; tests replace it.
func (e *Webhooks) resolveHost(ctx context.Context, host string) ([]netip.Addr, error) {
	if e.resolve != nil {
		return e.resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// checkWebhookFilter normalises a filter (nil when it filters nothing; tags deduplicated).
func checkWebhookFilter(f *svctype.WebhookFilter) (*svctype.WebhookFilter, []core.Problem) {
	if f.IsZero() {
		return nil, nil
	}
	var ps []core.Problem
	out := &svctype.WebhookFilter{ContentType: strings.TrimSpace(f.ContentType)}
	if len(f.Tags) > documents.MaxTags {
		ps = append(ps, core.Problem{Pointer: "/filter/tags", Message: fmt.Sprintf("at most %d tags", documents.MaxTags)})
	}
	for i, t := range f.Tags {
		switch {
		case t == "" || len(t) > documents.MaxTagLength:
			ps = append(ps, core.Problem{Pointer: fmt.Sprintf("/filter/tags/%d", i), Message: fmt.Sprintf("a tag is 1 to %d bytes", documents.MaxTagLength)})
		case !slices.Contains(out.Tags, t):
			out.Tags = append(out.Tags, t)
		}
	}
	if ct := out.ContentType; ct != "" {
		switch {
		case len(ct) > documents.MaxContentTypeLength:
			ps = append(ps, core.Problem{Pointer: "/filter/content_type", Message: fmt.Sprintf("at most %d bytes", documents.MaxContentTypeLength)})
		case !mediaTypePattern(ct):
			ps = append(ps, core.Problem{Pointer: "/filter/content_type", Message: "is not a media type (text/csv, or text/* for every text type)"})
		}
	}
	return out, ps
}

// mediaTypePattern: type/subtype with optional parameters, or type/* (which matches every
// subtype).
func mediaTypePattern(s string) bool {
	if major, ok := strings.CutSuffix(s, "/*"); ok {
		_, _, err := mime.ParseMediaType(major + "/x")
		return major != "" && !strings.ContainsAny(major, "/;* ") && err == nil
	}
	mt, _, err := mime.ParseMediaType(s)
	major, minor, ok := strings.Cut(mt, "/")
	return err == nil && ok && major != "" && minor != "" && !strings.Contains(minor, "/")
}

// checkWebhookAutoPayload bounds auto_payload (nil when empty).
func checkWebhookAutoPayload(p map[string]any) (map[string]any, []core.Problem) {
	if len(p) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(p)
	switch {
	case err != nil:
		return nil, []core.Problem{{Pointer: "/auto_payload", Message: "is not representable as JSON"}}
	case len(raw) > MaxWebhookAutoPayload:
		return nil, []core.Problem{{Pointer: "/auto_payload", Message: fmt.Sprintf("at most %d bytes as JSON", MaxWebhookAutoPayload)}}
	}
	return p, nil
}

// checkWebhookSecret: 1 to 512 bytes. The message never quotes it.
func checkWebhookSecret(s string) []core.Problem {
	if s == "" || len(s) > MaxWebhookSecretLen {
		return []core.Problem{{Pointer: "/secret", Message: fmt.Sprintf("a secret is 1 to %d bytes (\"\" in a PATCH removes it)", MaxWebhookSecretLen)}}
	}
	return nil
}

// checkWebhookShape checks what depends on several fields: a filter only on a document
// event.
func checkWebhookShape(w *svctype.Webhook) []core.Problem {
	if w.Filter == nil {
		return nil
	}
	if s, ok := events.Lookup(w.Event); ok && !s.Filterable {
		return []core.Problem{{Pointer: "/filter", Message: fmt.Sprintf("a filter is honoured for document events only (document.*), not %s", w.Event)}}
	}
	return nil
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

// WebhookTargets returns the organization's registrations for event (a canonical name or an
// alias; nil for an event that cannot be registered) with their secrets opened, disabled
// ones included (WebhookTarget.Disabled), oldest first. It is called for every emitted
// event, so it is served from a per-organization cache: a write through this engine is seen
// at once, one by another process within CacheTTL. A registration whose secret does
// not open (its master key is no longer held) is left out and logged by organization, id
// and key id: sent unsigned, a delivery would look authentic to a receiver that does not
// check, and failing the call would fail every event of the organization.
func (e *Webhooks) WebhookTargets(ctx context.Context, orgID, event string) ([]WebhookTarget, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	canonical, ok := events.Canonical(event)
	if !ok {
		return nil, nil
	}
	if byEvent, ok := e.cache.get(orgID); ok {
		return slices.Clone(byEvent[canonical]), nil
	}
	v, err, _ := e.cache.loads.Do(orgID, func() (any, error) {
		gen := e.cache.generation()
		byEvent, err := e.loadWebhookTargets(ctx, e.store, orgID)
		if err != nil {
			return nil, err
		}
		e.cache.put(gen, orgID, byEvent)
		return byEvent, nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(v.(map[string][]WebhookTarget)[canonical]), nil
}

// webhookTargetsIn is WebhookTargets read through q on a cache miss (the fan-out reads
// inside the event's transaction: a second connection could be one the pool does not have).
func (e *Webhooks) webhookTargetsIn(ctx context.Context, q Reads, orgID, event string) ([]WebhookTarget, error) {
	canonical, ok := events.Canonical(event)
	if !ok {
		return nil, nil
	}
	if byEvent, ok := e.cache.get(orgID); ok {
		return byEvent[canonical], nil
	}
	gen := e.cache.generation()
	byEvent, err := e.loadWebhookTargets(ctx, q, orgID)
	if err != nil {
		return nil, err
	}
	e.cache.put(gen, orgID, byEvent)
	return byEvent[canonical], nil
}

// loadWebhookTargets reads every registration of the organization, by event.
func (e *Webhooks) loadWebhookTargets(ctx context.Context, q Reads, orgID string) (map[string][]WebhookTarget, error) {
	byEvent := map[string][]WebhookTarget{}
	opts := svctype.ListOptions{Limit: 500}
	for {
		page, err := q.ListWebhooks(ctx, orgID, storage.WebhookListFilter{ListOptions: opts})
		if err != nil {
			return nil, err
		}
		for _, w := range page.Items {
			t := WebhookTarget{ID: w.ID, URL: w.URL, Filter: w.Filter, AutoPayload: w.AutoPayload, Disabled: w.Disabled}
			if w.HasSecret {
				secret, err := e.keys.Open(orgID, webhookSealName(w.ID), w.Sealed)
				if err != nil {
					e.log.ErrorContext(ctx, "webhook secret does not open: the target is left out of deliveries until its secret is set again",
						"org_id", orgID, "webhook_id", w.ID, "master_key_id", w.MasterKeyID, "err", err)
					continue
				}
				t.Secret = secret
			}
			byEvent[w.Event] = append(byEvent[w.Event], t)
		}
		if page.NextCursor == "" {
			return byEvent, nil
		}
		opts.Cursor = page.NextCursor
	}
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

// webhookCache keeps each organization's targets by event, for at most ttl. The zero value
// is ready to use.
type webhookCache struct {
	mu sync.Mutex
	// gen counts the organizations forgotten; a load that read the store before a write
	// forgot its organization does not put its (older) targets back.
	gen  uint64
	orgs map[string]cachedWebhooks
	// loads makes concurrent misses of one organization read the store once.
	loads singleflight.Group
	// ttl and now default to CacheTTL and time.Now; tests set them.
	ttl time.Duration
	now func() time.Time
}

type cachedWebhooks struct {
	byEvent map[string][]WebhookTarget
	expires time.Time
}

func (c *webhookCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *webhookCache) get(orgID string) (map[string][]WebhookTarget, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ent, ok := c.orgs[orgID]
	if !ok || !c.clock().Before(ent.expires) {
		return nil, false
	}
	return ent.byEvent, true
}

func (c *webhookCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *webhookCache) put(gen uint64, orgID string, byEvent map[string][]WebhookTarget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.orgs == nil || len(c.orgs) >= maxCachedWebhookOrgs {
		c.orgs = map[string]cachedWebhooks{}
	}
	ttl := c.ttl
	if ttl <= 0 {
		ttl = CacheTTL
	}
	c.orgs[orgID] = cachedWebhooks{byEvent: byEvent, expires: c.clock().Add(ttl)}
}

func (c *webhookCache) forget(orgID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.orgs, orgID)
}
