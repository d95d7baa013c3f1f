package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// Custom tables and their rows. A row's data is one JSON object; rows written by UpsertRow
// also carry key_hash, the identity of their key columns and values, under a unique index,
// and key_columns, the key columns themselves, so that a patch of one recomputes the hash.

func (q *querier) CreateTable(ctx context.Context, t *svctype.Table) error {
	const op = "create table"
	t.CreatedAt = orNow(t.CreatedAt, q.now())
	fields, err := json.Marshal(t.Fields)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	m := &tableModel{OrgID: t.OrgID, Name: t.Name, Fields: fields, CreatedAt: t.CreatedAt}
	if len(t.Indexes) > 0 {
		ixs, err := json.Marshal(t.Indexes)
		if err != nil {
			return fmt.Errorf("store: %s: %w", op, err)
		}
		m.Indexes = ptr(string(ixs))
	}
	res, err := q.w.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return wrap(op, err)
	}
	return checkAffected(op, res, conflict)
}

func (q *querier) GetTable(ctx context.Context, orgID, name string) (*svctype.Table, error) {
	var m tableModel
	err := q.r.NewSelect().Model(&m).Where("org_id = ? AND name = ?", orgID, name).Scan(ctx)
	if err != nil {
		return nil, wrap("get table", err)
	}
	return m.toTable()
}

// ListTables pages an org's tables by name.
func (q *querier) ListTables(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Table], error) {
	return listByName(ctx, q, "list tables", orgID, "name", opts,
		func(m *tableModel) string { return m.Name },
		func(m *tableModel) (svctype.Table, error) {
			t, err := m.toTable()
			if err != nil {
				return svctype.Table{}, err
			}
			return *t, nil
		})
}

// InsertRow appends a row and its index entries; ErrNotFound when the org has no such table.
func (q *querier) InsertRow(ctx context.Context, orgID, table string, row map[string]any) (svctype.Row, error) {
	const op = "insert row"
	m, out, err := newRow(orgID, table, row, q.now())
	if err != nil {
		return out, fmt.Errorf("store: %s: %w", op, err)
	}
	err = q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		tx := q.within(db)
		if q.dialect == dialectPostgres {
			return tx.pgInsertRow(ctx, db, m, out.Data)
		}
		defs, err := tx.indexDefs(ctx, db, orgID, table)
		if err != nil {
			return err
		}
		entries, err := appendEntries(nil, orgID, table, m.ID, defs, out.Data)
		if err != nil {
			return err
		}
		if st := tx.fast(); st != nil {
			_, err = tx.exec(ctx, st.insertRow, m.ID, m.OrgID, m.TableName, nil, nil, string(m.Data),
				sqliteTime(m.CreatedAt), sqliteTime(m.UpdatedAt))
		} else {
			_, err = db.NewInsert().Model(m).Exec(ctx)
		}
		if err != nil {
			return err
		}
		return tx.insertEntries(ctx, db, entries)
	})
	if err != nil {
		return svctype.Row{}, wrap(op, err)
	}
	return out, nil
}

