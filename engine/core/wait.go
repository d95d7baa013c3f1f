package core

import (
	"context"
	"encoding/json"
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

// waiter is one caller waiting for a run's status to differ from last. Each wake sends
// the status the waker committed or read, or "" when it does not know it (a notification
// from another process); the buffer of one keeps the first wake not yet taken.
type waiter struct {
	ch   chan wake
	last svctype.RunStatus
}

// wake is what a waiter is woken with: the status, and from the commit that ended the run
// in this process, the run as that commit wrote it (nil from any other waker).
type wake struct {
	status svctype.RunStatus
	run    *svctype.Run
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
	w := &waiter{ch: make(chan wake, 1), last: last}
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
// last saw another status, handing them the status (and run, when the waker has it).
func (h *waitHub) wake(k runKey, status svctype.RunStatus, run *svctype.Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters[k] {
		if status != "" && status == w.last {
			continue
		}
		select {
		case w.ch <- wake{status, run}:
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
	e.waits.wake(runKey{orgID, runID}, "", nil)
}

// runChangedTo is RunChanged by a commit that knows the run it committed: a waiter woken
// with a final status answers with it, without reading the run again (a final status
// never changes; a paused run may be running again by the time its waiter looks), and
// ExecuteAndWaitStatus makes its status document from the run handed with it. The run is
// copied when someone waits for it: the caller's may change after.
func (e *Core) runChangedTo(run *svctype.Run) {
	k := runKey{run.OrgID, run.ID}
	var ended *svctype.Run
	if run.Status.Terminal() && e.waits.has(k) {
		ended = storedRun(run)
	}
	e.waits.wake(k, run.Status, ended)
}

// storedRun is a copy of the fields of run a status document shows, its times as the
// store keeps them (UTC, to the microsecond), so that a document made from it is the one a
// read of the run makes.
func storedRun(run *svctype.Run) *svctype.Run {
	r := svctype.Run{
		OrgID: run.OrgID, ID: run.ID, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion,
		Status: run.Status, Reason: run.Reason, Definition: run.Definition,
		CreatedAt: storedTime(run.CreatedAt), UpdatedAt: storedTime(run.UpdatedAt),
	}
	if run.FinishedAt != nil {
		t := storedTime(*run.FinishedAt)
		r.FinishedAt = &t
	}
	return &r
}

func storedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// has reports whether anyone waits for k.
func (h *waitHub) has(k runKey) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[k]) > 0
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
	// The deadline runs from before the waiter is registered: whoever sees it waiting
	// (Waiting) may count on its deadline too, on an injected clock as on the wall's.
	deadline := e.after(d)
	// Registered before the first read, so a commit between the read and the wait still
	// wakes this waiter.
	e.watchOnce.Do(e.watchRemote)
	w := e.watch(k, last)
	defer e.waits.remove(k, w)
	status, _, err := e.await(ctx, k, w, deadline, true)
	return status, err
}

// watch registers a waiter of k and starts the poll when it is the first. It makes no
// call to the store (ExecuteAndWait calls it inside a transaction): the caller has
// subscribed to other processes' changes first (watchRemote).
func (e *Core) watch(k runKey, last svctype.RunStatus) *waiter {
	w, startPoll := e.waits.add(k, last)
	if startPoll {
		go e.pollWaited()
	}
	return w
}

// await waits until deadline for w's run to leave w.last. read says whether to read the status
// first: false only when the waiter was registered before the run's status could change
// (ExecuteAndWait). A wake that hands a final status is the answer, with the run its
// commit wrote when the waker had it (runChangedTo); any other wake is followed by a read.
func (e *Core) await(ctx context.Context, k runKey, w *waiter, deadline <-chan time.Time, read bool) (svctype.RunStatus, *svctype.Run, error) {
	status := w.last
	for {
		if read {
			var err error
			status, err = e.runStatus(ctx, k.org, k.run)
			if err != nil || status != w.last {
				return status, nil, err
			}
		}
		read = true
		select {
		case woke := <-w.ch:
			if woke.status != "" && woke.status != w.last && woke.status.Terminal() {
				return woke.status, woke.run, nil
			}
		case <-deadline:
			return status, nil, nil
		case <-ctx.Done():
			return status, nil, ctx.Err()
		}
	}
}

// ExecuteAndWait is Execute followed by WaitRun(run, running, d), without WaitRun's reads
// in the common case: the waiter is registered inside the transaction that starts the run,
// so no commit can change the run before it waits, and the commit that ends the run hands
// it the final status. It returns the run as Execute did and the status the wait ended on.
// A run the call did not start (an Idempotency-Key's earlier run) is waited for as WaitRun
// does.
func (e *Core) ExecuteAndWait(ctx context.Context, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions, d time.Duration) (*svctype.Run, svctype.RunStatus, error) {
	run, status, _, err := e.executeAndWait(ctx, orgID, workflowID, input, opts, d)
	return run, status, err
}

// ExecuteAndWaitStatus is ExecuteAndWait answered with the run's status document, as
// RunStatusWith(sopts) reads it when the wait ends. When the commit that ended the run in
// this process woke the wait, the document is made from the run that commit wrote, and the
// run is not read again. It returns the run as Execute did (nil when Execute failed) and
// the document (nil with an error).
func (e *Core) ExecuteAndWaitStatus(ctx context.Context, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions, d time.Duration, sopts StatusOptions) (*svctype.Run, *RunStatusDoc, error) {
	run, _, ended, err := e.executeAndWait(ctx, orgID, workflowID, input, opts, d)
	if err != nil {
		return run, nil, err
	}
	var doc *RunStatusDoc
	if ended != nil {
		doc, err = e.statusDoc(ctx, ended, sopts)
	} else {
		doc, err = e.RunStatusWith(ctx, orgID, run.ID, sopts)
	}
	return run, doc, err
}

// executeAndWait is ExecuteAndWait, also returning the run as the commit that ended it
// wrote it when that commit woke the wait (nil otherwise).
func (e *Core) executeAndWait(ctx context.Context, orgID, workflowID string, input json.RawMessage, opts ExecuteOptions, d time.Duration) (*svctype.Run, svctype.RunStatus, *svctype.Run, error) {
	var (
		k runKey
		w *waiter
	)
	opts.started = func(run *svctype.Run) {
		if w != nil { // the transaction ran again
			e.waits.remove(k, w)
		}
		k = runKey{orgID, run.ID}
		w = e.watch(k, svctype.RunRunning)
	}
	defer func() {
		if w != nil {
			e.waits.remove(k, w)
		}
	}()
	// Subscribed before the transaction: the first subscription waits for LISTEN.
	e.watchOnce.Do(e.watchRemote)
	d = min(d, MaxWait)
	// The deadline runs from before the transaction registers the waiter: whoever sees
	// the run waited for (Waiting) may count on its deadline too. A wait of ?wait=300ms
	// answers 300 ms after the request came, the transaction's time included.
	var deadline <-chan time.Time
	if d > 0 {
		deadline = e.after(d)
	}
	run, err := e.Execute(ctx, orgID, workflowID, input, opts)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case run.Status != svctype.RunRunning || d <= 0:
		return run, run.Status, nil, nil
	case w == nil || k.run != run.ID:
		status, err := e.WaitRun(ctx, orgID, run.ID, svctype.RunRunning, d)
		return run, status, nil, err
	}
	status, ended, err := e.await(ctx, k, w, deadline, false)
	return run, status, ended, err
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
				e.waits.wake(runKey{org, id}, status, nil)
			}
		}
	}
}
