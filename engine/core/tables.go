package core

import (
	"context"

	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

// CreateTable declares a custom table.
func (e *Core) CreateTable(ctx context.Context, orgID, name string, fields map[string]string) (*svctype.Table, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	if ps := tables.Check(name, fields); len(ps) > 0 {
		ve := &ValidationError{}
		for _, p := range ps {
			ve.Problems = append(ve.Problems, Problem{Pointer: p.Pointer, Message: p.Message})
		}
		return nil, ve
	}
	return tables.Create(ctx, e.store, orgID, name, fields, e.now())
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
// route. ErrNotFound when the organization has no such table.
func (e *Core) ListRows(ctx context.Context, orgID, table string, where map[string]any, opts svctype.ListOptions) (svctype.Page[svctype.Row], error) {
	if err := CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	if _, err := e.store.GetTable(ctx, orgID, table); err != nil {
		return svctype.Page[svctype.Row]{}, err
	}
	return e.store.ListRows(ctx, orgID, table, where, opts)
}

// UpdateRows merges set into the rows matching where (integrators advance exception rows
// this way) and returns how many it changed. Only declared columns may be set. Setting a key
// column of an upserted row moves the row to its new key; ErrConflict, with nothing changed,
// when two upserted rows would then share a key.
func (e *Core) UpdateRows(ctx context.Context, orgID, table string, where, set map[string]any) (int, error) {
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
	return e.store.UpdateRows(ctx, orgID, table, where, set)
}