// UpsertRow inserts row, or replaces the data of the row with the same values for keys;
// ErrNotFound when the org has no such table.
func (q *querier) UpsertRow(ctx context.Context, orgID, table string, keys []string, row map[string]any) (svctype.Row, bool, error) {
	const op = "upsert row"
	if len(keys) == 0 {
		return svctype.Row{}, false, fmt.Errorf("store: %s: no key columns", op)
	}
	m, out, err := newRow(orgID, table, row, q.now())
	if err != nil {
		return out, false, fmt.Errorf("store: %s: %w", op, err)
	}
	hash, err := hashPairs(keys, out.Data, true)
	if err != nil {
		return svctype.Row{}, false, fmt.Errorf("store: %s: %w", op, err)
	}
	kc, err := json.Marshal(keys)
	if err != nil {
		return svctype.Row{}, false, fmt.Errorf("store: %s: %w", op, err)
	}
	m.KeyHash, m.KeyColumns = &hash, ptr(string(kc))
	var (
		id      string
		created time.Time
	)
	err = q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		tx := q.within(db)
		var (
			defs  []svctype.TableIndex
			fresh []indexEntryModel
			err   error
		)
		written := false
		if q.dialect == dialectPostgres {
			defs, id, created, err = tx.pgUpsertRow(ctx, db, m, keys, out.Data)
			written = true
		} else if defs, fresh, err = tx.upsertDefs(ctx, db, m, keys, out.Data); err != nil {
			return err
		} else if st := tx.fast(); st != nil {
			var createdAt any
			err = tx.queryRow(ctx, st.upsertRow, m.ID, m.OrgID, m.TableName, hash, *m.KeyColumns, string(m.Data),
				sqliteTime(m.CreatedAt), sqliteTime(m.UpdatedAt)).Scan(&id, &createdAt)
			if err == nil {
				created, err = sqliteScannedTime(createdAt)
			}
		} else {
			err = db.NewInsert().Model(m).
				On("CONFLICT (org_id, table_name, key_hash) DO UPDATE").
				Set("data = EXCLUDED.data").
				Set("key_columns = EXCLUDED.key_columns").
				Set("updated_at = EXCLUDED.updated_at").
				Returning("id, created_at").
				Scan(ctx, &id, &created)
		}
		if err != nil {
			return err
		}
		if id == m.ID {
			if written {
				return nil
			}
			return tx.insertEntries(ctx, db, fresh)
		}
		// An update: the entries of indexes within the key columns cannot have changed.
		if slices.ContainsFunc(defs, func(d svctype.TableIndex) bool { return !within(d.Columns, keys) }) {
			return tx.replaceEntries(ctx, db, orgID, table, defs, map[string]map[string]any{id: out.Data})
		}
		return nil
	})
	if err != nil {
		return svctype.Row{}, false, wrap(op, err)
	}
	// The conflicting row keeps its id, so a fresh id back means a fresh row.
	inserted := id == m.ID
	out.ID = id
	out.CreatedAt = created.UTC()
	return out, inserted, nil
}

// upsertDefs reads the table's declarations for an upsert, declaring its key index when
// missing, and returns them and a fresh row's entries (its id is m.ID).
func (q *querier) upsertDefs(ctx context.Context, db bun.IDB, m *rowModel, keys []string, data map[string]any) ([]svctype.TableIndex, []indexEntryModel, error) {
	defs, err := q.indexDefs(ctx, db, m.OrgID, m.TableName)
	if err != nil {
		return nil, nil, err
	}
	if defs, err = q.ensureKeyIndex(ctx, db, m.OrgID, m.TableName, keys, defs); err != nil {
		return nil, nil, err
	}
	fresh, err := appendEntries(nil, m.OrgID, m.TableName, m.ID, defs, data)
	return defs, fresh, err
}

// pgInsertRow writes a new row and its entries in one statement, guarded by the
// declarations the Store knows when this transaction has read none (pgdecls.go), and
// again after reading them when the guard refused.
func (q *querier) pgInsertRow(ctx context.Context, db bun.IDB, m *rowModel, data map[string]any) error {
	defs, guard, err := q.writeDefs(ctx, db, m.OrgID, m.TableName)
	if err != nil {
		return err
	}
	entries, err := appendEntries(nil, m.OrgID, m.TableName, m.ID, defs, data)
	if err != nil {
		return err
	}
	_, _, err = q.pgWriteRow(ctx, m, false, entries, guard)
	if staleGuard(guard, err) {
		if defs, err = q.indexDefs(ctx, db, m.OrgID, m.TableName); err != nil {
			return err
		}
		if entries, err = appendEntries(nil, m.OrgID, m.TableName, m.ID, defs, data); err != nil {
			return err
		}
		_, _, err = q.pgWriteRow(ctx, m, false, entries, nil)
	} else if err == nil && guard != nil {
		q.guardHeld(m.OrgID, m.TableName, defs)
	}
	return err
}

