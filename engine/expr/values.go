package expr

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcflow/svcflow/internal/jsonnum"
)

// Values are what encoding/json decodes into an any (map[string]any, []any, float64,
// string, bool, nil), plus whatever Go callers put into Vars. The helpers below give
// the other Go shapes (int64, []string, map[string]string, ...) the meaning of their
// JSON counterparts, with a fast path for the JSON shapes themselves.

// number reports v as a float64 when it is a Go number of any kind or a json.Number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uintptr:
		return float64(x), true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case nil, string, bool, []any, map[string]any:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// str reports v as a string when it is one (including named string types, but not
// json.Number, which is a number).
func str(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case nil, json.Number, float64, bool, []any, map[string]any:
		return "", false
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// list reports v as a []any when it is an array. A []byte is not an array here: it
// stands for opaque content, not a list of numbers.
func list(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case nil, string, float64, json.Number, bool, map[string]any, []byte:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// object reports v as a map[string]any when it is a map with string keys.
func object(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case nil, string, float64, json.Number, bool, []any:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		out[iter.Key().String()] = iter.Value().Interface()
	}
	return out, true
}

// size is the length of an array, a map or a string (in characters, not bytes).
func size(v any) (int, bool) {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x), true
	case []any:
		return len(x), true
	case map[string]any:
		return len(x), true
	case nil, float64, json.Number, bool, []byte:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len(), true
	case reflect.String:
		return utf8.RuneCountInString(rv.String()), true
	}
	return 0, false
}

// truthy is the boolean reading of a value: false for nil, false, 0, NaN, "", and
// empty arrays and maps; true for everything else.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	if f, ok := number(v); ok {
		return f != 0 && !math.IsNaN(f)
	}
	if n, ok := size(v); ok {
		return n > 0
	}
	return true
}

// isEmpty is true for nil, "", an empty array and an empty map.
func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	if _, ok := number(v); ok {
		return false
	}
	if n, ok := size(v); ok {
		return n == 0
	}
	return false
}

// equalValues compares like JSON values: numbers numerically across Go kinds, arrays
// and maps deeply, nil only to nil. Values of different shapes are not equal.
func equalValues(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if c, ok, isNumber := exactCompare(a, b); isNumber {
		return ok && c == 0
	}
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	_, at := a.(time.Time)
	_, bt := b.(time.Time)
	if at || bt {
		x, ok1 := asTime(a)
		y, ok2 := asTime(b)
		return ok1 && ok2 && x.Equal(y)
	}
	if x, ok := str(a); ok {
		y, ok := str(b)
		return ok && x == y
	}
	if x, ok := a.(bool); ok {
		y, ok := b.(bool)
		return ok && x == y
	}
	if x, ok := list(a); ok {
		y, ok := list(b)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if x, ok := object(a); ok {
		y, ok := object(b)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalValues(xv, yv) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// compare orders two numbers, two strings (lexically, so ISO 8601 dates order by
// time) or two times. ok is false for any other pair, and for NaN.
func compare(a, b any) (c int, ok bool) {
	if c, ok, isNumber := exactCompare(a, b); isNumber {
		return c, ok
	}
	if x, ok := number(a); ok {
		y, ok := number(b)
		if !ok || math.IsNaN(x) || math.IsNaN(y) {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	_, at := a.(time.Time)
	_, bt := b.(time.Time)
	if at || bt {
		x, ok1 := asTime(a)
		y, ok2 := asTime(b)
		if !ok1 || !ok2 {
			return 0, false
		}
		return x.Compare(y), true
	}
	x, ok1 := str(a)
	y, ok2 := str(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	return strings.Compare(x, y), true
}

// exactCompare compares two numbers of which one at least is a json.Number (a number
// from JSON, kept as its text) on their decimal digits, not as float64s: two 30-digit
// account numbers that differ in the last digit differ. isNumber is false when neither is
// a json.Number (the caller compares as before) and ok false when the other is not a
// number.
func exactCompare(a, b any) (c int, ok, isNumber bool) {
	x, xn := a.(json.Number)
	y, yn := b.(json.Number)
	switch {
	case xn && yn:
		c, ok = jsonnum.Cmp(string(x), string(y))
		return c, ok, true
	case xn:
		f, isNum := number(b)
		if !isNum {
			return 0, false, true
		}
		c, ok = jsonnum.CmpFloat(string(x), f)
		return c, ok, true
	case yn:
		f, isNum := number(a)
		if !isNum {
			return 0, false, true
		}
		c, ok = jsonnum.CmpFloat(string(y), f)
		return -c, ok, true
	}
	return 0, false, false
}

// asTime reads a time.Time, or an RFC 3339 string, as a time. It lets a Go caller put
// time.Now() into Vars and still compare it with dates that came in as JSON text.
func asTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x, true
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		return t, err == nil
	}
	return time.Time{}, false
}

// Depth is the nesting depth of maps and arrays in a JSON value: a scalar is 0,
// {"a": 1} and [1] are 1, {"a": [1]} is 2.
func Depth(v any) int {
	deepest := 0
	if l, ok := list(v); ok {
		for _, c := range l {
			deepest = max(deepest, Depth(c))
		}
		return deepest + 1
	}
	if m, ok := object(v); ok {
		for _, c := range m {
			deepest = max(deepest, Depth(c))
		}
		return deepest + 1
	}
	return 0
}

// deeperThan reports whether Depth(v) > n, looking no more than n+1 levels down: a
// hostile value nested far deeper is refused after n levels of work, not all of them.
func deeperThan(v any, n int) bool {
	if l, ok := list(v); ok {
		return n <= 0 || slices.ContainsFunc(l, func(c any) bool { return deeperThan(c, n-1) })
	}
	if m, ok := object(v); ok {
		if n <= 0 {
			return true
		}
		for _, c := range m {
			if deeperThan(c, n-1) {
				return true
			}
		}
	}
	return false
}
