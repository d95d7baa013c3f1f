package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Webhook deliveries. Every event the engine appends to the outbox is fanned out, in the
// same transaction, to its targets: the organization's catch-all (org config webhook_url,
// every event, unsigned) and the webhooks registered for the event (signed when they have
// a secret). Each (event, target) pair is a Delivery row holding the exact bytes to send and
// a job in the jobs table, so a delivery is as durable as the event that caused it: it is
// committed with it or not at all, survives restarts, and is sent by whichever worker
// claims it (delivery_send.go).

// CatchAllKey is the org config key of the catch-all webhook target.
const CatchAllKey = "webhook_url"

// JobDeliver is the job kind that sends one delivery (payload {delivery_id}).
const JobDeliver = "webhook_delivery"

// Delivery targets.
const (
	TargetWebhook  = "webhook"
	TargetCatchAll = "catch_all"
)

type catchAllEntry struct {
	url  string
	read time.Time
}

// catchAllCache keeps each organization's catch-all address (or "" for none) briefly: it is
// read for every event.
type catchAllCache struct {
	mu sync.Mutex
	m  map[string]catchAllEntry
}

func (c *catchAllCache) forget(orgID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, orgID)
}

// catchAll returns the organization's catch-all address, "" when it has none (or the
// engine has no master key, so no org config).
func (e *Webhooks) catchAll(ctx context.Context, orgID string) (string, error) {
	return e.catchAllIn(ctx, e.store, orgID)
}

// catchAllIn is catchAll read through q on a cache miss: the fan-out reads inside the
// event's transaction, where asking the pool for a second connection could wait forever
// (every connection held by a transaction doing the same).
func (e *Webhooks) catchAllIn(ctx context.Context, q orgconfig.Values, orgID string) (string, error) {
	c := &e.catchAlls
	now := time.Now()
	c.mu.Lock()
	if ent, ok := c.m[orgID]; ok && now.Sub(ent.read) < CacheTTL {
		c.mu.Unlock()
		return ent.url, nil
	}
	c.mu.Unlock()
	url, err := e.orgConfig.ValueIn(ctx, q, orgID, CatchAllKey)
	if errors.Is(err, core.ErrNotFound) || errors.Is(err, orgconfig.ErrNoMasterKey) {
		url, err = "", nil
	}
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > 4096 {
		c.m = map[string]catchAllEntry{}
	}
	c.m[orgID] = catchAllEntry{url: url, read: now}
	return url, nil
}

// hookTarget is a registered webhook as the fan-out sees it.
type hookTarget struct {
	id          string
	signed      bool
	filter      *svctype.WebhookFilter
	autoPayload map[string]any
}

// Sink writes a delivery and its job for every target of every event (a core.EventSink):
// subject, when set, is what the events are about (for registrations' filters).
func (e *Webhooks) Sink(ctx context.Context, stx storage.Tx, evs []svctype.Event, subject *core.EventSubject) error {
	tx := Tx(stx)
	var ds []svctype.Delivery
	catchAlls := map[string]string{}
	for i := range evs {
		ev := &evs[i]
		url, ok := catchAlls[ev.OrgID]
		if !ok {
			var err error
			if url, err = e.catchAllIn(ctx, tx, ev.OrgID); err != nil {
				return err
			}
			catchAlls[ev.OrgID] = url
		}
		if url != "" {
			d, err := e.delivery(ev, ev.DeliveryID, TargetCatchAll, nil)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		name, registrable := events.Canonical(ev.Event)
		if !registrable {
			continue
		}
		hooks, err := e.registeredTargets(ctx, tx, ev.OrgID, name)
		if err != nil {
			return err
		}
		for j := range hooks {
			h := &hooks[j]
			if spec, _ := events.Lookup(name); spec != nil && spec.Filterable && !h.matches(subject) {
				continue
			}
			d, err := e.delivery(ev, "dlv_"+uuid.NewString(), TargetWebhook, h)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	if err := tx.CreateDeliveries(ctx, ds); err != nil {
		return err
	}
	for i := range ds {
		payload, _ := json.Marshal(deliveryPayload{DeliveryID: ds[i].ID})
		// run_at zero: due now on the store's clock (which leases and claims use).
		if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: ds[i].OrgID, Kind: JobDeliver, RunID: ds[i].RunID,
			Payload: payload}); err != nil {
			return err
		}
	}
	return nil
}

// matches reports whether a document event about subject passes the registration's filter
// (svctype.WebhookFilter.Matches: the content type, and at least one of the tags).
func (h *hookTarget) matches(subject *core.EventSubject) bool {
	if h.filter.IsZero() {
		return true
	}
	return subject != nil && h.filter.Matches(subject.Tags, subject.ContentType)
}

// delivery builds the delivery of ev to one target, its body encoded once: every attempt
// sends these bytes. A registration's auto_payload adds its keys to the payload; the event's
// own fields win.
func (e *Webhooks) delivery(ev *svctype.Event, id, target string, h *hookTarget) (svctype.Delivery, error) {
	payload := ev.Payload
	if h != nil && len(h.autoPayload) > 0 {
		var m map[string]any
		if err := json.Unmarshal(ev.Payload, &m); err == nil && m != nil {
			if b, err := json.Marshal(svctype.MergeAutoPayload(m, h.autoPayload)); err == nil {
				payload = b
			}
		}
	}
	body, err := events.Body(id, ev.Event, ev.Timestamp, json.RawMessage(payload))
	if err != nil {
		return svctype.Delivery{}, fmt.Errorf("delivery of %s: %w", ev.Event, err)
	}
	now := e.now().UTC()
	d := svctype.Delivery{ID: id, OrgID: ev.OrgID, Event: ev.Event, RunID: ev.RunID, Target: target,
		Body: body, Status: svctype.DeliveryPending, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now}
	if h != nil {
		d.WebhookID, d.Signed = h.id, h.signed
	}
	return d, nil
}

// deliveryPayload is a JobDeliver job's payload.
type deliveryPayload struct {
	DeliveryID string `json:"delivery_id"`
	// SentBefore is the number of requests the delivery had sent when this round of retries
	// began (a redelivery starts one): the delivery's attempts count every request sent, the
	// round's retries are those after SentBefore. Zero for the first round, and for a job
	// written before the field (whose delivery's attempts were its round's).
	SentBefore int `json:"sent_before,omitempty"`
}

// webhookSecret is a registered target as the sender sees it.
type webhookSecret struct {
	url    string
	secret []byte
}

// webhookTarget returns where the organization's webhook id, registered for event, sends
// and its secret: from the cache of WebhookTargets. core.ErrNotFound when it was deleted (or
// moved to another event).
func (e *Webhooks) webhookTarget(ctx context.Context, orgID, event, id string) (*webhookSecret, error) {
	ts, err := e.WebhookTargets(ctx, orgID, event)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.ID == id {
			return &webhookSecret{url: t.URL, secret: t.Secret}, nil
		}
	}
	return nil, fmt.Errorf("%w: webhook %s", core.ErrNotFound, id)
}

