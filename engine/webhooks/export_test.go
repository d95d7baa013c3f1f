package webhooks

import (
	"context"
	"net/netip"
	"time"
)

// SetResolver replaces the name lookup of webhook target hosts.
func SetResolver(w *Webhooks, resolve func(ctx context.Context, host string) ([]netip.Addr, error)) {
	w.resolve = resolve
}

// SetCacheClock sets the clock the webhook target cache ages its entries by.
func SetCacheClock(w *Webhooks, now func() time.Time) {
	w.cache.mu.Lock()
	defer w.cache.mu.Unlock()
	w.cache.now = now
}
