package core

import (
	"container/list"
	"sync"
)

// runCache keeps the in-memory state of runs this process started or handed back, by job
// id, so that when this process claims the job next it starts from memory instead of
// reading the run and its context again. An entry is valid only for the claim that follows
// it directly: it records the job's claim count when it was stored, and a job claimed by
// another process in between comes back with a higher count (see take). It holds at most
// max entries, dropping the least recently stored.
type runCache struct {
	mu  sync.Mutex
	max int
	ll  *list.List // of *cacheEntry, most recent at the front
	m   map[int64]*list.Element
}

type cacheEntry struct {
	jobID  int64
	claims int64 // the job's Claims when stored; valid for a claim numbered claims+1
	st     *runState
}

func newRunCache(max int) *runCache {
	return &runCache{max: max, ll: list.New(), m: map[int64]*list.Element{}}
}

// put stores st for the claim of jobID that follows claims.
func (c *runCache) put(jobID, claims int64, st *runState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[jobID]; ok {
		c.ll.Remove(el)
	}
	c.m[jobID] = c.ll.PushFront(&cacheEntry{jobID: jobID, claims: claims, st: st})
	for c.ll.Len() > c.max {
		old := c.ll.Remove(c.ll.Back()).(*cacheEntry)
		delete(c.m, old.jobID)
	}
}

// take removes and returns the state stored for jobID when claims is the claim right after
// the one it was stored at; otherwise the state is stale (or absent) and take returns nil.
func (c *runCache) take(jobID, claims int64) *runState {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[jobID]
	if !ok {
		return nil
	}
	c.ll.Remove(el)
	delete(c.m, jobID)
	ent := el.Value.(*cacheEntry)
	if ent.claims+1 != claims {
		return nil
	}
	return ent.st
}

func (c *runCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
