package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Render interpolates every {{ path }} in tmpl with the text of Lookup(path, vars).
// Inside the braces the path may be written with or without its leading "@", so
// {{input.name}} and {{@input.name}} are the same; a missing path renders as "", or as
// the placeholder's default when it has one: {{gold.length ?? 0}}, {{input.note ?? "none"}}
// (see Fallback). A skipped step wrote no output, so a path into it is missing. A "{{"
// with no closing "}}" is kept as written (CheckTemplate rejects it at create time).
// Rendered values are not rendered again, so input text cannot inject placeholders.
func Render(tmpl string, vars Vars) string {
	if !strings.Contains(tmpl, "{{") {
		return tmpl
	}
	var b strings.Builder
	b.Grow(len(tmpl))
	rest := tmpl
	for {
		before, path, after, found := cutPlaceholder(rest)
		b.WriteString(before)
		if !found {
			return b.String()
		}
		path, def, hasDef := Fallback(path)
		v := Lookup(path, vars)
		if v == nil && hasDef {
			b.WriteString(def)
		} else {
			b.WriteString(Text(v))
		}
		rest = after
	}
}

// CheckTemplate validates a template string at workflow create time: it is at most
// MaxTemplateBytes long (ErrTemplateTooLarge), which is checked before anything else is
// read; every "{{" is closed by a "}}" (ErrInvalidTemplate); and no path in it, a whole
// "@path" or one inside {{ }}, has a reserved segment (ErrReservedSegment, see
// CheckPath).
func CheckTemplate(s string) error {
	if len(s) > MaxTemplateBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTemplateTooLarge, len(s), MaxTemplateBytes)
	}
	if isPath(s) {
		return CheckPath(s)
	}
	offset := 0
	rest := s
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			return nil
		}
		_, path, after, found := cutPlaceholder(rest)
		if !found {
			return fmt.Errorf("%w: unterminated \"{{\" at byte %d", ErrInvalidTemplate, offset+open)
		}
		path, _, _ = Fallback(path)
		if err := CheckPath(path); err != nil {
			return fmt.Errorf("%w (the placeholder at byte %d)", err, offset+open)
		}
		offset += len(rest) - len(after)
		rest = after
	}
}

// Fallback splits a placeholder's text at "??" into its path and the text it renders as
// when the path is missing or null: the default as written, trimmed, without one pair of
// enclosing double or single quotes ({{x ?? "n/a"}}, {{x ?? 0}}). A path that is there
// renders as its value, even when that is "", 0 or false: the default stands in for
// absence, as JavaScript's and C#'s ?? do, not for falsiness.
func Fallback(placeholder string) (path, def string, ok bool) {
	path, def, ok = strings.Cut(placeholder, "??")
	if !ok {
		return placeholder, "", false
	}
	def = strings.TrimSpace(def)
	if n := len(def); n >= 2 && (def[0] == '"' || def[0] == '\'') && def[n-1] == def[0] {
		def = def[1 : n-1]
	}
	return strings.TrimSpace(path), def, true
}

// cutPlaceholder splits s around its first complete {{ path }}: the text before it,
// the trimmed path, and the text after it. When there is none, before is all of s
// and found is false.
func cutPlaceholder(s string) (before, path, after string, found bool) {
	open := strings.Index(s, "{{")
	if open < 0 {
		return s, "", "", false
	}
	inner, after, found := strings.Cut(s[open+2:], "}}")
	if !found {
		return s, "", "", false
	}
	return s[:open], strings.TrimSpace(inner), after, true
}

// Text is the template text of a value: "" for nil, strings as they are, numbers
// without a trailing ".0" when integral (1, 1.5, 1e+21), "true"/"false", times in
// RFC 3339, and maps and arrays as compact JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatFloat(x, 64)
	case float32:
		return formatFloat(float64(x), 32)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case json.Number:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case fmt.Stringer:
		return x.String()
	}
	if s, ok := str(v); ok {
		return s
	}
	if f, ok := number(v); ok {
		return formatFloat(f, 64)
	}
	return compactJSON(v)
}

// formatFloat writes a float the way encoding/json does, so a float64 that holds an
// integer prints as one; NaN and infinities, which JSON lacks, print as strconv does.
func formatFloat(f float64, bits int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.FormatFloat(f, format, -1, bits)
}

// compactJSON encodes v without HTML escaping, so "<" stays "<" in rendered text. A
// value JSON cannot hold (a NaN inside a map, a channel) falls back to fmt's form.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