// pgUpsertRow is pgInsertRow for an upsert: it returns the declarations, and the id and
// creation time of the row written. Declarations without the key index are read, and the
// index declared (ensureKeyIndex), as before.
func (q *querier) pgUpsertRow(ctx context.Context, db bun.IDB, m *rowModel, keys []string, data map[string]any) ([]svctype.TableIndex, string, time.Time, error) {
	defs, guard, err := q.writeDefs(ctx, db, m.OrgID, m.TableName)
	if err != nil {
		return nil, "", time.Time{}, err
	}
	var fresh []indexEntryModel
	if guard != nil && hasKeyIndex(defs, keys) {
		fresh, err = appendEntries(nil, m.OrgID, m.TableName, m.ID, defs, data)
		if err != nil {
			return nil, "", time.Time{}, err
		}
		id, created, err := q.pgWriteRow(ctx, m, true, fresh, guard)
		if !staleGuard(guard, err) {
			if err == nil {
				q.guardHeld(m.OrgID, m.TableName, defs)
			}
			return defs, id, created, err
		}
	}
	if defs, fresh, err = q.upsertDefs(ctx, db, m, keys, data); err != nil {
		return nil, "", time.Time{}, err
	}
	id, created, err := q.pgWriteRow(ctx, m, true, fresh, nil)
	return defs, id, created, err
}

// within reports whether every one of cols is in set.
func within(cols, set []string) bool {
	for _, c := range cols {
		if !slices.Contains(set, c) {
			return false
		}
	}
	return true
}

// newRow is the model of row, created and updated at t.
func newRow(orgID, table string, row map[string]any, t time.Time) (*rowModel, svctype.Row, error) {
	if row == nil {
		row = map[string]any{}
	}
	data, err := json.Marshal(row)
	if err != nil {
		return nil, svctype.Row{}, err
	}
	m := &rowModel{ID: newID(), OrgID: orgID, TableName: table, Data: data, CreatedAt: t, UpdatedAt: t}
	out, err := m.toRow()
	return m, out, err
}

// keyHash identifies a row by its key columns: the hex SHA-256 of the JSON of
// [[key, value], ...] in keys order, values passed through a JSON round trip first and
// numbers written in their canonical form (jsonnum.AppendKey) so that equal JSON values
// (1 and 1.0) hash alike, and two 30-digit numbers that differ hash apart.
func keyHash(keys []string, row map[string]any) (string, error) {
	return hashPairs(keys, row, false)
}

// hashPairs is keyHash; decoded says row came from a JSON decode already (a stored row's
// data), so its values need no round trip to be canonical.
func hashPairs(keys []string, row map[string]any, decoded bool) (string, error) {
	pairs := make([][2]any, len(keys))
	for i, k := range keys {
		pairs[i] = [2]any{k, row[k]}
	}
	var (
		canonical []byte
		err       error
	)
	if decoded {
		for i := range pairs {
			pairs[i][1] = canonicalNumbers(pairs[i][1])
		}
		canonical, err = json.Marshal(pairs)
	} else {
		_, canonical, err = normalizeJSON(pairs)
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// normalizeJSON returns v as encoding/json decodes it (numbers json.Number, kept as
// written; objects maps) and its canonical encoding (object keys sorted, numbers in
// canonical form).
func normalizeJSON(v any) (any, []byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	var n any
	if err := jsonnum.Unmarshal(b, &n); err != nil {
		return nil, nil, err
	}
	b, err = json.Marshal(canonicalNumbers(n))
	return n, b, err
}

// canonicalNumbers is v with every json.Number in its canonical form (jsonnum.AppendKey:
// 1.0 is 1, as a float64 wrote it before numbers were kept as text, so that keys hashed
// then hash alike now); maps and arrays are copied, v is not changed.
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return json.Number(jsonnum.AppendKey(nil, string(x)))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = canonicalNumbers(el)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = canonicalNumbers(el)
		}
		return out
	}
	return v
}

