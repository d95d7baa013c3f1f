package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/svctype"
)

// Custom-table indexes live in a side table, table_index_entries: one row per (index, row)
// holding a hash of the row's values for the index's columns, under a primary key that
// starts with the organization and the table. A read whose where names every column of a
// ready index looks its hash up there and reads only the rows it lists, rechecking the
// where on their data (a hash may collide, and null and a missing column hash alike), so an
// index changes what a read costs, never what it returns. docs/decisions.md says why a side
// table and not expression indexes or a physical table per custom table.
//
// Every write keeps the entries of every index the table declares, building or ready, in
// the same transaction as the row; it reads the declarations once a transaction, without a
// lock. A declaration (AddTableIndex, FOR UPDATE on the table's row so that two never race)
// is therefore not seen by writes already in flight: before building, the caller waits
// until every transaction older than the declaration has ended (WaitOlderTransactions, as
// PostgreSQL's CREATE INDEX CONCURRENTLY waits), so the build covers every row a write
// did not. On SQLite the one writer orders them and there is nothing to wait for. (Taking
// the row FOR KEY SHARE in every write was tried first: an upsert declaring its key index
// then upgraded that lock inside its step, and four worker processes deadlocked.)

type indexEntryModel struct {
	bun.BaseModel `bun:"table:table_index_entries,alias:tie"`

	OrgID     string `bun:"org_id,pk"`
	TableName string `bun:"table_name,pk"`
	IndexKey  string `bun:"index_key,pk"`
	ValueHash string `bun:"value_hash,pk"`
	RowID     string `bun:"row_id,pk"`
}

// within is q for statements on db, a transaction: q itself when it is one already.
func (q *querier) within(db bun.IDB) *querier {
	if q.inTx {
		return q
	}
	inner := *q
	inner.w, inner.r, inner.inTx = db, db, true
	inner.defs = map[string][]svctype.TableIndex{}
	if tx, ok := db.(bun.Tx); ok {
		inner.sqlTx = tx.Tx
	} else {
		inner.prepared = nil
	}
	return &inner
}

// indexDefs reads a table's index declarations; ErrNotFound without the table. A
// transaction keeps what it read for its later statements: a declaration made meanwhile
// waits for it to end before its build starts (see the top of this file).
func (q *querier) indexDefs(ctx context.Context, db bun.IDB, orgID, table string) ([]svctype.TableIndex, error) {
	key := orgID + "\x00" + table
	if defs, ok := q.defs[key]; ok {
		return defs, nil
	}
	defs, err := q.readIndexDefs(ctx, db, orgID, table)
	if err == nil && q.defs != nil {
		q.defs[key] = defs
	}
	return defs, err
}

func (q *querier) readIndexDefs(ctx context.Context, db bun.IDB, orgID, table string) ([]svctype.TableIndex, error) {
	var raw sql.NullString
	var err error
	if st := q.fast(); st != nil && q.inTx {
		err = q.queryRow(ctx, st.tableIndexes, orgID, table).Scan(&raw)
	} else if st := q.fastRead(); st != nil && db == q.r {
		// On the read pool: not a transaction of bun's (q.atomic's) on the writer.
		err = st.tableIndexesRead.QueryRowContext(ctx, orgID, table).Scan(&raw)
	} else if q.pgTx() {
		err = q.pgQueryRow(ctx, pgTableIndexes, orgID, table).Scan(&raw)
	} else {
		err = db.NewSelect().Model((*tableModel)(nil)).Column("indexes").Where("org_id = ? AND name = ?", orgID, table).
			Scan(ctx, &raw)
	}
	if err != nil {
		return nil, err
	}
	return parseIndexes(raw.String)
}

func parseIndexes(raw string) ([]svctype.TableIndex, error) {
	if raw == "" {
		return nil, nil
	}
	var defs []svctype.TableIndex
	if err := json.Unmarshal([]byte(raw), &defs); err != nil {
		return nil, err
	}
	return defs, nil
}

// TableIndexes reads a table's indexes as stored now.
func (q *querier) TableIndexes(ctx context.Context, orgID, table string) ([]svctype.TableIndex, error) {
	defs, err := q.indexDefs(ctx, q.r, orgID, table)
	if err != nil {
		return nil, wrap("table indexes", err)
	}
	return defs, nil
}

