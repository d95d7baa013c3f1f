package expr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testVars is the run context most tests evaluate against, decoded from JSON the way
// the executor holds it, plus a few Go-typed values a Go caller might add.
func testVars(t testing.TB) Vars {
	t.Helper()
	var vars Vars
	err := json.Unmarshal([]byte(`{
		"input": {
			"name": "Ada",
			"amount": 12.5,
			"count": 3,
			"status": "open",
			"tags": ["urgent", "billing"],
			"empty": "",
			"none": null,
			"zero": 0,
			"no_items": [],
			"no_fields": {},
			"date": "2024-03-01",
			"html": "<b>&</b>",
			"nested": {"deep": {"x": 1}},
			"weird": {"length": "real key", "0": "zero key", "a.b": "dotted"}
		},
		"matched": [{"amount": 10, "id": "m1"}, {"amount": 20.75, "id": "m2"}],
		"__run_id": "run_123",
		"__step": 2,
		"__approved": true,
		"__comment": "looks good",
		"bad_pattern": "(",
		"pattern": "^A"
	}`), &vars)
	require.NoError(t, err)
	vars["int64"] = int64(3)
	vars["uint8"] = uint8(7)
	vars["float32"] = float32(1.5)
	vars["strings"] = []string{"x", "y"}
	vars["headers"] = map[string]string{"Accept": "json"}
	vars["now"] = time.Date(2024, 3, 2, 10, 0, 0, 0, time.UTC)
	return vars
}

func TestLookup(t *testing.T) {
	t.Parallel()
	vars := testVars(t)
	tests := []struct {
		path string
		want any
	}{
		{"input.name", "Ada"},
		{"@input.name", "Ada"},
		{"@input.nested.deep.x", 1.0},
		{"@input.nested", map[string]any{"deep": map[string]any{"x": 1.0}}},
		{"@matched.0.amount", 10.0},
		{"@matched.1.id", "m2"},
		{"@matched.2.id", nil},
		{"@matched.-1", nil},
		{"@matched.+1", nil},
		{"@matched.x", nil},
		{"@matched.length", 2},
		{"@input.tags.length", 2},
		{"@input.name.length", 3},
		{"@input.no_fields.length", 0},
		{"@input.nested.length", 1},
		{"@input.weird.length", "real key"},
		{"@input.weird.0", "zero key"},
		{"@input.weird.a.b", nil},
		{"@input.none", nil},
		{"@input.none.x", nil},
		{"@input.amount.x", nil},
		{"@input.missing.deeper.still", nil},
		{"@missing", nil},
		{"@__run_id", "run_123"},
		{"@__approved", true},
		{"@int64", int64(3)},
		{"@strings.1", "y"},
		{"@strings.length", 2},
		{"@strings.5", nil},
		{"@headers.Accept", "json"},
		{"@headers.length", 1},
		{"@", nil},
		{"", nil},
		{"input.", nil},
		{"..", nil},
		{"@input..name", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Lookup(tt.path, vars))
		})
	}

	t.Run("nil vars", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, Lookup("@input.name", nil))
	})
	t.Run("unicode string length counts characters", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 4, Lookup("s.length", Vars{"s": "café"}))
	})
	t.Run("pointer to slice", func(t *testing.T) {
		t.Parallel()
		s := []int{4, 5}
		require.Equal(t, 5, Lookup("p.1", Vars{"p": &s}))
		var nilPtr *[]int
		require.Nil(t, Lookup("p.1", Vars{"p": nilPtr}))
	})
}

