package forms

import (
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ValidateSubmission returns what is wrong with a submitted payload data for s, nil when
// nothing is; pointers are into the submit body, /data/<key> (/data/<key>/<index> for an
// element of an array). The rules:
//
//   - A key that is no field of s is refused ("not a field of this form"): submitted keys
//     become run context keys, so an unknown one could overwrite @input or another step's
//     output.
//   - A display-only field (content, file, signature, table, lookup, computed) is never
//     submitted; a value for one is refused (null counts as none).
//   - No value means absent, null, a string of only white space, or an empty array. A
//     required field must have a value; a field that is not required may have none, and
//     then nothing else is checked.
//   - number, money, range: a JSON number (float64, json.Number or any Go number), finite,
//     within min and max, and, when step is set, a whole number of steps from min (or 0).
//   - text, multiline: a string. email: a string that net/mail parses as a bare address,
//     local@domain, with no display name. date: a string YYYY-MM-DD naming a real day.
//   - select: one option value (a string), or, when multiple, an array of distinct option
//     values. checklist: an array of distinct option values.
//
// ValidateSubmission does not require s to be valid and never panics on one that is not.
func ValidateSubmission(s *Schema, data map[string]any) []Problem {
	if s == nil {
		return []Problem{{Pointer: "", Message: "no form schema"}}
	}
	var out []Problem
	fields := map[string]bool{}
	for _, p := range s.Pages {
		for _, f := range p.Fields {
			if f.Key == "" || fields[f.Key] {
				continue // Validate reports it; the first field with a key decides
			}
			fields[f.Key] = true
			ptr := "/data/" + pointerToken(f.Key)
			v := data[f.Key]
			if f.Type.DisplayOnly() {
				if !empty(v) {
					out = append(out, Problem{ptr, fmt.Sprintf("a %s field is display-only and is not submitted", f.Type)})
				}
				continue
			}
			if empty(v) {
				if f.Required {
					out = append(out, Problem{ptr, "required"})
				}
				continue
			}
			out = append(out, checkValue(f, v, ptr)...)
		}
	}
	var unknown []string
	for k := range data {
		if !fields[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		out = append(out, Problem{"/data/" + pointerToken(k), "not a field of this form"})
	}
	return out
}

// empty reports whether v counts as no value.
func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(t) == ""
	case []any:
		return len(t) == 0
	case []string:
		return len(t) == 0
	}
	return false
}

// checkValue checks one value (which has a value: see empty) against its field.
func checkValue(f Field, v any, ptr string) []Problem {
	switch {
	case f.Type.Numeric():
		n, ok := number(v)
		if !ok {
			return []Problem{{ptr, "must be a number, got " + kind(v)}}
		}
		return checkNumber(f, n, ptr)
	case f.Type == TypeText || f.Type == TypeMultiline:
		if _, ok := v.(string); !ok {
			return []Problem{{ptr, "must be a string, got " + kind(v)}}
		}
	case f.Type == TypeEmail:
		s, ok := v.(string)
		if !ok {
			return []Problem{{ptr, "must be a string, got " + kind(v)}}
		}
		if !validEmail(s) {
			return []Problem{{ptr, fmt.Sprintf("%q is not an email address", s)}}
		}
	case f.Type == TypeDate:
		s, ok := v.(string)
		if !ok {
			return []Problem{{ptr, "must be a date string (YYYY-MM-DD), got " + kind(v)}}
		}
		if !validDate(s) {
			return []Problem{{ptr, fmt.Sprintf("%q is not a date of the form YYYY-MM-DD", s)}}
		}
	case f.Type == TypeSelect && !f.Multiple:
		s, ok := v.(string)
		if !ok {
			return []Problem{{ptr, "must be one of the option values (a string), got " + kind(v)}}
		}
		if !hasOption(f, s) {
			return []Problem{{ptr, fmt.Sprintf("%q is not one of the options", s)}}
		}
	case f.Type.Choice(): // checklist, multiple select
		return checkValues(f, v, ptr)
	}
	return nil
}

func checkNumber(f Field, n float64, ptr string) []Problem {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return []Problem{{ptr, "must be a finite number"}}
	}
	if f.Min != nil && n < *f.Min {
		return []Problem{{ptr, fmt.Sprintf("must be at least %v", *f.Min)}}
	}
	if f.Max != nil && n > *f.Max {
		return []Problem{{ptr, fmt.Sprintf("must be at most %v", *f.Max)}}
	}
	if f.Step != nil && *f.Step > 0 {
		base := 0.0
		if f.Min != nil {
			base = *f.Min
		}
		q := (n - base) / *f.Step
		if math.Abs(q-math.Round(q)) > 1e-9*math.Max(1, math.Abs(q)) {
			return []Problem{{ptr, fmt.Sprintf("must be %v plus a multiple of %v", base, *f.Step)}}
		}
	}
	return nil
}

func checkValues(f Field, v any, ptr string) []Problem {
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	case []string:
		for _, s := range t {
			items = append(items, s)
		}
	default:
		return []Problem{{ptr, "must be an array of option values, got " + kind(v)}}
	}
	var out []Problem
	seen := map[string]bool{}
	for i, it := range items {
		ip := ptr + "/" + strconv.Itoa(i)
		s, ok := it.(string)
		switch {
		case !ok:
			out = append(out, Problem{ip, "must be an option value (a string), got " + kind(it)})
		case !hasOption(f, s):
			out = append(out, Problem{ip, fmt.Sprintf("%q is not one of the options", s)})
		case seen[s]:
			out = append(out, Problem{ip, fmt.Sprintf("%q is chosen twice", s)})
		}
		seen[s] = true
	}
	return out
}

func hasOption(f Field, v string) bool {
	for _, o := range f.Options {
		if o.Value == v {
			return true
		}
	}
	return false
}

// number reads a JSON number as encoding/json gives it (float64 or, with UseNumber,
// json.Number) or any Go number. Numeric strings are not numbers.
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	case bool, string, nil:
		return 0, false
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(r.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(r.Uint()), true
	case reflect.Float32, reflect.Float64:
		return r.Float(), true
	}
	return 0, false
}

// validEmail accepts what net/mail parses as an address with no display name and no
// comment: the submitted text must be the address itself, local@domain.
func validEmail(s string) bool {
	if s != strings.TrimSpace(s) || strings.ContainsAny(s, "<>()\r\n") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1
}

func validDate(s string) bool {
	if len(s) != len("2006-01-02") {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// kind names v's JSON type for a message.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any, []string:
		return "an array"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
