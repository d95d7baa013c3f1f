package expr

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/svcflow/svcflow/internal/fuzzbound"
)

// Fuzz targets of the expression surface. Without -fuzz they run their seeds (f.Add and
// testdata/fuzz/<Name>/) as ordinary tests; `make fuzz` runs each for FUZZTIME.
//
//	go test ./engine/expr -run '^$' -fuzz '^FuzzCondition$' -fuzztime 30s

// FuzzPath: Lookup never panics, ignores one leading "@", finds a key it is given as a
// segment, and finds nothing through a reserved segment, which CheckPath refuses
// (with ErrReservedSegment, and nothing else); Resolve agrees with Lookup.
func FuzzPath(f *testing.F) {
	for _, seed := range []struct{ path, key string }{
		{"", ""}, {"@", "a"}, {".", "."}, {"..", "0"}, {"@input.name", "name"},
		{"input.tags.0", "tags"}, {"@matched.1.amount", "length"}, {"@matched.length", "1"},
		{"@input.name.length", "-1"}, {"@input.weird.length", "01"}, {"@strings.9", "99999999999999999999"},
		{"@matched.99999999999999999999", "+1"}, {"@matched.-1", " "}, {"@headers.Accept.x", "Accept"},
		{"@@x", "@x"}, {"@input.nested.deep.x.y.z", "é"}, {"{{input.name}}", "{{x}}"}, {"@input..", ""},
		{"@input.__proto__", "__proto__"}, {"@input.constructor.name", "constructor"},
		{"@input.a.prototype", "prototype"}, {"@__proto__", "__proto"}, {"@__run_id", "Constructor"},
	} {
		f.Add(seed.path, seed.key)
	}
	vars := testVars(f)
	vars["__proto__"] = map[string]any{"polluted": true}
	vars["constructor"] = "Object"
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, path, key string) {
		var got any
		var checkErr error
		fuzzbound.Within(t, "Lookup and CheckPath", func() {
			got = Lookup(path, vars)
			checkErr = CheckPath(path)
		})
		// One leading "@" is optional: "input.x" is "@input.x" (and "@@x" is root "@x").
		bare := strings.TrimPrefix(path, "@")
		if !strings.HasPrefix(bare, "@") {
			for _, p := range []string{bare, "@" + bare} {
				if again := Lookup(p, vars); !reflect.DeepEqual(got, again) {
					t.Fatalf("Lookup(%q) = %v but Lookup(%q) = %v", path, got, p, again)
				}
			}
		}
		if checkErr != nil {
			if !errors.Is(checkErr, ErrReservedSegment) {
				t.Fatalf("CheckPath(%q) = %v, not ErrReservedSegment", path, checkErr)
			}
			if got != nil {
				t.Fatalf("Lookup(%q) went through a reserved segment to %v", path, got)
			}
		}

		// A key is found as the segment it is, unless it is reserved or holds a ".".
		want := map[string]any{"found": true}
		scope := Vars{"r": map[string]any{key: want}, "l": []any{want}}
		found := Lookup("@r."+key, scope)
		switch {
		case strings.Contains(key, "."):
		case reserved(key):
			if found != nil {
				t.Fatalf("reserved key %q was found", key)
			}
		case !reflect.DeepEqual(found, want):
			t.Fatalf("Lookup(@r.%s) = %v, want the value stored under that key", key, found)
		}
		if i, ok := index(key); ok && i == 0 && !reflect.DeepEqual(Lookup("@l."+key, scope), want) {
			t.Fatalf("index %q of a one-element array did not find it", key)
		}

		if isPath("@"+bare) && !strings.HasPrefix(bare, "@") {
			var resolved any
			var err error
			fuzzbound.Within(t, "Resolve", func() { resolved, err = New().Resolve(ctx, "@"+bare, vars) })
			if err != nil {
				t.Fatalf("Resolve of a path without prefixes failed: %v", err)
			}
			if !reflect.DeepEqual(resolved, got) {
				t.Fatalf("Resolve(%q) = %v, Lookup = %v", path, resolved, got)
			}
		}
	})
}

