// Package tables is the custom-tables feature: an organization's tables, their rows and
// their indexes. It owns the rules (which names and column types are valid, which columns
// of a row a table keeps, when a where may read every row), the operations of the
// /custom-tables routes (Tables), the custom-table step kind, and the builds of indexes.
// It registers on the run core like any feature (Tables.Register): the step kind, the job
// that builds an index, and what a step's call gets (StepCall.Tables, with declarations
// cached). It declares the store it needs (Store); the run core has no table of its own
// and names none.
//
// The same rules hold inside a step's transaction (through StepCall.Tables) and on the
// routes (through Store).
package tables

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/svcflow/svcflow/engine/svctype"
)

// ColumnTypes are the accepted column types. Values are stored as the JSON they arrive as;
// the type documents intent for readers and generated forms.
var ColumnTypes = map[string]bool{
	"text": true, "number": true, "integer": true, "boolean": true,
	"date": true, "timestamp": true, "json": true,
}

var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// MaxColumns bounds a table's declared columns.
const MaxColumns = 256

// Problem is one invalid part of a table declaration, located by a JSON pointer.
type Problem struct {
	Pointer string
	Message string
}

// Check returns the problems with a table declaration, pointers relative to the body.
func Check(name string, fields map[string]string) []Problem {
	var out []Problem
	if !namePattern.MatchString(name) {
		out = append(out, Problem{"/name", "must start with a letter or underscore and hold at most 63 letters, digits and underscores"})
	}
	if len(fields) == 0 {
		out = append(out, Problem{"/fields", "must declare at least one column"})
	}
	if len(fields) > MaxColumns {
		out = append(out, Problem{"/fields", fmt.Sprintf("at most %d columns", MaxColumns)})
	}
	cols := make([]string, 0, len(fields))
	for c := range fields {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for _, c := range cols {
		if !namePattern.MatchString(c) {
			out = append(out, Problem{"/fields/" + c, "column names start with a letter or underscore and hold at most 63 letters, digits and underscores"})
		}
		if !ColumnTypes[fields[c]] {
			out = append(out, Problem{"/fields/" + c, fmt.Sprintf("unknown column type %q (text, number, integer, boolean, date, timestamp, json)", fields[c])})
		}
	}
	return out
}

// Create stores a new table with its indexes (ready: the table is empty); the caller has
// checked the declaration (Check, CheckIndexes).
func Create(ctx context.Context, st Creator, orgID, name string, fields map[string]string, indexes [][]string, now time.Time) (*svctype.Table, error) {
	t := &svctype.Table{OrgID: orgID, Name: name, Fields: fields, Indexes: []svctype.TableIndex{}, CreatedAt: now.UTC()}
	for _, cols := range indexes {
		t.Indexes = append(t.Indexes, svctype.TableIndex{Columns: cols, State: svctype.IndexReady, CreatedAt: now.UTC()})
	}
	if err := st.CreateTable(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Index limits: each index costs every write of its table one more entry.
const (
	MaxIndexes      = 8
	MaxIndexColumns = 4
)

// CheckIndexes returns the problems with the indexes a table declaring fields is created
// with (pointer: where the list is), existing its indexes already (nil for a new table):
// each names 1 to MaxIndexColumns declared columns, once each, and no two name the same set.
func CheckIndexes(pointer string, fields map[string]string, existing []svctype.TableIndex, indexes [][]string) []Problem {
	var out []Problem
	if len(existing)+len(indexes) > MaxIndexes {
		out = append(out, Problem{pointer, fmt.Sprintf("a table has at most %d indexes", MaxIndexes)})
	}
	seen := map[string]bool{} // within indexes: one on the same set as an existing one is the store's conflict
	for i, cols := range indexes {
		p := fmt.Sprintf("%s/%d", pointer, i)
		ps := checkIndex(p, fields, cols)
		if len(ps) == 0 && seen[svctype.IndexKey(cols)] {
			ps = append(ps, Problem{p, "another index names the same columns"})
		}
		seen[svctype.IndexKey(cols)] = true
		out = append(out, ps...)
	}
	return out
}

// CheckIndex returns the problems with one index on cols added to a table declaring fields
// with the indexes existing (pointer: where the columns are).
func CheckIndex(pointer string, fields map[string]string, existing []svctype.TableIndex, cols []string) []Problem {
	if len(existing) >= MaxIndexes {
		return []Problem{{pointer, fmt.Sprintf("a table has at most %d indexes", MaxIndexes)}}
	}
	return checkIndex(pointer, fields, cols)
}

// checkIndex: 1 to MaxIndexColumns declared columns, each once.
func checkIndex(p string, fields map[string]string, cols []string) []Problem {
	if len(cols) == 0 || len(cols) > MaxIndexColumns {
		return []Problem{{p, fmt.Sprintf("an index names 1 to %d columns", MaxIndexColumns)}}
	}
	var out []Problem
	dup := map[string]bool{}
	for j, c := range cols {
		if _, ok := fields[c]; !ok {
			out = append(out, Problem{fmt.Sprintf("%s/%d", p, j), fmt.Sprintf("column %q is not declared by the table", c)})
		} else if dup[c] {
			out = append(out, Problem{fmt.Sprintf("%s/%d", p, j), fmt.Sprintf("column %q is named twice", c)})
		}
		dup[c] = true
	}
	return out
}

// ScanThreshold is the size above which a where that no ready index covers is refused
// unless the caller asks for a scan: it would read every row of the table.
const ScanThreshold = 10000

// ScanRefusedError is a where refused for reading every row of a large table.
type ScanRefusedError struct {
	Table   string
	Columns []string // the where's columns: an index on them would serve it
}

func (e *ScanRefusedError) Error() string {
	cols, _ := json.Marshal(e.Columns)
	return fmt.Sprintf("a where on %s reads every row of table %q, which holds more than %d rows: "+
		"an index on %s would serve it (POST /custom-tables/%s/indexes {\"columns\": %s}), or ask for the scan (scan: true)",
		cols, e.Table, ScanThreshold, cols, e.Table, cols)
}

// CheckRead refuses a where that no ready index covers on a table of more than
// ScanThreshold rows, unless scan. t may be a cached declaration: when it shows no covering
// index, the table's indexes are read again, since one may have been added since.
func CheckRead(ctx context.Context, st Counter, t *svctype.Table, where map[string]any, scan bool) error {
	if len(where) == 0 || scan {
		return nil
	}
	if _, ok := t.CoveringIndex(where); ok {
		return nil
	}
	defs, err := st.TableIndexes(ctx, t.OrgID, t.Name)
	if err != nil {
		return err
	}
	if _, ok := svctype.BestIndex(defs, where); ok {
		return nil
	}
	n, err := st.CountRows(ctx, t.OrgID, t.Name, ScanThreshold+1)
	if err != nil {
		return err
	}
	if n <= ScanThreshold {
		return nil
	}
	cols := make([]string, 0, len(where))
	for c := range where {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	return &ScanRefusedError{Table: t.Name, Columns: cols}
}

// BuildIndex writes the entries of a declared index over the table's rows, batch rows a
// transaction (st is outside any transaction, so writes go on between batches), then
// makes it ready.
//
// It first waits for the transactions that began before it (on PostgreSQL): a write in
// flight when the index was declared did not see it and writes no entries for it, and the
// build must not pass its row before it commits. Call it after the declaration committed.
func BuildIndex(ctx context.Context, st Store, orgID, table, key string, batch int) error {
	since, err := st.DBNow(ctx)
	if err != nil {
		return err
	}
	if err := st.WaitOlderTransactions(ctx, since, 20*time.Millisecond); err != nil {
		return err
	}
	for cursor := ""; ; {
		next, err := st.BuildTableIndex(ctx, orgID, table, key, cursor, batch)
		if err != nil {
			return err
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return st.ReadyTableIndex(ctx, orgID, table, key)
}

// Split keeps the columns t declares and returns the names of the others, sorted.
func Split(t *svctype.Table, row map[string]any) (kept map[string]any, dropped []string) {
	kept = make(map[string]any, len(row))
	for k, v := range row {
		if _, ok := t.Fields[k]; ok {
			kept[k] = v
			continue
		}
		dropped = append(dropped, k)
	}
	sort.Strings(dropped)
	return kept, dropped
}

// Undeclared returns the names in cols that t does not declare, in order.
func Undeclared(t *svctype.Table, cols []string) []string {
	var out []string
	for _, c := range cols {
		if _, ok := t.Fields[c]; !ok {
			out = append(out, c)
		}
	}
	return out
}
