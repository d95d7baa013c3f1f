// Package tables owns the rules of custom tables: which names and column types are valid,
// and which columns of a row a table keeps. It stores nothing itself: rows go through the
// svctype.TableStore it is handed, so the same rules hold inside a step's transaction and on
// the HTTP routes.
package tables

import (
	"context"
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

// Create stores a new table; the caller has checked the declaration.
func Create(ctx context.Context, st svctype.TableStore, orgID, name string, fields map[string]string, now time.Time) (*svctype.Table, error) {
	t := &svctype.Table{OrgID: orgID, Name: name, Fields: fields, CreatedAt: now.UTC()}
	if err := st.CreateTable(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
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