// AddTableIndex declares ix on the table, building; ErrConflict when one on the same
// columns exists, ErrNotFound without the table.
func (q *querier) AddTableIndex(ctx context.Context, orgID, table string, ix svctype.TableIndex) error {
	const op = "add table index"
	err := q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		return q.changeIndexes(ctx, db, orgID, table, func(defs []svctype.TableIndex) ([]svctype.TableIndex, error) {
			if slices.ContainsFunc(defs, func(d svctype.TableIndex) bool { return d.Key() == ix.Key() }) {
				return nil, conflict(op)
			}
			ix.State = svctype.IndexBuilding
			ix.CreatedAt = orNow(ix.CreatedAt, q.now()).UTC()
			return append(defs, ix), nil
		})
	})
	return wrap(op, err)
}

// ReadyTableIndex marks the index on key's columns ready: reads use it from now on.
func (q *querier) ReadyTableIndex(ctx context.Context, orgID, table, key string) error {
	const op = "ready table index"
	err := q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		return q.changeIndexes(ctx, db, orgID, table, func(defs []svctype.TableIndex) ([]svctype.TableIndex, error) {
			i := slices.IndexFunc(defs, func(d svctype.TableIndex) bool { return d.Key() == key })
			if i < 0 {
				return nil, notFound(op)
			}
			defs[i].State = svctype.IndexReady
			return defs, nil
		})
	})
	return wrap(op, err)
}

// changeIndexes rewrites a table's declarations with change, the row locked FOR UPDATE on
// PostgreSQL so that two changes never race.
func (q *querier) changeIndexes(ctx context.Context, db bun.IDB, orgID, table string, change func([]svctype.TableIndex) ([]svctype.TableIndex, error)) error {
	delete(q.defs, orgID+"\x00"+table)
	var raw sql.NullString
	sel := db.NewSelect().Model((*tableModel)(nil)).Column("indexes").Where("org_id = ? AND name = ?", orgID, table)
	if q.dialect == dialectPostgres {
		sel = sel.For("UPDATE")
	}
	if err := sel.Scan(ctx, &raw); err != nil {
		return err
	}
	defs, err := parseIndexes(raw.String)
	if err != nil {
		return err
	}
	if defs, err = change(defs); err != nil {
		return err
	}
	b, err := json.Marshal(defs)
	if err != nil {
		return err
	}
	res, err := db.NewUpdate().Model((*tableModel)(nil)).Set("indexes = ?", string(b)).
		Where("org_id = ? AND name = ?", orgID, table).Exec(ctx)
	if err != nil {
		return err
	}
	return checkAffected("change indexes", res, notFound)
}

// BuildTableIndex writes the entries of the index on key's columns for at most batch rows
// after cursor, in one transaction, and returns the cursor of the next batch ("" when the
// table is done). Entries already there (written since the declaration) are kept.
func (q *querier) BuildTableIndex(ctx context.Context, orgID, table, key, cursor string, batch int) (string, error) {
	const op = "build table index"
	var next string
	err := q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		defs, err := q.indexDefs(ctx, db, orgID, table)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(defs, func(d svctype.TableIndex) bool { return d.Key() == key })
		if i < 0 {
			return notFound(op)
		}
		sel := db.NewSelect().Model((*rowModel)(nil)).Column("id", "data", "created_at").
			Where("tr.org_id = ? AND tr.table_name = ?", orgID, table).
			OrderExpr("tr.created_at ASC, tr.id ASC").Limit(int64(batch))
		if cursor != "" {
			at, after, err := decodeTimeCursor(cursor)
			if err != nil {
				return err
			}
			// A row value, which both dialects seek in the (org_id, table_name, created_at, id)
			// index even when many rows share a created_at (a bulk load).
			sel = sel.Where("(tr.created_at, tr.id) > (?, ?)", at, after)
		}
		var ms []rowModel
		if err := sel.Scan(ctx, &ms); err != nil {
			return err
		}
		entries := make([]indexEntryModel, 0, len(ms))
		for _, m := range ms {
			var data map[string]any
			if err := json.Unmarshal(m.Data, &data); err != nil {
				return err
			}
			entries, err = appendEntries(entries, orgID, table, m.ID, defs[i:i+1], data)
			if err != nil {
				return err
			}
		}
		if err := q.insertEntries(ctx, db, entries); err != nil {
			return err
		}
		if len(ms) == batch {
			next = encodeTimeCursor(ms[len(ms)-1].CreatedAt, ms[len(ms)-1].ID)
		}
		return nil
	})
	return next, wrap(op, err)
}

