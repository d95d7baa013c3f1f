package migrations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// tableRowKeyColumns adds table_rows.key_columns and repairs the key hashes of the rows
// written before it.
//
// key_hash identifies an upserted row by its key columns (the upsert's keys, in order) and
// their values. Before this migration the key columns were not stored, so a PATCH that
// changed a key column left the row's hash at its old key: a later upsert of the old key
// overwrote the patched row, and one of the new key added a second row. The key columns
// are now stored with every upserted row (UpsertRow writes them; UpdateRows recomputes the
// hash from them).
//
// Rows written before then have a hash and no key columns. The repair finds, for each, the
// key columns whose hash it holds: first among those already found in its table, else by
// trying the row's own columns in every order, up to four of them. A row whose hash matches
// no such list was patched on a key column (its hash is of values it no longer has); it
// takes its table's key columns when the table has only one list that fits the row, and its
// hash is recomputed. When another row already holds that key (the duplicate an upsert
// added after the patch), the row already holding it keeps it, and the patched row loses its
// key (key_hash and key_columns NULL): it stays, readable and patchable, but no upsert will
// touch it again. A row whose key columns cannot be determined keeps its hash as it is.
func tableRowKeyColumns(ctx context.Context, tx bun.Tx) error {
	if err := addColumn(ctx, tx, "table_rows", "key_columns VARCHAR"); err != nil {
		return err
	}
	// Every table with rows still to repair.
	var tables []struct {
		OrgID     string `bun:"org_id"`
		TableName string `bun:"table_name"`
	}
	err := tx.NewSelect().Model((*v3Row)(nil)).Column("org_id", "table_name").Distinct().
		Where("key_hash IS NOT NULL AND key_columns IS NULL").
		OrderExpr("org_id, table_name").
		Scan(ctx, &tables)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := v3RepairTable(ctx, tx, t.OrgID, t.TableName); err != nil {
			return fmt.Errorf("repair key hashes of %s/%s: %w", t.OrgID, t.TableName, err)
		}
	}
	return nil
}

// v3Row is what the repair reads of a table_rows row.
type v3Row struct {
	bun.BaseModel `bun:"table:table_rows"`

	ID        string          `bun:"id"`
	KeyHash   *string         `bun:"key_hash"`
	Data      json.RawMessage `bun:"data"`
	UpdatedAt time.Time       `bun:"updated_at"`
}

const (
	v3RepairPage = 1000
	// v3SearchBudget bounds the key-column lists tried per table (SHA-256 of a few values
	// each): about a second of work.
	v3SearchBudget = 1_000_000
	v3MaxKeys      = 4
)

