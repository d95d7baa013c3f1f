package core

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
)

// defCache keeps parsed definitions (and their compiled conditions) of recently executed
// workflow versions, bounded by entry count, so a busy worker parses each version once and a
// long queue of runs costs no memory beyond it.
type defCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[string]*list.Element
}

type defEntry struct {
	key   string
	def   *svctype.Definition
	conds sync.Map // *svctype.Step or *svctype.Definition -> *expr.Condition
}

func newDefCache(max int) *defCache {
	return &defCache{max: max, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *defCache) get(key string) (*defEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*defEntry), true
	}
	return nil, false
}

func (c *defCache) put(ent *defEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[ent.key]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.items[ent.key] = c.ll.PushFront(ent)
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*defEntry).key)
	}
}

func (c *defCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// entry returns the parsed definition of a run's workflow version.
func (e *Core) entry(run *svctype.Run) (*defEntry, error) {
	key := fmt.Sprintf("%s/%s@%d", run.OrgID, run.WorkflowID, run.WorkflowVersion)
	if ent, ok := e.defs.get(key); ok {
		return ent, nil
	}
	def, err := svctype.ParseDefinition(run.Definition)
	if err != nil {
		return nil, fmt.Errorf("run %s: stored definition: %w", run.ID, err)
	}
	ent := &defEntry{key: key, def: def}
	e.defs.put(ent)
	return ent, nil
}

func (e *Core) definition(run *svctype.Run) (*svctype.Definition, error) {
	ent, err := e.entry(run)
	if err != nil {
		return nil, err
	}
	return ent.def, nil
}

// condition returns the compiled form of cond, compiled once per cached definition.
func (ent *defEntry) condition(owner any, cond any) (*expr.Condition, error) {
	if c, ok := ent.conds.Load(owner); ok {
		return c.(*expr.Condition), nil
	}
	c, err := expr.Compile(cond)
	if err != nil {
		return nil, err
	}
	ent.conds.Store(owner, c)
	return c, nil
}