// registeredTargets returns the organization's webhooks registered for event. A disabled
// one is still a target: its deliveries go through its circuit (one probe every few
// minutes), and a success enables it again.
func (e *Webhooks) registeredTargets(ctx context.Context, q Reads, orgID, event string) ([]hookTarget, error) {
	ts, err := e.webhookTargetsIn(ctx, q, orgID, event)
	if err != nil {
		return nil, err
	}
	out := make([]hookTarget, len(ts))
	for i, t := range ts {
		out[i] = hookTarget{id: t.ID, signed: t.Secret != nil, filter: t.Filter, autoPayload: t.AutoPayload}
	}
	return out, nil
}

// DeliveryDoc is a delivery with every attempt, as GET /deliveries/{id} shows it.
type DeliveryDoc struct {
	svctype.Delivery
	AttemptList []svctype.DeliveryAttempt `json:"attempt_list"`
}

// GetDelivery returns one of the organization's deliveries with its attempts.
func (e *Webhooks) GetDelivery(ctx context.Context, orgID, id string) (*DeliveryDoc, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	d, err := e.store.GetDelivery(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	attempts, err := e.store.ListDeliveryAttempts(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	return &DeliveryDoc{Delivery: *d, AttemptList: attempts}, nil
}

// ListDeliveries pages the organization's deliveries newest first; those of one registered
// webhook when webhookID is set (core.ErrNotFound when the organization has no such webhook).
func (e *Webhooks) ListDeliveries(ctx context.Context, orgID, webhookID string, opts svctype.ListOptions) (svctype.Page[svctype.Delivery], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Delivery]{}, err
	}
	if webhookID != "" {
		if _, err := e.GetWebhook(ctx, orgID, webhookID); err != nil {
			return svctype.Page[svctype.Delivery]{}, err
		}
	}
	return e.store.ListDeliveries(ctx, orgID, webhookID, opts)
}

// Redeliver sends a delivery that has ended (succeeded or failed) once more: the same
// delivery_id and the same bytes, with a new round of retries. Its attempts go on counting
// the requests sent, every round's. A delivery still pending is core.ErrConflict: it is
// already going to be sent.
func (e *Webhooks) Redeliver(ctx context.Context, orgID, id string) (*svctype.Delivery, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	var out *svctype.Delivery
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		d, err := tx.GetDelivery(ctx, orgID, id)
		if err != nil {
			return err
		}
		if d.Status == svctype.DeliveryPending {
			return fmt.Errorf("%w: delivery %s is pending: it is sent again by itself", core.ErrConflict, id)
		}
		now := e.now().UTC()
		d.Status, d.NextAttemptAt, d.UpdatedAt, d.CompletedAt = svctype.DeliveryPending, &now, now, nil
		if err := tx.UpdateDelivery(ctx, d); err != nil {
			return err
		}
		payload, _ := json.Marshal(deliveryPayload{DeliveryID: d.ID, SentBefore: d.Attempts})
		if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: orgID, Kind: JobDeliver, RunID: d.RunID, Payload: payload}); err != nil {
			return err
		}
		out = d
		return nil
	})
	if err == nil {
		e.core.Notify()
	}
	return out, err
}

// recordWebhookHealth records an answer on a registered target (disabled after many
// failures in a row, enabled again by a success).
func (e *Webhooks) recordWebhookHealth(ctx context.Context, d *svctype.Delivery, ok bool) error {
	if d.Target != TargetWebhook {
		return nil
	}
	err := e.RecordWebhookHealth(ctx, d.OrgID, d.WebhookID, ok, e.now())
	if errors.Is(err, core.ErrNotFound) { // deleted meanwhile
		return nil
	}
	return err
}