// placeholder is an independent statement of what Render replaces: from the first "{{",
// the shortest text to a "}}".
var placeholder = regexp.MustCompile(`(?s)\{\{.*?\}\}`)

// defaultOf is what a placeholder renders as when nothing is in scope: "" without a
// "??", else the text after the first "??", trimmed, less one pair of matching quotes.
func defaultOf(placeholder string) string {
	inner := placeholder[2 : len(placeholder)-2]
	i := strings.Index(inner, "??")
	if i < 0 {
		return ""
	}
	def := strings.TrimSpace(inner[i+2:])
	for _, q := range []string{`"`, "'"} {
		if len(def) >= 2 && strings.HasPrefix(def, q) && strings.HasSuffix(def, q) {
			return def[1 : len(def)-1]
		}
	}
	return def
}

// FuzzTemplate: CheckTemplate answers nil or one of its three errors (the size first);
// Render without variables replaces exactly the placeholders by their defaults ("" when
// they have none), leaves text without "{{"
// alone, and never renders a rendered value again.
func FuzzTemplate(f *testing.F) {
	for _, seed := range []struct{ tmpl, value string }{
		{"", ""}, {"hello", "Ada"}, {"{{input.name}}", "{{input.name}}"}, {"{{ @input.name }} and {{matched.length}}", "x"},
		{"{{", "}}"}, {"}}{{", "{{"}, {"{{a}}}", "{"}, {"{{{a}}", ""}, {"{{}}", "@input.name"},
		{"a {{b", "c"}, {"{{input.__proto__}}", "x"}, {"{{ constructor }}", ""}, {"@input.prototype", "y"},
		{"@input.name", "@input.name"}, {"\xff{{\xfe}}\x00", "\xff"}, {"{{input.tags}} {{now}}", "\n"},
		{"{{??0}}", ""}, {"{{ x ?? 'n/a' }}{{y??\"\"}}", ""}, {"{{a ?? b ?? c}}", "?"},
	} {
		f.Add(seed.tmpl, seed.value)
	}
	vars := testVars(f)
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		var err error
		var bare, rendered string
		fuzzbound.Within(t, "CheckTemplate and Render", func() {
			err = CheckTemplate(tmpl)
			bare = Render(tmpl, nil)
			rendered = Render(tmpl, vars)
		})
		switch {
		case len(tmpl) > MaxTemplateBytes:
			if !errors.Is(err, ErrTemplateTooLarge) {
				t.Fatalf("a %d-byte template gave %v, not ErrTemplateTooLarge", len(tmpl), err)
			}
		case err != nil && !errors.Is(err, ErrInvalidTemplate) && !errors.Is(err, ErrReservedSegment):
			t.Fatalf("CheckTemplate(%q) = %v: not one of its errors", tmpl, err)
		}
		if want := placeholder.ReplaceAllStringFunc(tmpl, defaultOf); bare != want {
			t.Fatalf("Render(%q, nil) = %q, want %q", tmpl, bare, want)
		}
		if !strings.Contains(tmpl, "{{") && rendered != tmpl {
			t.Fatalf("Render changed %q, which has no placeholder, to %q", tmpl, rendered)
		}
		if err == nil && strings.Contains(tmpl, "{{") && !placeholder.MatchString(tmpl) {
			t.Fatalf("CheckTemplate accepted %q, whose \"{{\" is never closed", tmpl)
		}

		// A value is rendered as it is, never as a template of its own.
		scope := Vars{"v": value}
		if got := Render("{{v}}", scope); got != value {
			t.Fatalf("Render({{v}}) = %q, want the value %q", got, value)
		}
		if got := Render("<{{ @v }}|{{v}}>", scope); got != "<"+value+"|"+value+">" {
			t.Fatalf("Render of two placeholders = %q", got)
		}
	})
}