// ReadRows returns the rows whose columns equal every where entry as JSON values, oldest
// first, at most limit (no limit when limit <= 0). The filter runs in SQL.
func (q *querier) ReadRows(ctx context.Context, orgID, table string, where map[string]any, limit int) ([]svctype.Row, error) {
	const op = "read rows"
	if db := q.pgPrepared(); db != nil {
		rows, err := q.pgReadRows(ctx, db, orgID, table, where, limit)
		return rows, wrap(op, err)
	}
	if rows, ok, err := q.sqliteReadRows(ctx, orgID, table, where, limit); ok {
		return rows, wrap(op, err)
	}
	sel, err := q.selectRows(ctx, orgID, table, where)
	if err != nil {
		return nil, wrap(op, err)
	}
	if limit > 0 {
		sel = sel.Limit(int64(limit))
	}
	var ms []rowModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return nil, wrap(op, err)
	}
	rows := make([]svctype.Row, len(ms))
	for i := range ms {
		if rows[i], err = ms[i].toRow(); err != nil {
			return nil, wrap(op, err)
		}
	}
	return rows, nil
}

// ListRows pages the rows ReadRows returns, in its order; the cursor is the last row's
// (created_at, id), which no write changes.
func (q *querier) ListRows(ctx context.Context, orgID, table string, where map[string]any, opts svctype.ListOptions) (svctype.Page[svctype.Row], error) {
	const op = "list rows"
	var page svctype.Page[svctype.Row]
	limit := pageLimit(opts)
	var (
		at    time.Time
		after string
	)
	if opts.Cursor != "" {
		var err error
		if at, after, err = decodeTimeCursor(opts.Cursor); err != nil {
			return page, err
		}
	}
	sel, err := q.selectRows(ctx, orgID, table, where)
	if err != nil {
		return page, wrap(op, err)
	}
	if opts.Cursor != "" {
		sel = sel.Where("(tr.created_at > ? OR (tr.created_at = ? AND tr.id > ?))", at, at, after)
	}
	var ms []rowModel
	if err := sel.Limit(int64(limit+1)).Scan(ctx, &ms); err != nil {
		return page, wrap(op, err)
	}
	page, err = pageOf(ms, limit, func(m *rowModel) string { return encodeTimeCursor(m.CreatedAt, m.ID) }, (*rowModel).toRow)
	if err != nil {
		return page, wrap(op, err)
	}
	return page, nil
}

// selectRows selects an org's table's rows matching where, oldest first, through the
// table's best ready index for where when it has one.
func (q *querier) selectRows(ctx context.Context, orgID, table string, where map[string]any) (*bun.SelectQuery, error) {
	conds, err := q.readConditions(ctx, orgID, table, where)
	if err != nil {
		return nil, err
	}
	sel := q.r.NewSelect().Model((*rowModel)(nil)).
		Where(q.rowScope(conds), orgID, table).
		OrderExpr("tr.created_at ASC, tr.id ASC")
	for _, c := range conds {
		sel = sel.Where(c.expr, c.args...)
	}
	return sel, nil
}

// readConditions is where as conditions on table_rows (alias tr), led by the table's best
// ready index for where when it has one.
func (q *querier) readConditions(ctx context.Context, orgID, table string, where map[string]any) ([]condition, error) {
	conds, err := q.rowConditions(where)
	if err != nil {
		return nil, err
	}
	if len(where) > 0 {
		defs, err := q.readDefs(ctx, orgID, table, where)
		if err != nil {
			return nil, err
		}
		c, ok, err := indexCondition(orgID, table, defs, where)
		if err != nil {
			return nil, err
		}
		if ok {
			conds = append([]condition{c}, conds...)
		}
	}
	return conds, nil
}

