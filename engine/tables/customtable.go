package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/svcflow/svcflow/engine/svctype"
)

// CustomTable is the step type that writes, upserts or reads custom-table rows.
const CustomTable = "custom-table"

// StepKind is the custom-table step kind: it reads and writes through StepCall.Tables, in
// the step's transaction (a read whose operation is written as a literal may run ahead of
// it, through the store). Register puts it in the core's Environment.
func StepKind() svctype.StepKind {
	return svctype.StepKind{Run: runCustomTable, Validate: validateCustomTable, ReadOnly: readsOnly, Action: action}
}

// action is the step kind of a custom-table action called name (svctype.StepKind.Action):
// the step kind on the action's stored properties, resolved in the step's scope, with the
// step's own properties over them (a step passes its values).
func action(name string, stored map[string]any) (svctype.StepKind, error) {
	if ps := validateCustomTable(stored); len(ps) > 0 {
		return svctype.StepKind{}, fmt.Errorf("custom-table action: properties%s: %s", ps[0].Pointer, ps[0].Message)
	}
	run := func(ctx context.Context, call *svctype.StepCall) (any, error) {
		resolved, err := call.Resolve(ctx, stored, call.Vars)
		if err != nil {
			return nil, fmt.Errorf("action %q properties: %w", name, err)
		}
		props, _ := resolved.(map[string]any)
		merged := make(map[string]any, len(props)+len(call.Properties))
		maps.Copy(merged, props)
		maps.Copy(merged, call.Properties)
		call.Properties = merged
		return runCustomTable(ctx, call)
	}
	return svctype.StepKind{Run: run}, nil
}

// Custom-table operations.
const (
	opWrite  = "write"
	opUpsert = "upsert"
	opRead   = "read"
)

// EventDroppedFields is emitted when a row carries columns its table does not declare.
const EventDroppedFields = "custom_table_dropped_fields"

// A read returns at most limit rows: DefaultReadLimit when the step sets none, never more
// than MaxReadLimit. A read runs inside the step's transaction, which on SQLite holds the
// one writer, and its rows become a context value: a table of any size must not land there
// whole.
const (
	DefaultReadLimit = 1000
	MaxReadLimit     = 10000
)

func validateCustomTable(props map[string]any) []svctype.PropertyProblem {
	var out []svctype.PropertyProblem
	add := func(p, f string, a ...any) {
		out = append(out, svctype.PropertyProblem{Pointer: p, Message: fmt.Sprintf(f, a...)})
	}
	if s, ok := props["table"].(string); !ok || s == "" {
		add("/table", "required: the name of a custom table")
	}
	op, _ := props["operation"].(string)
	switch op {
	case opWrite, opUpsert:
		keys, kok := props["keys"].([]any)
		values, vok := props["values"].([]any)
		if op == opUpsert && (!kok || len(keys) == 0) {
			add("/keys", "upsert needs at least one key column")
		}
		if props["keys"] != nil && !kok {
			add("/keys", "must be an array of column names")
		}
		for i, k := range keys {
			if s, ok := k.(string); !ok || s == "" {
				add(fmt.Sprintf("/keys/%d", i), "must be a column name")
			}
		}
		if path, isPath := props["values"].(string); props["values"] != nil && !vok && !(isPath && strings.HasPrefix(path, "@")) {
			add("/values", "must be an array (or an @path to one) aligned with keys")
		}
		if kok && vok && len(keys) != len(values) {
			add("/values", "has %d entries for %d keys", len(values), len(keys))
		}
		if f, ok := props["fields"]; ok {
			if _, isMap := f.(map[string]any); !isMap {
				add("/fields", "must be an object of column -> value")
			}
		}
	case opRead:
		if w, ok := props["where"]; ok {
			if _, isMap := w.(map[string]any); !isMap {
				add("/where", "must be an object of column -> value")
			}
		}
		if sc, ok := props["scan"]; ok {
			if _, isBool := sc.(bool); !isBool {
				add("/scan", "must be a boolean: true lets a where no index serves read a table of more than %d rows", ScanThreshold)
			}
		}
		if l, ok := props["limit"]; ok && !isPath(l) {
			if _, err := readLimit(l); err != nil {
				add("/limit", "%s", err)
			}
		}
	default:
		add("/operation", "must be one of write, upsert, read")
	}
	return out
}