// conditionErrors are the sentinels a *CompileError may wrap.
var conditionErrors = []error{
	ErrInvalidCondition, ErrTooDeep, ErrConditionTooLarge,
	ErrTemplateTooLarge, ErrInvalidTemplate, ErrReservedSegment,
}

// FuzzCondition: Compile answers a condition or a *CompileError with one of the package's
// sentinels (never gval's error on an expression Compile wrote itself); a compiled
// condition evaluates the same way twice, as EvalCondition does, and its JSON round trip
// compiles to the same expression. input, when it is JSON, is the run's @input.
func FuzzCondition(f *testing.F) {
	for _, seed := range []string{
		`{"equal": ["@input.status", "open"]}`,
		`{"greaterThan": [{"length": ["@matched"]}, 0]}`,
		`{"length": "@matched"}`,
		`{"and": [{"or": [true, false]}, {"not": {"exists": "@x"}}]}`,
		`{"matches": ["@input.name", "^A"]}`,
		`{"matches": ["@input.name", "@bad_pattern"]}`,
		`{"matches": ["@input.name", "(unclosed"]}`,
		`{"in": ["a", ["a", "@input.name", {"x": "{{input.name}}"}]]}`,
		`{"in": ["@input.status", ["open", "@input.__proto__"]]}`,
		`{"contains": ["@input.tags", "urgent"]}`,
		`{"startsWith": ["{{input.name}}!", "A"]}`,
		`{"lessThanOrEqual": ["@input.date", "@now"]}`,
		`{"isEmpty": "@input.no_items"}`,
		`{"exists": "@input.constructor"}`,
		`{"equal": ["{{unterminated", 1]}`,
		`{"and": []}`,
		`{"unknown": [1]}`,
		`{}`,
		`[]`,
		`null`,
		`"@input.name"`,
		`{"not": [[[[[[]]]]]]}`,
		`{"equal": [{"equal": [1]}, 2]}`,
		`{"equal": [[[[[[[[[[1]]]]]]]]]], 1]}`,
		`{"a/b~c": []}`,
		`{"or": [{"not": {"not": {"not": {"equal": [1, 1]}}}}, true]}`,
	} {
		f.Add(seed, `{"name": "Ada", "status": "open", "tags": ["urgent"], "constructor": 1}`)
	}
	vars := testVars(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, src, input string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		scope := vars
		var in any
		if json.Unmarshal([]byte(input), &in) == nil {
			scope = Vars{}
			for k, x := range vars {
				scope[k] = x
			}
			scope["input"] = in
		}
		var c *Condition
		var err error
		fuzzbound.Within(t, "Compile", func() { c, err = Compile(v) })
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile(%s) = %v (%T), not a *CompileError", src, err, err)
			}
			for _, sentinel := range conditionErrors {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("Compile(%s) = %v: wraps none of the package's errors", src, err)
		}

		var got, again bool
		var err1, err2 error
		var value any
		fuzzbound.Within(t, "Eval", func() {
			got, err1 = c.Eval(ctx, scope)
			again, err2 = c.Eval(ctx, scope)
			value, _ = c.Value(ctx, scope)
		})
		if got != again || (err1 == nil) != (err2 == nil) {
			t.Fatalf("two evaluations of %s differ: %v/%v, %v/%v", src, got, again, err1, err2)
		}
		if err1 == nil && truthy(value) != got {
			t.Fatalf("Eval = %v but Value = %v", got, value)
		}
		if once, err := EvalCondition(ctx, v, scope); once != got || (err == nil) != (err1 == nil) {
			t.Fatalf("EvalCondition = %v, %v; Eval = %v, %v", once, err, got, err1)
		}

		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("a decoded condition does not encode: %v", err)
		}
		var back any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		c2, err := Compile(back)
		if err != nil {
			t.Fatalf("the JSON round trip of %s does not compile: %v", src, err)
		}
		if c2.expr != c.expr {
			t.Fatalf("round trip compiled %q, then %q", c.expr, c2.expr)
		}
	})
}
