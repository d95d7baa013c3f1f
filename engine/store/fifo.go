package store

import "sync"

// fifoMutex is a mutex that hands itself to waiters strictly in the order they arrived.
// A waiter may be a commit group (groupcommit.go): transactions that arrive while the group
// is the last in the queue join it instead of queuing behind it, and so keep their place
// against every other waiter.
type fifoMutex struct {
	mu      sync.Mutex
	locked  bool
	waiters []chan struct{}
	// open is the group whose leader is the last waiter and that later transactions may
	// still join; nil when the last waiter is anything else, or there is none.
	open *commitGroup
	// queued, when set (tests), is called each time a caller starts to wait: behind the
	// lock or in a group.
	queued func()
}

func (m *fifoMutex) Lock() {
	m.mu.Lock()
	if !m.locked {
		m.locked = true
		m.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	m.waiters = append(m.waiters, ch)
	m.open = nil // a transaction arriving after this caller must not go before it
	m.mu.Unlock()
	m.notifyQueued()
	<-ch // handed over: still locked, now ours
}

// lockOrJoin adds c to the open group when there is one with room for it (fewer than max
// calls) and returns nil: the group's leader runs c. Otherwise c leads a new group: it
// waits for the mutex like Lock and returns the group, now closed to newcomers, with the
// mutex held.
func (m *fifoMutex) lockOrJoin(c *txCall, max int) *commitGroup {
	m.mu.Lock()
	if g := m.open; g != nil && len(g.calls) < max {
		g.calls = append(g.calls, c)
		m.mu.Unlock()
		m.notifyQueued()
		return nil
	}
	g := &commitGroup{calls: []*txCall{c}}
	if !m.locked {
		m.locked = true
		m.mu.Unlock()
		return g
	}
	ch := make(chan struct{})
	m.waiters = append(m.waiters, ch)
	m.open = g
	m.mu.Unlock()
	m.notifyQueued()
	<-ch // Unlock closed the group before handing over: g.calls no longer changes
	return g
}

func (m *fifoMutex) Unlock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.waiters) == 0 {
		m.locked = false
		return
	}
	next := m.waiters[0]
	m.waiters[0] = nil
	m.waiters = m.waiters[1:]
	if len(m.waiters) == 0 {
		m.open = nil // next was the last waiter: if it leads the open group, the group starts
	}
	close(next)
}

func (m *fifoMutex) notifyQueued() {
	if m.queued != nil {
		m.queued()
	}
}