// UpdateRows sets the top-level columns of set in every row matching where and returns
// how many rows matched. An upserted row whose key columns set changes gets the key hash of
// its new values; when that would give two rows one key, nothing changes and the error is
// ErrConflict (checked before the first write, so a caller's transaction stays usable).
func (q *querier) UpdateRows(ctx context.Context, orgID, table string, where, set map[string]any) (int, error) {
	const op = "update rows"
	conds, err := q.rowConditions(where)
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	if set == nil {
		set = map[string]any{} // JSON null, not {}: jsonb || null would make an array
	}
	patchValue, patch, err := normalizeJSON(set)
	if err != nil {
		return 0, fmt.Errorf("store: %s: %w", op, err)
	}
	patchMap, _ := patchValue.(map[string]any)
	t := q.now()
	var n int
	err = q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		tx := q.within(db)
		defs, err := tx.indexDefs(ctx, db, orgID, table)
		if err != nil {
			return err
		}
		if c, ok, err := indexCondition(orgID, table, defs, where); err != nil {
			return err
		} else if ok {
			conds = append([]condition{c}, conds...)
		}
		rekeyed, err := tx.rekeyRows(ctx, db, orgID, table, conds, patchMap)
		if err != nil {
			return err
		}
		// The rows' new data, when the patch sets a column some index covers.
		reindex := slices.ContainsFunc(defs, func(d svctype.TableIndex) bool {
			return slices.ContainsFunc(d.Columns, func(c string) bool { _, ok := patchMap[c]; return ok })
		})
		patched, err := tx.patchRows(ctx, db, orgID, table, conds, patch, patchMap, t, reindex)
		if err != nil {
			return err
		}
		n = len(patched)
		if reindex {
			if err := tx.replaceEntries(ctx, db, orgID, table, defs, patched); err != nil {
				return err
			}
		}
		return setKeyHashes(ctx, db, orgID, table, rekeyed)
	})
	if err != nil {
		return 0, wrap(op, err)
	}
	return n, nil
}

// patchRows merges patch into the data of the rows matching conds and returns them: their
// ids, with their new data when withData.
func (q *querier) patchRows(ctx context.Context, db bun.IDB, orgID, table string, conds []condition, patch []byte, patchMap map[string]any, t time.Time, withData bool) (map[string]map[string]any, error) {
	if q.dialect == dialectPostgres {
		// jsonb || jsonb is exactly a shallow merge.
		upd := db.NewUpdate().Model((*rowModel)(nil)).
			Set("data = data || ?::jsonb", string(patch)).
			Set("updated_at = ?", t).
			Where("org_id = ? AND table_name = ?", orgID, table)
		for _, c := range conds {
			upd = upd.Where(c.expr, c.args...)
		}
		cols := "id"
		if withData {
			cols = "id, data"
		}
		var ms []rowModel
		if err := upd.Returning(cols).Scan(ctx, &ms); err != nil {
			return nil, err
		}
		out := make(map[string]map[string]any, len(ms))
		for _, m := range ms {
			var data map[string]any
			if withData {
				if err := jsonnum.Unmarshal(m.Data, &data); err != nil {
					return nil, err
				}
			}
			out[m.ID] = data
		}
		return out, nil
	}
	// SQLite's json_patch is a recursive merge that deletes keys set to null, not a shallow
	// one: merge in Go, on the single writer, in the transaction.
	sel := db.NewSelect().Model((*rowModel)(nil)).Column("id", "data").
		Where(q.rowScope(conds), orgID, table)
	for _, c := range conds {
		sel = sel.Where(c.expr, c.args...)
	}
	var ms []rowModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]any, len(ms))
	for _, m := range ms {
		data, err := mergedData(m.Data, patchMap)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(data)
		if err != nil {
			return nil, err
		}
		_, err = db.NewUpdate().Model((*rowModel)(nil)).
			Set("data = ?", string(b)).
			Set("updated_at = ?", t).
			Where("org_id = ? AND table_name = ? AND id = ?", orgID, table, m.ID).
			Exec(ctx)
		if err != nil {
			return nil, err
		}
		if withData {
			// As stored: through JSON, as a read would give it.
			if data, _, err = normalizeMap(data); err != nil {
				return nil, err
			}
		}
		out[m.ID] = data
	}
	return out, nil
}

