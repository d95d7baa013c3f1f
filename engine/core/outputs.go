package core

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

// outputs is the run's context after c, without the input, as events carry it: a value
// larger than EventValueNodes JSON values is carried as a reference to the route that
// serves it ({result_reference, truncated, length?}), so that ending a run whose matcher
// produced 50,000 pairs does not copy them into the outbox (and every webhook body).
func (e *Core) outputs(st *runState, c *commit) map[string]any {
	out := make(map[string]any, len(st.vars)+len(c.outputs))
	put := func(k string, v any) {
		if k == "input" {
			return
		}
		if !withinNodes(v, EventValueNodes) {
			ref := map[string]any{"result_reference": "/runs/" + st.run.ID + "/context/" + k, "truncated": true}
			if n, ok := arrayLength(v); ok {
				ref["length"] = n
			}
			out[k] = ref
			return
		}
		// Small enough to carry: a value held as bytes is carried decoded, as it would be
		// had it never been (the event is the same whichever worker ended the run).
		out[k] = materialize(v)
	}
	for k, v := range st.vars {
		put(k, v)
	}
	for _, p := range c.earlier {
		for k, v := range p.outputs {
			put(k, v)
		}
	}
	for k, v := range c.outputs {
		put(k, v)
	}
	return out
}

// EventValueNodes is how many JSON values (objects, arrays, scalars, nested) one context
// value may hold to be carried whole in workflow_run_completed and workflow_run_failed.
const EventValueNodes = 10_000

// withinNodes reports whether v holds at most budget JSON values, stopping early.
func withinNodes(v any, budget int) bool {
	left := budget
	var walk func(v any) bool
	walk = func(v any) bool {
		left--
		if left < 0 {
			return false
		}
		switch x := v.(type) {
		case svctype.EncodedArray:
			if x.Len() > left {
				return false
			}
			return walk(materialize(x))
		case *expr.Lazy:
			// Count its values in its bytes, up to the budget, without decoding them.
			n := 0
			var count func(r gjson.Result) bool
			count = func(r gjson.Result) bool {
				n++
				if n > left+1 {
					return false
				}
				if r.IsObject() || r.IsArray() {
					ok := true
					r.ForEach(func(_, el gjson.Result) bool { ok = count(el); return ok })
					return ok
				}
				return true
			}
			ok := count(gjson.ParseBytes(x.Raw()))
			left -= n - 1
			return ok && left >= 0
		case map[string]any:
			for _, el := range x {
				if !walk(el) {
					return false
				}
			}
		case []any:
			if len(x) > left {
				return false
			}
			for _, el := range x {
				if !walk(el) {
					return false
				}
			}
		}
		return true
	}
	return walk(v)
}

// summaryLimit bounds the input summary and output copy kept in a step record.
const summaryLimit = 4 << 10

// summarize keeps v for the evidence when its JSON is small, else a marker with its size.
func summarize(v any) json.RawMessage {
	switch x := v.(type) {
	case svctype.EncodedArray:
		out, _ := json.Marshal(map[string]any{"truncated": true, "length": x.Len()})
		return out
	case *expr.Lazy:
		out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(x.Raw())})
		return out
	case svctype.RawJSON:
		out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(x)})
		return out
	case svctype.SourceRecords:
		out, _ := json.Marshal(map[string]any{"truncated": true, "length": x.Len(), "bytes": x.Size()})
		return out
	case svctype.ContextOutputs:
		m := make(map[string]json.RawMessage, len(x))
		for k, el := range x {
			m[k] = summarize(el)
		}
		out, _ := json.Marshal(m)
		return out
	case []any:
		// A long array is summarised by its length without encoding it.
		if len(x) > 256 {
			out, _ := json.Marshal(map[string]any{"truncated": true, "length": len(x)})
			return out
		}
	case map[string]any:
		// An object holding a long array (a matcher's resolved legs) is summarised member by
		// member, so that the array is not encoded only to be found too long.
		for _, el := range x {
			arr, ok := el.([]any)
			_, raw := el.(svctype.RawJSON)
			_, src := el.(svctype.SourceRecords)
			if raw || src || ok && len(arr) > 256 {
				return summarize(svctype.ContextOutputs(x))
			}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	if len(b) <= summaryLimit {
		return b
	}
	m := map[string]any{"truncated": true, "bytes": len(b)}
	if arr, ok := v.([]any); ok {
		m["length"] = len(arr)
	}
	out, _ := json.Marshal(m)
	return out
}

// normalize turns a step's Go output into plain JSON values (maps, slices, float64) so that
// paths see the same shapes in memory as after a reload from the database.
func normalize(v any) any {
	switch v.(type) {
	case *expr.Lazy, svctype.EncodedArray:
		return v // JSON already, kept as bytes
	case nil, string, bool, float64, json.Number, map[string]any, []any:
		if !containsGoTypes(v) {
			return v
		}
	}
	if out, ok := plainJSON(v); ok {
		return out
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := jsonnum.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// plainJSON is what a JSON round trip (normalize) makes of v, made without one, for the
// shapes steps return most (a table write's {"table", "written": 1, "dropped": []string}):
// integers, strings, booleans, nil, and maps and slices of them. ok is false for anything
// else, floats included (their text is encoding/json's to choose), and for a string that
// is not UTF-8 (the round trip replaces its bad bytes).
func plainJSON(v any) (out any, ok bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), true
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), true
	case []string:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, s := range x {
			if !utf8.ValidString(s) {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	case []any:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, el := range x {
			if out[i], ok = plainJSON(el); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		if x == nil {
			return nil, true
		}
		out := make(map[string]any, len(x))
		for k, el := range x {
			if !utf8.ValidString(k) {
				return nil, false
			}
			if out[k], ok = plainJSON(el); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

func containsGoTypes(v any) bool {
	switch x := v.(type) {
	case nil, string, bool, float64, json.Number, *expr.Lazy, svctype.EncodedArray:
		return false
	case map[string]any:
		for _, el := range x {
			if containsGoTypes(el) {
				return true
			}
		}
		return false
	case []any:
		for _, el := range x {
			if containsGoTypes(el) {
				return true
			}
		}
		return false
	}
	return true
}

// applyOutput stores a step's output: each entry of a ContextOutputs under its own key, and
// the output itself under the step's outputKey.
func applyOutput(set func(key string, v any), key string, out any) {
	if co, ok := out.(svctype.ContextOutputs); ok {
		for k, v := range co {
			set(k, v)
		}
		out = map[string]any(co)
	}
	set(key, out)
}
