package actions

import "time"

// SetCacheClock sets the clock the action cache ages its entries by.
func SetCacheClock(a *Actions, now func() time.Time) {
	a.cache.mu.Lock()
	defer a.cache.mu.Unlock()
	a.cache.now = now
}

// SecretValue is secretValue: how a run resolves an orgconfig: reference in a header.
var SecretValue = secretValue
