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
	timers  []timer       // After's, not fired yet
}

// timer is one of After's: ch receives the clock's time once it reads due or later.
type timer struct {
	due time.Time
	ch  chan time.Time
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
	return c.now()
}

func (c *Clock) now() time.Time {
	if c.running {
		return time.Now().Add(c.offset)
	}
	return c.t
}

// After is time.After on this clock (engine.Config.After): the channel receives the
// clock's time once the test has moved it (Advance, Set) to d from now or past, at once
// when d <= 0. The wall clock never fires it, not even a running clock's: a deadline passes
// when the test says so, and a test that sees an answer before it moves the clock knows
// the answer did not come from the deadline.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	now := c.now()
	if d <= 0 {
		ch <- now
		return ch
	}
	c.timers = append(c.timers, timer{due: now.Add(d), ch: ch})
	return ch
}

// fire sends the clock's time on every timer due by it; c.mu is held.
func (c *Clock) fire() {
	now := c.now()
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.due.After(now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- now
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

// Advance moves the clock by d (back when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.fire()
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
	defer c.fire()
	if c.running {
		c.offset = time.Until(t)
		return
	}
	c.t = t
}
