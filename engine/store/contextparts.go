package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"unsafe"

	"github.com/uptrace/bun"

	"github.com/svcflow/svcflow/engine/storage"
)

// Large context arrays in parts. A run's matcher may produce tens of megabytes of pairs
// under one key. Stored whole, every page a client reads of it (GET /runs/{id}/context/
// {key}?offset=&limit=) reads and checks the whole value: 47 pages of 1,000 pairs read
// 12 MB each. Stored in parts of per elements, a page reads the one or two parts that hold
// it. The key's run_context row stays the key's one row: its value describes the parts
// ({"length", "per"}) and its parts column says how many there are, so that every reader
// that wants the value whole (GetContext) joins them back, and a key put whole again is
// one row again (parts = 0; rows of its earlier parts are then not read).

type contextPartModel struct {
	bun.BaseModel `bun:"table:run_context_parts,alias:rcp"`

	OrgID string `bun:"org_id,pk"`
	RunID string `bun:"run_id,pk"`
	Key   string `bun:"key,pk"`
	Part  int    `bun:"part,pk"`
	Value string `bun:"value,type:text"`
}

// partsInfo is the run_context value of a key stored in parts.
type partsInfo struct {
	Length int `json:"length"`
	Per    int `json:"per"`
}

func (q *querier) PutContextParts(ctx context.Context, orgID, runID, key string, parts iter.Seq2[json.RawMessage, error], length, per int) error {
	const op = "put context parts"
	if per < 1 {
		return fmt.Errorf("store: %s: no parts", op)
	}
	return wrap(op, q.atomic(ctx, func(ctx context.Context, db bun.IDB) error {
		if _, err := db.NewDelete().Model((*contextPartModel)(nil)).
			Where("org_id = ? AND run_id = ? AND key = ?", orgID, runID, key).Exec(ctx); err != nil {
			return err
		}
		// One statement a part, its value a bound argument: bun would render a part of a
		// few hundred kilobytes into the statement's text. Each part is written before the
		// next is made, so a large value is never all held at once.
		insert := `INSERT INTO "run_context_parts" ("org_id", "run_id", "key", "part", "value") VALUES (?, ?, ?, ?, ?)`
		if q.dialect == dialectPostgres {
			insert = pgPlaceholders(insert)
		}
		var size int64
		n := 0
		for p, err := range parts {
			if err != nil {
				return err
			}
			if err := q.rawExec(ctx, db, insert, orgID, runID, key, n, string(p)); err != nil {
				return err
			}
			size += int64(len(p))
			n++
		}
		if n == 0 {
			return errors.New("no parts")
		}
		info, _ := json.Marshal(partsInfo{Length: length, Per: per})
		m := &contextModel{OrgID: orgID, RunID: runID, Key: key, Value: info, Size: size, Parts: n}
		_, err := db.NewInsert().Model(m).
			On("CONFLICT (org_id, run_id, key) DO UPDATE").
			Set("value = EXCLUDED.value").
			Set("size = EXCLUDED.size").
			Set("parts = EXCLUDED.parts").
			Exec(ctx)
		return err
	}))
}

// rawExec runs query with its arguments bound by the driver, in db's transaction.
func (q *querier) rawExec(ctx context.Context, db bun.IDB, query string, args ...any) error {
	tx, ok := db.(bun.Tx)
	if !ok {
		return errors.New("not in a transaction")
	}
	_, err := tx.Tx.ExecContext(ctx, query, args...)
	return err
}

// joinParts returns the array a key stored in parts holds (m is its run_context row).
func (q *querier) joinParts(ctx context.Context, m *contextModel) (json.RawMessage, error) {
	var info partsInfo
	if err := json.Unmarshal(m.Value, &info); err != nil {
		return nil, fmt.Errorf("store: context key %q: parts: %w", m.Key, err)
	}
	parts, err := q.readParts(ctx, m.OrgID, m.RunID, m.Key, 0, m.Parts-1)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, m.Size+1)
	out = append(out, '[')
	for _, p := range parts {
		inner := bytes.TrimSpace(p)
		inner = bytes.TrimSpace(inner[1 : len(inner)-1])
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, ']'), nil
}

