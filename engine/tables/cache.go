package tables

import (
	"context"
	"slices"
	"sync"

	"github.com/svcflow/svcflow/engine/svctype"
)

// tableCache keeps custom-table declarations a step has read, so a custom-table step does
// not query the declaration on every run. Declarations are immutable once created (there is
// no route that alters or drops a table) but for their indexes, which only grow. Bounded:
// it is dropped whole past maxTables entries.
type tableCache struct {
	mu sync.RWMutex
	m  map[string]*svctype.Table
}

const maxTables = 4096

func (c *tableCache) get(orgID, name string) (*svctype.Table, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.m[orgID+"\x00"+name]
	return t, ok
}

func (c *tableCache) put(t *svctype.Table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxTables {
		c.m = map[string]*svctype.Table{}
	}
	c.m[t.OrgID+"\x00"+t.Name] = t
}

// forget drops a declaration, after its indexes changed. Another process's cache keeps its
// copy: that is safe, because writes read the indexes from the store, not from here, and a
// read that the cached copy shows no index for reads them again (tables.CheckRead).
func (c *tableCache) forget(orgID, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, orgID+"\x00"+name)
}

// cachedTables is the TableStore a step gets: its transaction, with declarations cached.
type cachedTables struct {
	svctype.TableStore
	cache *tableCache
}

func (t cachedTables) GetTable(ctx context.Context, orgID, name string) (*svctype.Table, error) {
	if tbl, ok := t.cache.get(orgID, name); ok {
		return tbl, nil
	}
	tbl, err := t.TableStore.GetTable(ctx, orgID, name)
	if err != nil {
		return nil, err
	}
	if tbl.OrgID == "" {
		tbl.OrgID = orgID
	}
	t.cache.put(tbl)
	return tbl, nil
}

// TableIndexes reads a table's indexes as stored now and keeps them in the cached
// declaration: a read that found no covering index in it (CheckRead) reads them again only
// until the index it needs is ready. Indexes only grow and become ready, so the newer list
// is never less true.
func (t cachedTables) TableIndexes(ctx context.Context, orgID, name string) ([]svctype.TableIndex, error) {
	defs, err := t.TableStore.TableIndexes(ctx, orgID, name)
	if err != nil {
		return nil, err
	}
	if tbl, ok := t.cache.get(orgID, name); ok {
		fresh := *tbl
		fresh.Indexes = slices.Clone(defs)
		t.cache.put(&fresh)
	}
	return defs, nil
}
