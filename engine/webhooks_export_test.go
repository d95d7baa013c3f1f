package engine

import (
	"context"
	"net/netip"
	"time"
)

// SetWebhookResolver replaces the name lookup of webhook target hosts.
func SetWebhookResolver(e *Engine, resolve func(ctx context.Context, host string) ([]netip.Addr, error)) {
	e.resolve = resolve
}

// SetWebhookCacheClock sets the clock the webhook target cache ages its entries by.
func SetWebhookCacheClock(e *Engine, now func() time.Time) {
	e.webhooks.mu.Lock()
	defer e.webhooks.mu.Unlock()
	e.webhooks.now = now
}