// readParts reads the parts first..last of a key, in order.
func (q *querier) readParts(ctx context.Context, orgID, runID, key string, first, last int) ([]json.RawMessage, error) {
	var ms []contextPartModel
	err := q.r.NewSelect().Model(&ms).
		Where("org_id = ? AND run_id = ? AND key = ? AND part BETWEEN ? AND ?", orgID, runID, key, first, last).
		OrderExpr("part").Scan(ctx)
	if err != nil {
		return nil, wrap("read context parts", err)
	}
	if len(ms) != last-first+1 {
		return nil, fmt.Errorf("store: context key %q: %d of parts %d..%d found", key, len(ms), first, last)
	}
	out := make([]json.RawMessage, len(ms))
	for i := range ms {
		if len(ms[i].Value) < 2 {
			return nil, fmt.Errorf("store: context key %q: part %d is not an array", key, ms[i].Part)
		}
		// The driver's string itself, not a copy of it: a part is read, never changed
		// (storage.Runs says so), and a copy doubled what a stream of a large key allocates.
		out[i] = json.RawMessage(unsafe.Slice(unsafe.StringData(ms[i].Value), len(ms[i].Value)))
	}
	return out, nil
}

func (q *querier) ContextSlice(ctx context.Context, orgID, runID, key string, from, to int) (storage.ContextSlice, error) {
	var m contextModel
	err := q.r.NewSelect().Model(&m).Where("org_id = ? AND run_id = ? AND key = ?", orgID, runID, key).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ContextSlice{}, nil
	}
	if err != nil {
		return storage.ContextSlice{}, wrap("get context", err)
	}
	if m.Parts == 0 {
		return storage.ContextSlice{Found: true, Whole: m.Value}, nil
	}
	var info partsInfo
	if err := json.Unmarshal(m.Value, &info); err != nil || info.Per < 1 {
		return storage.ContextSlice{}, fmt.Errorf("store: context key %q: parts: %v", key, err)
	}
	out := storage.ContextSlice{Found: true, Length: info.Length, Per: info.Per, Count: m.Parts, Size: m.Size, Parts: []json.RawMessage{}}
	from, to = max(from, 0), min(to, info.Length)
	if from >= to {
		return out, nil
	}
	first, last := from/info.Per, min((to-1)/info.Per, m.Parts-1)
	if out.Parts, err = q.readParts(ctx, orgID, runID, key, first, last); err != nil {
		return storage.ContextSlice{}, err
	}
	out.Start = first * info.Per
	return out, nil
}

func (q *querier) ContextParts(ctx context.Context, orgID, runID, key string, first, last int) ([]json.RawMessage, error) {
	if first < 0 || last < first {
		return nil, fmt.Errorf("store: context key %q: no parts %d..%d", key, first, last)
	}
	return q.readParts(ctx, orgID, runID, key, first, last)
}

// scanContextBrief runs sqlContextBrief and scans its four columns by hand: bun's scan by
// reflection was a quarter of the read's CPU, and every status document reads it.
func scanContextBrief(ctx context.Context, stmt *sql.Stmt, args ...any) ([]contextModel, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ms []contextModel
	for rows.Next() {
		var m contextModel
		var value []byte
		if err := rows.Scan(&m.Key, &m.Size, &m.Parts, &value); err != nil {
			return nil, err
		}
		m.Value = value
		ms = append(ms, m)
	}
	return ms, rows.Err()
}

func (q *querier) ContextBrief(ctx context.Context, orgID, runID string, maxBytes int64) (map[string]json.RawMessage, map[string]storage.ContextRef, error) {
	// The value column of a large value is not read: a row's columns are read lazily, so
	// SQLite does not walk its overflow pages, nor PostgreSQL detoast it.
	var ms []contextModel
	var err error
	if st := q.fastRead(); st != nil {
		ms, err = scanContextBrief(ctx, st.contextBrief, maxBytes, orgID, runID)
	} else {
		err = q.r.NewSelect().Model(&ms).
			Column("key", "size", "parts").
			ColumnExpr("CASE WHEN parts > 0 OR size <= ? THEN value END AS value", maxBytes).
			Where("org_id = ? AND run_id = ?", orgID, runID).Scan(ctx)
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, wrap("get context", err)
	}
	small := make(map[string]json.RawMessage, len(ms))
	large := map[string]storage.ContextRef{}
	for _, m := range ms {
		switch {
		case m.Parts > 0:
			var info partsInfo
			_ = json.Unmarshal(m.Value, &info)
			large[m.Key] = storage.ContextRef{Size: m.Size, Length: info.Length, Parts: true}
		case m.Size > maxBytes:
			large[m.Key] = storage.ContextRef{Size: m.Size}
		default:
			small[m.Key] = m.Value
		}
	}
	return small, large, nil
}