func TestRender(t *testing.T) {
	t.Parallel()
	vars := testVars(t)
	tests := []struct {
		name string
		tmpl string
		want string
	}{
		{"no placeholders", "plain text", "plain text"},
		{"without @", "Hi {{input.name}}", "Hi Ada"},
		{"with @", "Hi {{@input.name}}", "Hi Ada"},
		{"spaces inside braces", "Hi {{  @input.name  }}!", "Hi Ada!"},
		{"missing path", "[{{input.missing}}]", "[]"},
		{"null value", "[{{input.none}}]", "[]"},
		{"integral float", "{{input.count}}", "3"},
		{"fractional float", "{{input.amount}}", "12.5"},
		{"int64", "{{int64}}", "3"},
		{"uint8", "{{uint8}}", "7"},
		{"float32", "{{float32}}", "1.5"},
		{"bool", "{{__approved}}", "true"},
		{"length", "{{matched.length}} matches", "2 matches"},
		{"array as JSON", "{{input.tags}}", `["urgent","billing"]`},
		{"map as JSON", "{{input.nested}}", `{"deep":{"x":1}}`},
		{"no HTML escaping", "{{input.html}}", "<b>&</b>"},
		{"time", "{{now}}", "2024-03-02T10:00:00Z"},
		{"several", "{{input.name}}/{{__run_id}}/{{__step}}", "Ada/run_123/2"},
		{"unterminated kept", "a {{input.name", "a {{input.name"},
		{"unterminated after one", "{{input.name}} {{", "Ada {{"},
		{"empty placeholder", "a{{}}b", "ab"},
		{"value is not rendered again", "{{x}}", "{{input.name}}"},
		{"default for a missing path", "({{gold.length ?? 0}} gold)", "(0 gold)"},
		{"default for a null", "[{{input.none ?? \"none\"}}]", "[none]"},
		{"default quoted in single quotes", "[{{ input.missing ?? 'not counted' }}]", "[not counted]"},
		{"default unused when present", "{{matched.length ?? 0}} matches", "2 matches"},
		{"default unused for a present false", "{{__approved ?? no}}", "true"},
		{"empty default", "[{{input.missing ??}}]", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := vars
			if tt.name == "value is not rendered again" {
				v = Vars{"x": "{{input.name}}", "input": vars["input"]}
			}
			require.Equal(t, tt.want, Render(tt.tmpl, v))
		})
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
	}{
		{nil, ""},
		{1.0, "1"},
		{1.5, "1.5"},
		{-2.0, "-2"},
		{0.1, "0.1"},
		{1e21, "1e+21"},
		{123456789.0, "123456789"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "+Inf"},
		{int(42), "42"},
		{int8(-4), "-4"},
		{uint64(18446744073709551615), "18446744073709551615"},
		{json.Number("7.50"), "7.50"},
		{false, "false"},
		{[]any{}, "[]"},
		{map[string]any{}, "{}"},
		{[]any{1.0, "a", nil}, `[1,"a",null]`},
		{map[string]any{"b": 1.0, "a": 2.0}, `{"a":2,"b":1}`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T %v", tt.in, tt.in), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Text(tt.in))
		})
	}
}

func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tmpl    string
		wantErr error
	}{
		{"plain", "hello", nil},
		{"placeholders", "{{a}} and {{ @b.c }}", nil},
		{"closing braces alone", "}} are fine", nil},
		{"at the limit", strings.Repeat("x", MaxTemplateBytes), nil},
		{"over the limit", strings.Repeat("x", MaxTemplateBytes+1), ErrTemplateTooLarge},
		{"unterminated", "hello {{name", ErrInvalidTemplate},
		{"unterminated after a good one", "{{a}} {{b", ErrInvalidTemplate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckTemplate(tt.tmpl)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}

	t.Run("names the offset", func(t *testing.T) {
		t.Parallel()
		require.ErrorContains(t, CheckTemplate("{{a}} {{b"), "at byte 6")
	})
}

func TestDepth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want int
	}{
		{"scalar", 1.0, 0},
		{"nil", nil, 0},
		{"string", "x", 0},
		{"empty map", map[string]any{}, 1},
		{"flat map", map[string]any{"a": 1.0}, 1},
		{"flat array", []any{1.0}, 1},
		{"map of array", map[string]any{"a": []any{1.0}}, 2},
		{"uneven", []any{1.0, []any{[]any{}}, map[string]any{}}, 3},
		{"typed slice", []string{"a"}, 1},
		{"condition", map[string]any{"not": []any{true}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Depth(tt.in))
		})
	}
}

// testResolver stands in for the doc: resolver: it echoes the ref, or fails for
// "missing".
func testResolver(_ context.Context, ref string) (any, error) {
	if ref == "missing" {
		return nil, errNotFound
	}
	return map[string]any{"ref": ref}, nil
}