func normalizeMap(m map[string]any) (map[string]any, []byte, error) {
	v, b, err := normalizeJSON(m)
	if err != nil {
		return nil, nil, err
	}
	out, _ := v.(map[string]any)
	return out, b, nil
}

func mergedData(raw json.RawMessage, patch map[string]any) (map[string]any, error) {
	var data map[string]any
	if err := jsonnum.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range patch {
		data[k] = v
	}
	return data, nil
}

// rekey is a row whose key hash a patch changes.
type rekey struct {
	id, hash string
}

// rekeyRows finds the upserted rows matching conds whose key columns patch changes and
// computes their new key hashes. ErrConflict when two of them would share a key, or one
// would take a key another row holds.
func (q *querier) rekeyRows(ctx context.Context, db bun.IDB, orgID, table string, conds []condition, patch map[string]any) ([]rekey, error) {
	if len(patch) == 0 {
		return nil, nil
	}
	// Only rows whose key columns name a patched column: key_columns is a JSON array of
	// column names, so `"col"` occurs in it when col is one (a false match is dropped below).
	instr := "instr(tr.key_columns, ?) > 0"
	if q.dialect == dialectPostgres {
		instr = "strpos(tr.key_columns, ?) > 0"
	}
	names := make([]string, 0, len(patch))
	for k := range patch {
		names = append(names, k)
	}
	slices.Sort(names)
	sel := db.NewSelect().Model((*rowModel)(nil)).Column("id", "key_hash", "key_columns", "data").
		Where(q.rowScope(conds)+" AND tr.key_columns IS NOT NULL", orgID, table).
		WhereGroup(" AND ", func(sq *bun.SelectQuery) *bun.SelectQuery {
			for _, k := range names {
				quoted, _ := json.Marshal(k)
				sq = sq.WhereOr(instr, string(quoted))
			}
			return sq
		})
	for _, c := range conds {
		sel = sel.Where(c.expr, c.args...)
	}
	var ms []rowModel
	if err := sel.Scan(ctx, &ms); err != nil {
		return nil, err
	}
	var out []rekey
	byHash := map[string]string{}
	for _, m := range ms {
		var keys []string
		if err := json.Unmarshal([]byte(*m.KeyColumns), &keys); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(keys, func(k string) bool { _, ok := patch[k]; return ok }) {
			continue
		}
		data, err := mergedData(m.Data, patch)
		if err != nil {
			return nil, err
		}
		hash, err := keyHash(keys, data)
		if err != nil {
			return nil, err
		}
		if m.KeyHash != nil && *m.KeyHash == hash {
			continue
		}
		if _, dup := byHash[hash]; dup {
			return nil, conflictingKeys()
		}
		byHash[hash] = m.ID
		out = append(out, rekey{id: m.ID, hash: hash})
	}
	// Another row holding one of the new keys: one that the patch does not move (a row
	// that it moves cannot hold another's new key, or its own key would not move).
	for chunk := range slices.Chunk(out, 500) {
		hashes := make([]string, len(chunk))
		for i, r := range chunk {
			hashes[i] = r.hash
		}
		var holders []string
		err := db.NewSelect().Model((*rowModel)(nil)).Column("id").
			Where("tr.org_id = ? AND tr.table_name = ? AND tr.key_hash IN (?)", orgID, table, bun.In(hashes)).
			Scan(ctx, &holders)
		if err != nil {
			return nil, err
		}
		if len(holders) > 0 {
			return nil, conflictingKeys()
		}
	}
	return out, nil
}

func conflictingKeys() error {
	return fmt.Errorf("the patch would give two rows the same key: %w", storage.ErrConflict)
}

