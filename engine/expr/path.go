package expr

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Vars is the evaluation scope: root names to values. The executor fills it with
// "input", each step's outputKey, "item", "index", "__run_id", "__step", "now",
// "__approved", "__comment" and so on. Looking up "@x.y" finds root "x", then walks "y".
type Vars map[string]any

// Lookup resolves a path, with or without its leading "@": "input.a.b",
// "@matched.0.amount", "@rows.length", "@item", "@__run_id".
//
// Segments are split on ".". A numeric segment indexes an array (and is an ordinary key
// on a map). "length" on an array, a map or a string gives its length as an int (a
// string's length counts characters), unless a map has a real key "length". A path
// that leads nowhere gives nil, and so does a path with a reserved segment (see
// CheckPath), whatever the data holds: Lookup never fails and never panics.
func Lookup(path string, vars Vars) any {
	path = strings.TrimPrefix(path, "@")
	if path == "" || vars == nil {
		return nil
	}
	root, rest, more := strings.Cut(path, ".")
	if reserved(root) {
		return nil
	}
	v := deref(vars[root])
	for more && v != nil {
		var seg string
		seg, rest, more = strings.Cut(rest, ".")
		if reserved(seg) {
			return nil
		}
		v = deref(step(v, seg))
	}
	return v
}

// CheckPath refuses a path, with or without its leading "@", that has a reserved
// segment: __proto__, constructor or prototype (ErrReservedSegment). They are the names
// through which JavaScript reaches an object's prototype, not a field's value, so a
// definition naming them means something else to every JavaScript reader of the same
// data (the browser SDK, webhook receivers); the spec's paths name fields of the input
// and of step outputs. Lookup gives nil for such a path; CheckTemplate and Compile
// refuse it when a workflow is created.
func CheckPath(path string) error {
	rest, more := strings.TrimPrefix(path, "@"), true
	for more {
		var seg string
		seg, rest, more = strings.Cut(rest, ".")
		if reserved(seg) {
			return fmt.Errorf("%w %q: a path may not name __proto__, constructor or prototype", ErrReservedSegment, seg)
		}
	}
	return nil
}

// reserved reports whether seg is a path segment that names nothing (CheckPath).
func reserved(seg string) bool {
	switch seg {
	case "__proto__", "constructor", "prototype":
		return true
	}
	return false
}

// step walks one path segment down from v.
func step(v any, seg string) any {
	switch x := v.(type) {
	case map[string]any:
		if child, ok := x[seg]; ok {
			return child
		}
		if seg == "length" {
			return len(x)
		}
		return nil
	case []any:
		if seg == "length" {
			return len(x)
		}
		if i, ok := index(seg); ok && i < len(x) {
			return x[i]
		}
		return nil
	case string:
		if seg == "length" {
			return utf8.RuneCountInString(x)
		}
		return nil
	case nil, float64, bool, json.Number:
		return nil
	}
	return reflectStep(reflect.ValueOf(v), seg)
}

// reflectStep is step for the Go shapes a caller may put into Vars: typed slices and
// maps with string keys, possibly behind pointers.
func reflectStep(rv reflect.Value, seg string) any {
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Map:
		keyType := rv.Type().Key()
		if keyType.Kind() != reflect.String {
			return nil
		}
		if child := rv.MapIndex(reflect.ValueOf(seg).Convert(keyType)); child.IsValid() {
			return child.Interface()
		}
		if seg == "length" {
			return rv.Len()
		}
	case reflect.Slice, reflect.Array:
		if seg == "length" {
			return rv.Len()
		}
		if i, ok := index(seg); ok && i < rv.Len() {
			return rv.Index(i).Interface()
		}
	case reflect.String:
		if seg == "length" {
			return utf8.RuneCountInString(rv.String())
		}
	}
	return nil
}

// index reads an array index: decimal digits only, so "-1" and "+1" are not indexes.
func index(seg string) (int, bool) {
	if seg == "" {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(seg)
	return i, err == nil
}

// isPath reports whether s is a whole "@path" token, whose value is looked up raw. A
// string that merely starts with "@" but holds spaces or braces ("@ team, see {{x}}")
// is text.
func isPath(s string) bool {
	return len(s) > 1 && s[0] == '@' && !strings.ContainsAny(s, " \t\r\n{}")
}
