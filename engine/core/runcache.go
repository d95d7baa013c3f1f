package core

import (
	"container/list"
	"sync"

	"github.com/svcflow/svcflow/engine/expr"
)

// runCache keeps the in-memory state of runs this process started or handed back, by job
// id, so that when this process claims the job next it starts from memory instead of
// reading the run and its context again. An entry is valid only for the claim that follows
// it directly: it records the job's claim count when it was stored, and a job claimed by
// another process in between comes back with a higher count (see take). It holds at most
// max entries and about maxBytes of them (stateSize), dropping the least recently stored.
type runCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int
	ll       *list.List // of *cacheEntry, most recent at the front
	m        map[int64]*list.Element
}

type cacheEntry struct {
	jobID  int64
	claims int64 // the job's Claims when stored; valid for a claim numbered claims+1
	st     *runState
	size   int
}

func newRunCache(max, maxBytes int) *runCache {
	return &runCache{max: max, maxBytes: maxBytes, ll: list.New(), m: map[int64]*list.Element{}}
}

// stateSize is about what st holds in memory: its input twice (the text and its decoded
// value), a value kept as JSON text (a large input, a step's large output) by its length,
// any other value as 4 KiB, and 2 KiB for the run itself.
func stateSize(st *runState) int {
	n := 2<<10 + 2*len(st.run.Input)
	for k, v := range st.vars {
		switch x := v.(type) {
		case *expr.Lazy:
			n += len(x.Raw())
		default:
			if k != "input" {
				n += 4 << 10
			}
		}
	}
	return n
}

// put stores st for the claim of jobID that follows claims.
func (c *runCache) put(jobID, claims int64, st *runState) {
	size := stateSize(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[jobID]; ok {
		c.bytes -= c.ll.Remove(el).(*cacheEntry).size
	}
	c.m[jobID] = c.ll.PushFront(&cacheEntry{jobID: jobID, claims: claims, st: st, size: size})
	c.bytes += size
	for c.ll.Len() > c.max || c.bytes > c.maxBytes && c.ll.Len() > 1 {
		old := c.ll.Remove(c.ll.Back()).(*cacheEntry)
		delete(c.m, old.jobID)
		c.bytes -= old.size
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
	c.bytes -= ent.size
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
