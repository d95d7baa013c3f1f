package webhooks

// Which registrations an event goes to, read through a short per-organization cache.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"golang.org/x/sync/singleflight"
)

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
