package actions

import "time"

// SetCacheClock sets the clock the action cache ages its entries by.
func SetCacheClock(a *Actions, now func() time.Time) {
	a.cache.mu.Lock()
	defer a.cache.mu.Unlock()
	a.cache.now = now
}