// setKeyHashes writes the new key hashes: cleared first, then set, so that no statement
// meets a hash that another moved row is about to leave.
func setKeyHashes(ctx context.Context, db bun.IDB, orgID, table string, rows []rekey) error {
	if len(rows) == 0 {
		return nil
	}
	for chunk := range slices.Chunk(rows, 500) {
		ids := make([]string, len(chunk))
		for i, r := range chunk {
			ids[i] = r.id
		}
		_, err := db.NewUpdate().Model((*rowModel)(nil)).Set("key_hash = NULL").
			Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(ids)).
			Exec(ctx)
		if err != nil {
			return err
		}
	}
	for _, r := range rows {
		_, err := db.NewUpdate().Model((*rowModel)(nil)).Set("key_hash = ?", r.hash).
			Where("org_id = ? AND table_name = ? AND id = ?", orgID, table, r.id).
			Exec(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

type condition struct {
	expr string
	args []any
	// indexed: the condition reads an index's entries (indexCondition).
	indexed bool
}

// rowScope is the condition on a table's rows (alias tr; args org id and table name) for a
// statement with conds. With an indexed condition on SQLite the columns are written +col,
// which keeps SQLite's planner from reading every row of the table in order by
// (org_id, table_name, created_at) and testing each against the index's list: the rows are
// found by id from the index (TestIndexedReadPlan shows both plans).
func (q *querier) rowScope(conds []condition) string {
	if q.dialect == dialectSQLite && slices.ContainsFunc(conds, func(c condition) bool { return c.indexed }) {
		return "+tr.org_id = ? AND +tr.table_name = ?"
	}
	return "tr.org_id = ? AND tr.table_name = ?"
}

// rowConditions turns where into SQL conditions on table_rows.data (alias tr) that hold
// when the column's JSON value equals the wanted one: same JSON type, same value (numbers
// compared as numbers). A missing column equals nothing, not even null.
func (q *querier) rowConditions(where map[string]any) ([]condition, error) {
	keys := make([]string, 0, len(where))
	for k := range where {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	conds := make([]condition, 0, len(keys))
	for _, k := range keys {
		v, canonical, err := normalizeJSON(where[k])
		if err != nil {
			return nil, err
		}
		if q.dialect == dialectPostgres {
			// jsonb equality: type and value, 1 = 1.0, "1" <> 1.
			conds = append(conds, condition{expr: "tr.data -> ?::text = ?::jsonb", args: []any{k, string(canonical)}})
			continue
		}
		// SQLite: json_each reads the top-level member by name (no JSON path to escape)
		// with its JSON type and its SQL value.
		const member = "EXISTS (SELECT 1 FROM json_each(tr.data) AS je WHERE je.key = ? AND "
		switch v := v.(type) {
		case string:
			conds = append(conds, condition{expr: member + "je.type = 'text' AND je.atom = ?)", args: []any{k, v}})
		case json.Number:
			f, exact := jsonnum.Exact(string(v))
			if exact {
				conds = append(conds, condition{expr: member + "je.type IN ('integer', 'real') AND je.atom = ?)", args: []any{k, f}})
				continue
			}
			// SQLite reads such a number as the float64 nearest it, which others share:
			// the member's JSON text (kept as written) must be the where's.
			f, _ = v.Float64()
			conds = append(conds, condition{expr: member + "je.type IN ('integer', 'real') AND je.atom = ? AND tr.data -> je.fullkey = ?)", args: []any{k, f, string(v)}})
		case bool:
			jsonType := "false"
			if v {
				jsonType = "true"
			}
			conds = append(conds, condition{expr: member + "je.type = ?)", args: []any{k, jsonType}})
		case nil:
			conds = append(conds, condition{expr: member + "je.type = 'null')", args: []any{k}})
		case map[string]any:
			conds = append(conds, condition{expr: member + "je.type = 'object' AND je.value = json(?))", args: []any{k, string(canonical)}})
		case []any:
			conds = append(conds, condition{expr: member + "je.type = 'array' AND je.value = json(?))", args: []any{k, string(canonical)}})
		default:
			return nil, errors.New("unsupported where value")
		}
	}
	return conds, nil
}
