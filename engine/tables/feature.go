package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Tables is the custom-tables feature: the operations of the /custom-tables routes, the
// custom-table step kind and the builds of indexes, over the feature's Store.
type Tables struct {
	core  *core.Core
	store Store
	cache tableCache
}

// New returns the custom-tables feature over st; Register plugs it into c.
func New(c *core.Core, st Store) *Tables { return &Tables{core: c, store: st} }

// Register puts on the run core what custom tables are to it: the custom-table step kind
// (unless the core's Environment has a kind of that name already), the job that builds an
// index an upsert declared, and the hook that gives every step's call its tables
// (StepCall.Tables: the step's transaction, or the store for a read run ahead of it, with
// declarations cached).
func (f *Tables) Register(c *core.Core) {
	if _, taken := c.Environment().Lookup(CustomTable); !taken {
		c.Environment().RegisterStepKind(CustomTable, StepKind())
	}
	c.RegisterJob(svctype.JobBuildIndex, f.buildIndexJob)
	c.OnStepCall(f.bindStep)
}

// bindStep gives a step's call its tables (core.StepCallHook): stx, or outside a
// transaction the feature's store, with declarations cached.
func (f *Tables) bindStep(stx storage.Tx, call *svctype.StepCall) {
	if stx == nil {
		call.Tables = cachedTables{TableStore: f.store, cache: &f.cache}
		return
	}
	call.Tables = cachedTables{TableStore: stx, cache: &f.cache}
}

// CreateTable declares a custom table, with indexes on the column sets given.
func (f *Tables) CreateTable(ctx context.Context, orgID, name string, fields map[string]string, indexes ...[]string) (*svctype.Table, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	ps := Check(name, fields)
	ps = append(ps, CheckIndexes("/indexes", fields, nil, indexes)...)
	if err := tableProblems(ps); err != nil {
		return nil, err
	}
	return Create(ctx, f.store, orgID, name, fields, indexes, f.core.Now())
}

func tableProblems(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	ve := &core.ValidationError{}
	for _, p := range ps {
		ve.Problems = append(ve.Problems, core.Problem{Pointer: p.Pointer, Message: p.Message})
	}
	return ve
}

// IndexBuildBatch is how many rows an index build writes entries for in one transaction:
// small enough that writes to the table wait for it only briefly.
const IndexBuildBatch = 2000

// AddTableIndex adds an index on cols to an existing table and builds it over the table's
// rows, a batch a transaction, while writes go on; it returns the table once the index is
// ready. ErrNotFound without the table, ErrConflict when an index on the same columns is
// ready; one still building (a build that stopped) is built again, from the start.
func (f *Tables) AddTableIndex(ctx context.Context, orgID, table string, cols []string) (*svctype.Table, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	t, err := f.store.GetTable(ctx, orgID, table)
	if err != nil {
		return nil, err
	}
	key := svctype.IndexKey(cols)
	i := slices.IndexFunc(t.Indexes, func(ix svctype.TableIndex) bool { return ix.Key() == key })
	switch {
	case i >= 0 && t.Indexes[i].State == svctype.IndexReady:
		return nil, fmt.Errorf("table %q has an index on %v: %w", table, t.Indexes[i].Columns, core.ErrConflict)
	case i < 0:
		if err := tableProblems(CheckIndex("/columns", t.Fields, t.Indexes, cols)); err != nil {
			return nil, err
		}
		if err := f.store.AddTableIndex(ctx, orgID, table, svctype.TableIndex{Columns: cols, CreatedAt: f.core.Now()}); err != nil {
			return nil, err
		}
	}
	f.cache.forget(orgID, table)
	if err := BuildIndex(ctx, f.store, orgID, table, key, IndexBuildBatch); err != nil {
		return nil, err
	}
	f.cache.forget(orgID, table)
	return f.store.GetTable(ctx, orgID, table)
}

// ListTables pages an organization's custom tables.
func (f *Tables) ListTables(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Table], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Table]{}, err
	}
	return f.store.ListTables(ctx, orgID, opts)
}

// ReadRows returns a table's rows matching where (column -> value), at most limit.
func (f *Tables) ReadRows(ctx context.Context, orgID, table string, where map[string]any, limit int) ([]svctype.Row, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if _, err := f.store.GetTable(ctx, orgID, table); err != nil {
		return nil, err
	}
	return f.store.ReadRows(ctx, orgID, table, where, limit)
}

// ListRows pages a table's rows matching where (column -> value), oldest first: the rows
// route. ErrNotFound when the organization has no such table; a *ScanRefusedError (a
// core.ValidationError with code scan_refused) when no index serves where, the table holds
// more than ScanThreshold rows and scan is false.
func (f *Tables) ListRows(ctx context.Context, orgID, table string, where map[string]any, scan bool, opts svctype.ListOptions) (svctype.Page[svctype.Row], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	t, err := f.store.GetTable(ctx, orgID, table)
	if err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	if err := scanRefused(CheckRead(ctx, f.store, t, where, scan)); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	return f.store.ListRows(ctx, orgID, table, where, opts)
}

// buildIndexJob builds an index an upsert declared on PostgreSQL (svctype.JobBuildIndex):
// after the writes in flight, batch by batch, then ready. A failure leaves the job to be
// claimed again when its lease lapses; the build starts over, which writes nothing twice.
func (f *Tables) buildIndexJob(ctx context.Context, job *svctype.Job) error {
	var p svctype.BuildIndexPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		f.core.Logger().Error("dropping an index build job whose payload does not decode", "job_id", job.ID, "err", err)
	} else if err := BuildIndex(ctx, f.store, job.OrgID, p.Table, p.Key, IndexBuildBatch); err != nil && !errors.Is(err, core.ErrNotFound) {
		return err
	}
	f.cache.forget(job.OrgID, p.Table)
	return f.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error { return Tx(stx).CompleteJob(ctx, job) })
}

// scanRefused turns a refused scan into the ValidationError hosts answer 422 scan_refused for.
func scanRefused(err error) error {
	var se *ScanRefusedError
	if errors.As(err, &se) {
		return &core.ValidationError{Code: "scan_refused", Problems: []core.Problem{{Pointer: "/where", Message: se.Error()}}}
	}
	return err
}

// UpdateRows merges set into the rows matching where (integrators advance exception rows
// this way) and returns how many it changed. Only declared columns may be set. Setting a key
// column of an upserted row moves the row to its new key; ErrConflict, with nothing changed,
// when two upserted rows would then share a key.
// Like ListRows, a where no index serves on a large table needs scan.
func (f *Tables) UpdateRows(ctx context.Context, orgID, table string, where, set map[string]any, scan bool) (int, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return 0, err
	}
	t, err := f.store.GetTable(ctx, orgID, table)
	if err != nil {
		return 0, err
	}
	if len(set) == 0 {
		return 0, core.Invalid("/set", "required: at least one column to set")
	}
	_, dropped := Split(t, set)
	if len(dropped) > 0 {
		return 0, core.Invalid("/set", "columns %v are not declared by table %q", dropped, table)
	}
	if err := scanRefused(CheckRead(ctx, f.store, t, where, scan)); err != nil {
		return 0, err
	}
	return f.store.UpdateRows(ctx, orgID, table, where, set)
}
