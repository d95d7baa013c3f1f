// Package testclock is the clock tests hand an engine and its store (engine.Config.Now,
// store.WithNow) and move instead of sleeping: a timer falls due, a lease lapses or a
// deadline passes when the test says so, on both at once. It is for tests only.
package testclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told (New), or that runs with the wall clock from
// an offset that Advance and Set change (Running). Safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	t       time.Time     // a stopped clock's time
	running bool          // Now is the wall clock plus offset
	offset  time.Duration // a running clock's lead on the wall clock
}

// New returns a clock stopped at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Running returns a clock that runs with the wall clock until Advance or Set moves it: for
// a test of code that also reads time.Now or that needs time to pass between two calls.
func Running() *Clock { return &Clock{running: true} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return time.Now().Add(c.offset)
	}
	return c.t
}

// Advance moves the clock by d (back when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		c.offset += d
		return
	}
	c.t = c.t.Add(d)
}

// Set moves the clock to t (a running clock goes on from t).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		c.offset = time.Until(t)
		return
	}
	c.t = t
}
