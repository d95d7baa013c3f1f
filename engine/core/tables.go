package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

// CreateTable declares a custom table, with indexes on the column sets given.
func (e *Core) CreateTable(ctx context.Context, orgID, name string, fields map[string]string, indexes ...[]string) (*svctype.Table, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	ps := tables.Check(name, fields)
	ps = append(ps, tables.CheckIndexes("/indexes", fields, nil, indexes)...)
	if err := tableProblems(ps); err != nil {
		return nil, err
	}
	return tables.Create(ctx, e.store, orgID, name, fields, indexes, e.now())
}

func tableProblems(ps []tables.Problem) error {
	if len(ps) == 0 {
		return nil
	}
	ve := &ValidationError{}
	for _, p := range ps {
		ve.Problems = append(ve.Problems, Problem{Pointer: p.Pointer, Message: p.Message})
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
func (e *Core) AddTableIndex(ctx context.Context, orgID, table string, cols []string) (*svctype.Table, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	t, err := e.store.GetTable(ctx, orgID, table)
	if err != nil {
		return nil, err
	}
	key := svctype.IndexKey(cols)
	i := slices.IndexFunc(t.Indexes, func(ix svctype.TableIndex) bool { return ix.Key() == key })
	switch {
	case i >= 0 && t.Indexes[i].State == svctype.IndexReady:
		return nil, fmt.Errorf("table %q has an index on %v: %w", table, t.Indexes[i].Columns, ErrConflict)
	case i < 0:
		if err := tableProblems(tables.CheckIndex("/columns", t.Fields, t.Indexes, cols)); err != nil {
			return nil, err
		}
		if err := e.store.AddTableIndex(ctx, orgID, table, svctype.TableIndex{Columns: cols, CreatedAt: e.now()}); err != nil {
			return nil, err
		}
	}
	e.tables.forget(orgID, table)
	if err := tables.BuildIndex(ctx, e.store, orgID, table, key, IndexBuildBatch); err != nil {
		return nil, err
	}
	e.tables.forget(orgID, table)
	return e.store.GetTable(ctx, orgID, table)
}

// ListTables pages an organization's custom tables.
func (e *Core) ListTables(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Table], error) {
	if err := CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Table]{}, err
	}
	return e.store.ListTables(ctx, orgID, opts)
}

// ReadRows returns a table's rows matching where (column -> value), at most limit.
func (e *Core) ReadRows(ctx context.Context, orgID, table string, where map[string]any, limit int) ([]svctype.Row, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	if _, err := e.store.GetTable(ctx, orgID, table); err != nil {
		return nil, err
	}
	return e.store.ReadRows(ctx, orgID, table, where, limit)
}

// ListRows pages a table's rows matching where (column -> value), oldest first: the rows
// route. ErrNotFound when the organization has no such table; a *tables.ScanRefusedError
// (a ValidationError with code scan_refused) when no index serves where, the table holds
// more than tables.ScanThreshold rows and scan is false.
func (e *Core) ListRows(ctx context.Context, orgID, table string, where map[string]any, scan bool, opts svctype.ListOptions) (svctype.Page[svctype.Row], error) {
	if err := CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	t, err := e.store.GetTable(ctx, orgID, table)
	if err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	if err := scanRefused(tables.CheckRead(ctx, e.store, t, where, scan)); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	return e.store.ListRows(ctx, orgID, table, where, opts)
}

// buildIndexJob builds an index an upsert declared on PostgreSQL (svctype.JobBuildIndex):
// after the writes in flight, batch by batch, then ready. A failure leaves the job to be
// claimed again when its lease lapses; the build starts over, which writes nothing twice.
func (e *Core) buildIndexJob(ctx context.Context, job *svctype.Job) error {
	var p svctype.BuildIndexPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		e.log.Error("dropping an index build job whose payload does not decode", "job_id", job.ID, "err", err)
	} else if err := tables.BuildIndex(ctx, e.store, job.OrgID, p.Table, p.Key, IndexBuildBatch); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	e.tables.forget(job.OrgID, p.Table)
	return e.store.InTx(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.CompleteJob(ctx, job) })
}

// scanRefused turns a refused scan into the ValidationError hosts answer 422 scan_refused for.
func scanRefused(err error) error {
	var se *tables.ScanRefusedError
	if errors.As(err, &se) {
		return &ValidationError{Code: "scan_refused", Problems: []Problem{{Pointer: "/where", Message: se.Error()}}}
	}
	return err
}

// UpdateRows merges set into the rows matching where (integrators advance exception rows
// this way) and returns how many it changed. Only declared columns may be set. Setting a key
// column of an upserted row moves the row to its new key; ErrConflict, with nothing changed,
// when two upserted rows would then share a key.
// Like ListRows, a where no index serves on a large table needs scan.
func (e *Core) UpdateRows(ctx context.Context, orgID, table string, where, set map[string]any, scan bool) (int, error) {
	if err := CheckOrg(orgID); err != nil {
		return 0, err
	}
	t, err := e.store.GetTable(ctx, orgID, table)
	if err != nil {
		return 0, err
	}
	if len(set) == 0 {
		return 0, Invalid("/set", "required: at least one column to set")
	}
	_, dropped := tables.Split(t, set)
	if len(dropped) > 0 {
		return 0, Invalid("/set", "columns %v are not declared by table %q", dropped, table)
	}
	if err := scanRefused(tables.CheckRead(ctx, e.store, t, where, scan)); err != nil {
		return 0, err
	}
	return e.store.UpdateRows(ctx, orgID, table, where, set)
}