func runCustomTable(ctx context.Context, call *svctype.StepCall) (any, error) {
	p := call.Properties
	name, _ := p["table"].(string)
	if name == "" {
		return nil, errors.New("custom-table: property table is required")
	}
	t, err := call.Tables.GetTable(ctx, call.OrgID, name)
	if errors.Is(err, svctype.ErrNotFound) {
		return nil, fmt.Errorf("custom-table: table %q does not exist", name)
	}
	if err != nil {
		return nil, err
	}
	op, _ := p["operation"].(string)
	switch op {
	case opWrite, opUpsert:
		return writeRow(ctx, call, t, op)
	case opRead:
		return readRows(ctx, call, t)
	}
	return nil, fmt.Errorf("custom-table: operation %q is not one of write, upsert, read", op)
}

func writeRow(ctx context.Context, call *svctype.StepCall, t *svctype.Table, op string) (any, error) {
	p := call.Properties
	keys, err := stringList(p["keys"], "keys")
	if err != nil {
		return nil, err
	}
	values, _ := p["values"].([]any)
	if p["values"] != nil && values == nil {
		return nil, errors.New("custom-table: values must resolve to an array")
	}
	if len(values) != len(keys) {
		return nil, fmt.Errorf("custom-table: %d values for %d keys", len(values), len(keys))
	}
	if op == opUpsert && len(keys) == 0 {
		return nil, errors.New("custom-table: upsert needs at least one key column")
	}
	if missing := Undeclared(t, keys); len(missing) > 0 {
		return nil, fmt.Errorf("custom-table: key columns %v are not declared by table %q", missing, t.Name)
	}
	row := map[string]any{}
	if f, ok := p["fields"].(map[string]any); ok {
		for k, v := range f {
			row[k] = v
		}
	}
	for i, k := range keys {
		row[k] = values[i]
	}
	kept, dropped := Split(t, row)
	if len(dropped) > 0 {
		call.Emit(EventDroppedFields, map[string]any{"table": t.Name, "dropped": dropped})
	}
	written := svctype.Row{}
	inserted := true
	if op == opUpsert {
		written, inserted, err = call.Tables.UpsertRow(ctx, call.OrgID, t.Name, keys, kept)
	} else {
		written, err = call.Tables.InsertRow(ctx, call.OrgID, t.Name, kept)
	}
	if err != nil {
		return nil, err
	}
	call.AddEffect(svctype.Effect{Kind: "table_row_" + op, Target: t.Name, Detail: map[string]any{
		"row_id": written.ID, "inserted": inserted, "keys": keyValues(keys, kept),
	}})
	if dropped == nil {
		dropped = []string{}
	}
	return map[string]any{"table": t.Name, "written": 1, "dropped": dropped}, nil
}

func readRows(ctx context.Context, call *svctype.StepCall, t *svctype.Table) (any, error) {
	p := call.Properties
	where, _ := p["where"].(map[string]any)
	if p["where"] != nil && where == nil {
		return nil, errors.New("custom-table: where must resolve to an object")
	}
	limit := DefaultReadLimit
	if l, ok := p["limit"]; ok {
		var err error
		if limit, err = readLimit(l); err != nil {
			return nil, fmt.Errorf("custom-table: limit %s", err)
		}
	}
	scan, _ := p["scan"].(bool)
	if err := CheckRead(ctx, call.Tables, t, where, scan); err != nil {
		return nil, fmt.Errorf("custom-table: %w", err)
	}
	rows, err := call.Tables.ReadRows(ctx, call.OrgID, t.Name, where, limit)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r.Data
	}
	return out, nil
}

// isPath reports whether v is an @path, resolved at run time.
func isPath(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "@")
}

// readLimit reads a read's limit: an integer from 1 to MaxReadLimit.
func readLimit(v any) (int, error) {
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case json.Number:
		var err error
		if n, err = x.Float64(); err != nil {
			return 0, fmt.Errorf("must be an integer from 1 to %d (default %d), got %s", MaxReadLimit, DefaultReadLimit, x)
		}
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	default:
		return 0, fmt.Errorf("must be an integer from 1 to %d (default %d), got %s", MaxReadLimit, DefaultReadLimit, svctype.JSONType(v))
	}
	if n != math.Trunc(n) || n < 1 || n > MaxReadLimit {
		return 0, fmt.Errorf("must be an integer from 1 to %d (default %d), got %v", MaxReadLimit, DefaultReadLimit, n)
	}
	return int(n), nil
}

func stringList(v any, prop string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("custom-table: %s must be an array of column names", prop)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("custom-table: %s[%d] must be a column name", prop, i)
		}
		out[i] = s
	}
	return out, nil
}

func keyValues(keys []string, row map[string]any) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		out[k] = row[k]
	}
	return out
}

// readsOnly: a read (its operation written as a literal) writes nothing, so the executor may
// run it before the step's transaction, off the SQLite writer.
func readsOnly(props map[string]any) bool {
	op, _ := props["operation"].(string)
	return op == opRead
}
