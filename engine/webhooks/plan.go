package webhooks

import (
	"context"
	"net/url"
	"sort"
	"strings"

	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/svctype"
)

// planDeliveries is the core's DeliveryPlanner: the targets the events named would be
// delivered to in orgID, one call each: the catch-all (org config webhook_url), which
// receives every event, then every registration of one of the events (a disabled one too:
// its deliveries are still tried through its circuit), oldest first. A document event's
// filter is not applied (the plan does not know the subject).
func (e *Webhooks) planDeliveries(ctx context.Context, orgID string, names []string) ([]svctype.PlannedCall, error) {
	var out []svctype.PlannedCall
	catchAll, err := e.catchAll(ctx, orgID)
	if err != nil {
		return nil, err
	}
	if catchAll != "" {
		out = append(out, svctype.PlannedCall{Kind: "webhook", Method: "POST", Host: hostOf(catchAll),
			Detail: "catch-all webhook_url: every event of the run"})
	}
	type hook struct {
		target WebhookTarget
		events []string
	}
	var hooks []*hook
	byID := map[string]*hook{}
	for _, name := range names {
		canonical, ok := events.Canonical(name)
		if !ok {
			continue
		}
		ts, err := e.WebhookTargets(ctx, orgID, canonical)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			h := byID[t.ID]
			if h == nil {
				h = &hook{target: t}
				byID[t.ID] = h
				hooks = append(hooks, h)
			}
			h.events = append(h.events, canonical)
		}
	}
	for _, h := range hooks {
		sort.Strings(h.events)
		detail := "webhook " + h.target.ID + ": " + strings.Join(h.events, ", ")
		if h.target.Disabled {
			detail += " (disabled: tried through its circuit)"
		}
		out = append(out, svctype.PlannedCall{Kind: "webhook", Method: "POST", Host: hostOf(h.target.URL), Detail: detail})
	}
	return out, nil
}

// hostOf is a target URL's host (with its port), or the URL itself when it does not parse.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}