var errNotFound = errors.New("not found")

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vars := testVars(t)
	e := New()
	e.RegisterPrefix("doc:", testResolver)

	tests := []struct {
		name string
		in   any
		want any
	}{
		{"raw path keeps type", "@matched.1.amount", 20.75},
		{"raw path to a map", "@input.nested.deep", map[string]any{"x": 1.0}},
		{"raw missing path", "@input.missing", nil},
		{"raw bool", "@__approved", true},
		{"template renders text", "amount {{@input.amount}}", "amount 12.5"},
		{"template of one path is text", "{{input.count}}", "3"},
		{"at-sign text is not a path", "@ team: hi", "@ team: hi"},
		{"plain string", "hello", "hello"},
		{"prefix token", "doc:doc_123@2", map[string]any{"ref": "doc_123@2"}},
		{"prefix not at start", "see doc:doc_1", "see doc:doc_1"},
		{"unregistered prefix", "orgconfig:key", "orgconfig:key"},
		{"prefix ref is not rendered", "doc:{{input.name}}", map[string]any{"ref": "{{input.name}}"}},
		{"number", 4.0, 4.0},
		{"nil", nil, nil},
		{"bool", false, false},
		{
			"nested map and array",
			map[string]any{
				"to":      "@input.name",
				"subject": "Run {{__run_id}}",
				"body":    []any{"@matched.length", map[string]any{"doc": "doc:d1"}, 1.0},
			},
			map[string]any{
				"to":      "Ada",
				"subject": "Run run_123",
				"body":    []any{2, map[string]any{"doc": map[string]any{"ref": "d1"}}, 1.0},
			},
		},
		{"typed map", map[string]string{"h": "{{input.name}}"}, map[string]any{"h": "Ada"}},
		{"typed slice", []string{"@input.name"}, []any{"Ada"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := e.Resolve(ctx, tt.in, vars)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("copies maps and arrays", func(t *testing.T) {
		t.Parallel()
		in := map[string]any{"a": []any{"{{input.name}}"}}
		got, err := e.Resolve(ctx, in, vars)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"a": []any{"{{input.name}}"}}, in)
		require.Equal(t, map[string]any{"a": []any{"Ada"}}, got)
	})

	t.Run("resolver error names the token", func(t *testing.T) {
		t.Parallel()
		_, err := e.Resolve(ctx, map[string]any{"x": []any{"doc:missing"}}, vars)
		require.ErrorIs(t, err, errNotFound)
		require.ErrorContains(t, err, `"doc:missing"`)
	})

	t.Run("zero value and nil evaluator know no prefixes", func(t *testing.T) {
		t.Parallel()
		var zero Evaluator
		got, err := zero.Resolve(ctx, "doc:d1", vars)
		require.NoError(t, err)
		require.Equal(t, "doc:d1", got)

		var none *Evaluator
		got, err = none.Resolve(ctx, "{{input.name}}", vars)
		require.NoError(t, err)
		require.Equal(t, "Ada", got)
	})
}

func TestRegisterPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	constant := func(v string) PrefixResolver {
		return func(context.Context, string) (any, error) { return v, nil }
	}

	t.Run("longest prefix wins", func(t *testing.T) {
		t.Parallel()
		var e Evaluator
		e.RegisterPrefix("doc:", constant("short"))
		e.RegisterPrefix("doc:v2:", constant("long"))
		got, err := e.Resolve(ctx, "doc:v2:x", nil)
		require.NoError(t, err)
		require.Equal(t, "long", got)
		got, err = e.Resolve(ctx, "doc:x", nil)
		require.NoError(t, err)
		require.Equal(t, "short", got)
	})

	t.Run("registering again replaces", func(t *testing.T) {
		t.Parallel()
		e := New()
		e.RegisterPrefix("orgconfig:", constant("old"))
		e.RegisterPrefix("orgconfig:", constant("new"))
		got, err := e.Resolve(ctx, "orgconfig:k", nil)
		require.NoError(t, err)
		require.Equal(t, "new", got)
	})

	t.Run("resolver gets the context", func(t *testing.T) {
		t.Parallel()
		type key struct{}
		e := New()
		e.RegisterPrefix("ctx:", func(ctx context.Context, ref string) (any, error) {
			return ctx.Value(key{}), nil
		})
		got, err := e.Resolve(context.WithValue(ctx, key{}, "org_1"), "ctx:x", nil)
		require.NoError(t, err)
		require.Equal(t, "org_1", got)
	})

	t.Run("empty prefix or nil resolver panics", func(t *testing.T) {
		t.Parallel()
		require.Panics(t, func() { New().RegisterPrefix("", constant("x")) })
		require.Panics(t, func() { New().RegisterPrefix("doc:", nil) })
	})
}
