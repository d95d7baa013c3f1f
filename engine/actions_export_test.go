package engine

import "time"

// SetActionCacheClock sets the clock the action cache ages its entries by.
func SetActionCacheClock(e *Engine, now func() time.Time) {
	e.actions.mu.Lock()
	defer e.actions.mu.Unlock()
	e.actions.now = now
}
