package store

import "sync"

// fifoMutex is a mutex that hands itself to waiters strictly in the order they arrived.
type fifoMutex struct {
	mu      sync.Mutex
	locked  bool
	waiters []chan struct{}
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
	m.mu.Unlock()
	<-ch // handed over: still locked, now ours
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
	close(next)
}