// CountRows counts a table's rows, reading at most upTo of them (0: every one).
func (q *querier) CountRows(ctx context.Context, orgID, table string, upTo int) (int, error) {
	if st := q.fastRead(); st != nil && upTo > 0 {
		var n int
		if err := st.countRows.QueryRowContext(ctx, orgID, table, upTo).Scan(&n); err != nil {
			return 0, wrap("count rows", err)
		}
		return n, nil
	}
	sub := q.r.NewSelect().Model((*rowModel)(nil)).ColumnExpr("1").
		Where("tr.org_id = ? AND tr.table_name = ?", orgID, table)
	if upTo > 0 {
		sub = sub.Limit(int64(upTo))
	}
	var n int
	if err := q.r.NewSelect().TableExpr("(?) AS s", sub).ColumnExpr("count(*)").Scan(ctx, &n); err != nil {
		return 0, wrap("count rows", err)
	}
	return n, nil
}

// valueHash is the entry hash of an index on cols (sorted) for a row's or a where's values,
// and false when one of the columns is missing (a row without one has no entry: a where
// never matches a missing column). Half a SHA-256 is plenty: a read rechecks every row.
func valueHash(cols []string, data map[string]any, decoded bool) (string, bool, error) {
	for _, c := range cols {
		if _, ok := data[c]; !ok {
			return "", false, nil
		}
	}
	h, err := hashPairs(cols, data, decoded)
	if err != nil {
		return "", false, err
	}
	return h[:32], true, nil
}

func sortedColumns(ix svctype.TableIndex) []string {
	cols := slices.Clone(ix.Columns)
	slices.Sort(cols)
	return cols
}

// appendEntries appends a row's entries for defs.
func appendEntries(dst []indexEntryModel, orgID, table, rowID string, defs []svctype.TableIndex, data map[string]any) ([]indexEntryModel, error) {
	for _, d := range defs {
		h, ok, err := valueHash(sortedColumns(d), data, true)
		if err != nil {
			return nil, err
		}
		if ok {
			dst = append(dst, indexEntryModel{OrgID: orgID, TableName: table, IndexKey: d.Key(), ValueHash: h, RowID: rowID})
		}
	}
	return dst, nil
}

