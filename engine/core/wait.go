package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// MaxWait is the longest a caller may wait for a run (execute?wait, status?wait).
const MaxWait = 60 * time.Second

// Waiting for a run holds no database connection and no transaction: a waiter is a channel
// in waitHub, woken when a commit in this process changes the run's status, when the store
// reports such a commit in another process (PostgreSQL LISTEN/NOTIFY, see
// storage.RunStatusWatcher), or by a slow poll of the waited runs that catches anything else
// (another process on the same SQLite file, a notification lost to a reconnect).

type runKey struct{ org, run string }

// waiter is one caller waiting for a run's status to differ from last.
type waiter struct {
	ch   chan struct{}
	last svctype.RunStatus
}

// waitHub holds the waiters of this process, by run.
type waitHub struct {
	mu      sync.Mutex
	waiters map[runKey]map[*waiter]struct{}
	n       int
	polling bool
}

// add registers a waiter and reports whether the poll must be started.
func (h *waitHub) add(k runKey, last svctype.RunStatus) (*waiter, bool) {
	w := &waiter{ch: make(chan struct{}, 1), last: last}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = map[runKey]map[*waiter]struct{}{}
	}
	set := h.waiters[k]
	if set == nil {
		set = map[*waiter]struct{}{}
		h.waiters[k] = set
	}
	set[w] = struct{}{}
	h.n++
	startPoll := !h.polling
	h.polling = true
	return w, startPoll
}

func (h *waitHub) remove(k runKey, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := h.waiters[k]; set != nil {
		if _, ok := set[w]; ok {
			delete(set, w)
			h.n--
		}
		if len(set) == 0 {
			delete(h.waiters, k)
		}
	}
}

// wake signals, without blocking, every waiter of k, or with status set only those that
// last saw another status.
func (h *waitHub) wake(k runKey, status svctype.RunStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters[k] {
		if status != "" && status == w.last {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

// watched returns the waited runs by org, or stops the poll (and says so) when none is left.
func (h *waitHub) watched() (map[string][]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.waiters) == 0 {
		h.polling = false
		return nil, false
	}
	out := map[string][]string{}
	for k := range h.waiters {
		out[k.org] = append(out[k.org], k.run)
	}
	return out, true
}

// Waiting reports how many callers are waiting for a run in this process.
func (e *Core) Waiting() int {
	e.waits.mu.Lock()
	defer e.waits.mu.Unlock()
	return e.waits.n
}

// RunChanged wakes this process's waiters of run after a commit that changed its status.
func (e *Core) RunChanged(orgID, runID string) {
	e.waits.wake(runKey{orgID, runID}, "")
}

// WaitRun waits up to d for the run's status to differ from last, and returns the status
// it has then: at once when it already differs, the new status as soon as a commit changes
// it, or last when d elapses. A done ctx (the client went away) ends the wait at once with
// ctx's error. d is capped at MaxWait; d <= 0 only reads the status.
func (e *Core) WaitRun(ctx context.Context, orgID, runID string, last svctype.RunStatus, d time.Duration) (svctype.RunStatus, error) {
	if err := CheckOrg(orgID); err != nil {
		return "", err
	}
	d = min(d, MaxWait)
	if d <= 0 {
		return e.runStatus(ctx, orgID, runID)
	}
	k := runKey{orgID, runID}
	// Registered before the first read, so a commit between the read and the wait still
	// wakes this waiter.
	w, startPoll := e.waits.add(k, last)
	defer e.waits.remove(k, w)
	e.watchOnce.Do(e.watchRemote)
	if startPoll {
		go e.pollWaited()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		status, err := e.runStatus(ctx, orgID, runID)
		if err != nil || status != last {
			return status, err
		}
		select {
		case <-w.ch:
		case <-timer.C:
			return status, nil
		case <-ctx.Done():
			return status, ctx.Err()
		}
	}
}

// runStatus reads only a run's status.
func (e *Core) runStatus(ctx context.Context, orgID, runID string) (svctype.RunStatus, error) {
	m, err := e.store.RunStatuses(ctx, orgID, []string{runID})
	if err != nil {
		return "", err
	}
	status, ok := m[runID]
	if !ok {
		return "", fmt.Errorf("%w: run %s", ErrNotFound, runID)
	}
	return status, nil
}

// watchRemote subscribes to status changes committed by other processes, when the store
// can report them. It runs once per engine, on the first wait.
func (e *Core) watchRemote() {
	if w, ok := e.store.(storage.RunStatusWatcher); ok {
		w.WatchRunStatus(e.RunChanged)
	}
}

// pollWaited reads the status of every waited run every waitPoll while anyone waits, and
// wakes the waiters that last saw another status: the safety net behind in-process and
// store notifications. One query per organization with waiters.
func (e *Core) pollWaited() {
	t := time.NewTicker(e.waitPoll)
	defer t.Stop()
	for range t.C {
		byOrg, ok := e.waits.watched()
		if !ok {
			return
		}
		for org, runs := range byOrg {
			statuses, err := e.store.RunStatuses(context.Background(), org, runs)
			if err != nil {
				e.log.Warn("polling waited runs", "org_id", org, "err", err)
				continue
			}
			for id, status := range statuses {
				e.waits.wake(runKey{org, id}, status)
			}
		}
	}
}