// v3RepairTable repairs one table's rows that have a key hash and no key columns.
func v3RepairTable(ctx context.Context, db bun.IDB, orgID, table string) error {
	var (
		candidates [][]string
		unresolved []string
		budget     = v3SearchBudget
		after      = ""
	)
	// Pass 1: the rows whose hash some key-column list explains get that list.
	for {
		var rows []v3Row
		err := db.NewSelect().Model(&rows).Column("id", "key_hash", "data").
			Where("org_id = ? AND table_name = ? AND key_hash IS NOT NULL AND key_columns IS NULL AND id > ?", orgID, table, after).
			OrderExpr("id").Limit(v3RepairPage).Scan(ctx)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		found := map[string][]string{} // key columns (JSON) -> ids
		for _, r := range rows {
			after = r.ID
			data, err := v3Data(r.Data)
			if err != nil {
				return err
			}
			keys := v3Explain(candidates, data, *r.KeyHash)
			if keys == nil {
				if keys = v3Search(data, *r.KeyHash, &budget); keys != nil {
					candidates = append(candidates, keys)
				}
			}
			if keys == nil {
				unresolved = append(unresolved, r.ID)
				continue
			}
			kc, _ := json.Marshal(keys)
			found[string(kc)] = append(found[string(kc)], r.ID)
		}
		for kc, ids := range found {
			_, err := db.NewUpdate().Model((*v3Row)(nil)).Set("key_columns = ?", kc).
				Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(ids)).
				Exec(ctx)
			if err != nil {
				return err
			}
		}
	}
	if len(unresolved) == 0 {
		return nil
	}
	// Pass 2: the patched rows. Their stale hashes go first, so that one patched row's new
	// key is never refused because another still holds it as its old one; then each takes
	// its recomputed hash, the most recently written first.
	var rows []v3Row
	for chunk := range slices.Chunk(unresolved, v3RepairPage) {
		var part []v3Row
		err := db.NewSelect().Model(&part).Column("id", "data", "updated_at").
			Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(chunk)).
			Scan(ctx)
		if err != nil {
			return err
		}
		rows = append(rows, part...)
	}
	slices.SortFunc(rows, func(a, b v3Row) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	type rekey struct {
		id, hash, keys string
	}
	var todo []rekey
	for _, r := range rows {
		data, err := v3Data(r.Data)
		if err != nil {
			return err
		}
		keys := v3Fitting(candidates, data)
		if keys == nil {
			continue // no key columns to recompute with: left as it was
		}
		hash, err := v3KeyHash(keys, data)
		if err != nil {
			return err
		}
		kc, _ := json.Marshal(keys)
		todo = append(todo, rekey{id: r.ID, hash: hash, keys: string(kc)})
	}
	for chunk := range slices.Chunk(todo, v3RepairPage) {
		ids := make([]string, len(chunk))
		for i, r := range chunk {
			ids[i] = r.id
		}
		_, err := db.NewUpdate().Model((*v3Row)(nil)).Set("key_hash = NULL").
			Where("org_id = ? AND table_name = ? AND id IN (?)", orgID, table, bun.In(ids)).
			Exec(ctx)
		if err != nil {
			return err
		}
	}
	for _, r := range todo {
		var holders int
		err := db.NewSelect().Model((*v3Row)(nil)).ColumnExpr("count(*)").
			Where("org_id = ? AND table_name = ? AND key_hash = ?", orgID, table, r.hash).
			Scan(ctx, &holders)
		if err != nil {
			return err
		}
		upd := db.NewUpdate().Model((*v3Row)(nil))
		if holders == 0 {
			upd = upd.Set("key_hash = ?", r.hash).Set("key_columns = ?", r.keys)
		} else {
			upd = upd.Set("key_hash = NULL").Set("key_columns = NULL")
		}
		_, err = upd.Where("org_id = ? AND table_name = ? AND id = ?", orgID, table, r.id).Exec(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func v3Data(raw json.RawMessage) (map[string]any, error) {
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	return data, nil
}

// v3Explain returns the first candidate list whose hash over data is hash.
func v3Explain(candidates [][]string, data map[string]any, hash string) []string {
	for _, keys := range candidates {
		if h, err := v3KeyHash(keys, data); err == nil && h == hash {
			return keys
		}
	}
	return nil
}

// v3Search tries data's columns as key lists, in every order, one to v3MaxKeys long, while
// the budget lasts.
func v3Search(data map[string]any, hash string, budget *int) []string {
	cols := make([]string, 0, len(data))
	for c := range data {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	used := make([]bool, len(cols))
	var keys []string
	var try func() []string
	try = func() []string {
		for i, c := range cols {
			if used[i] || *budget <= 0 {
				continue
			}
			keys = append(keys, c)
			*budget--
			if h, err := v3KeyHash(keys, data); err == nil && h == hash {
				return slices.Clone(keys)
			}
			if len(keys) < v3MaxKeys {
				used[i] = true
				found := try()
				used[i] = false
				if found != nil {
					return found
				}
			}
			keys = keys[:len(keys)-1]
		}
		return nil
	}
	return try()
}

// v3Fitting returns the table's one key-column list whose columns data has, or nil when
// there is none or more than one.
func v3Fitting(candidates [][]string, data map[string]any) []string {
	var fit []string
	for _, keys := range candidates {
		all := true
		for _, k := range keys {
			if _, ok := data[k]; !ok {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if fit != nil {
			return nil
		}
		fit = keys
	}
	return fit
}

// v3KeyHash is the store's keyHash (engine/store/tables.go) as it was when these hashes
// were written, frozen with the schema: the hex SHA-256 of the JSON of [[key, value], ...]
// in key order, values through a JSON round trip.
func v3KeyHash(keys []string, row map[string]any) (string, error) {
	pairs := make([][2]any, len(keys))
	for i, k := range keys {
		pairs[i] = [2]any{k, row[k]}
	}
	b, err := json.Marshal(pairs)
	if err != nil {
		return "", err
	}
	var n any
	if err := json.Unmarshal(b, &n); err != nil {
		return "", err
	}
	if b, err = json.Marshal(n); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