func (q *querier) insertEntries(ctx context.Context, db bun.IDB, entries []indexEntryModel) error {
	if len(entries) == 0 {
		return nil
	}
	if st := q.fast(); st != nil && q.inTx {
		for _, e := range entries {
			if _, err := q.exec(ctx, st.insertEntry, e.OrgID, e.TableName, e.IndexKey, e.ValueHash, e.RowID); err != nil {
				return err
			}
		}
		return nil
	}
	for chunk := range slices.Chunk(entries, 500) {
		if _, err := db.NewInsert().Model(&chunk).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// replaceEntries deletes the entries of rows and writes the ones their data now gives.
func (q *querier) replaceEntries(ctx context.Context, db bun.IDB, orgID, table string, defs []svctype.TableIndex, rows map[string]map[string]any) error {
	if len(defs) == 0 || len(rows) == 0 {
		return nil
	}
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var entries []indexEntryModel
	for chunk := range slices.Chunk(ids, 500) {
		if st := q.fast(); st != nil && q.inTx && len(chunk) == 1 {
			if _, err := q.exec(ctx, st.deleteEntries, orgID, table, chunk[0]); err != nil {
				return err
			}
		} else {
			_, err := db.NewDelete().Model((*indexEntryModel)(nil)).
				Where("org_id = ? AND table_name = ? AND row_id IN (?)", orgID, table, bun.In(chunk)).Exec(ctx)
			if err != nil {
				return err
			}
		}
		for _, id := range chunk {
			var err error
			if entries, err = appendEntries(entries, orgID, table, id, defs, rows[id]); err != nil {
				return err
			}
		}
	}
	return q.insertEntries(ctx, db, entries)
}

// indexCondition is the condition that restricts a read to the rows the best ready index
// of defs lists for where, or false when no index covers where.
func indexCondition(orgID, table string, defs []svctype.TableIndex, where map[string]any) (condition, bool, error) {
	ix, ok := svctype.BestIndex(defs, where)
	if !ok {
		return condition{}, false, nil
	}
	values := make(map[string]any, len(ix.Columns))
	for _, c := range ix.Columns {
		values[c] = where[c]
	}
	h, _, err := valueHash(sortedColumns(ix), values, false)
	if err != nil {
		return condition{}, false, err
	}
	return condition{
		expr:    "tr.id IN (SELECT tie.row_id FROM table_index_entries AS tie WHERE tie.org_id = ? AND tie.table_name = ? AND tie.index_key = ? AND tie.value_hash = ?)",
		args:    []any{orgID, table, ix.Key(), h},
		indexed: true,
	}, true, nil
}

// ensureKeyIndex declares the index on an upsert's key columns when the table has none:
// the key columns of an upsert are always indexed, so that reads by them never scan. On
// SQLite it is built and ready in the caller's transaction (the one writer: no write can be
// in flight). On PostgreSQL it is declared building and a JobBuildIndex job, enqueued in the
// same transaction, waits for the writes in flight and builds it.
func (q *querier) ensureKeyIndex(ctx context.Context, db bun.IDB, orgID, table string, keys []string, defs []svctype.TableIndex) ([]svctype.TableIndex, error) {
	key := svctype.IndexKey(keys)
	if slices.ContainsFunc(defs, func(d svctype.TableIndex) bool { return d.Key() == key }) {
		return defs, nil
	}
	state := svctype.IndexReady
	if q.dialect == dialectPostgres {
		state = svctype.IndexBuilding
	}
	ix := svctype.TableIndex{Columns: slices.Clone(keys), State: state, CreatedAt: q.now().UTC()}
	declared := false
	err := q.changeIndexes(ctx, db, orgID, table, func(cur []svctype.TableIndex) ([]svctype.TableIndex, error) {
		if slices.ContainsFunc(cur, func(d svctype.TableIndex) bool { return d.Key() == key }) {
			return cur, nil // another transaction declared it first
		}
		declared = true
		return append(cur, ix), nil
	})
	if err != nil {
		return nil, err
	}
	inner := q.within(db)
	switch {
	case !declared:
	case q.dialect == dialectPostgres:
		payload, err := json.Marshal(svctype.BuildIndexPayload{Table: table, Key: key})
		if err != nil {
			return nil, err
		}
		job := &svctype.Job{OrgID: orgID, Kind: svctype.JobBuildIndex, RunID: "index:" + table + ":" + key, Payload: payload}
		if err := inner.EnqueueJob(ctx, job); err != nil {
			return nil, err
		}
	default:
		for cursor := ""; ; {
			next, err := inner.BuildTableIndex(ctx, orgID, table, key, cursor, 5000)
			if err != nil {
				return nil, err
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return q.indexDefs(ctx, db, orgID, table)
}

// WaitOlderTransactions returns once no transaction that began before since is still open
// on PostgreSQL (other than this connection's), polling every poll; at once on SQLite, whose
// one writer leaves no other transaction open beside the caller. Only sessions the
// database role may see are waited for: run every process with one role (or one with
// pg_read_all_stats).
func (q *querier) WaitOlderTransactions(ctx context.Context, since time.Time, poll time.Duration) error {
	if q.dialect != dialectPostgres {
		return nil
	}
	for {
		var n int
		err := q.r.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
 AND pid <> pg_backend_pid() AND xact_start IS NOT NULL AND xact_start < ?`, since).Scan(ctx, &n)
		if err != nil {
			return wrap("wait older transactions", err)
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// DBNow is the database's clock (SQLite: this process's).
func (q *querier) DBNow(ctx context.Context) (time.Time, error) {
	if q.dialect != dialectPostgres {
		return q.now(), nil
	}
	var t time.Time
	if err := q.r.NewRaw(`SELECT clock_timestamp()`).Scan(ctx, &t); err != nil {
		return time.Time{}, wrap("db now", err)
	}
	return t, nil
}
