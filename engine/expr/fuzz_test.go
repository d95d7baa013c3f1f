package expr

import (
	"context"
	"encoding/json"
	"testing"
)

// The fuzz targets assert only that odd input never panics; with no -fuzz flag they
// run their seeds as ordinary tests.

func FuzzLookup(f *testing.F) {
	for _, seed := range []string{
		"", "@", ".", "..", "@input.name", "input.tags.0", "@matched.1.amount",
		"@matched.length", "@input.name.length", "@input.weird.length", "@strings.9",
		"@matched.99999999999999999999", "@matched.-1", "@headers.Accept.x", "@@x",
		"@input.nested.deep.x.y.z", "{{input.name}}", "@input..",
	} {
		f.Add(seed)
	}
	vars := testVars(f)
	f.Fuzz(func(t *testing.T, path string) {
		_ = Lookup(path, vars)
		_ = Render(path, vars)
		_ = CheckTemplate(path)
		_, _ = New().Resolve(context.Background(), path, vars)
	})
}

func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		`{"equal": ["@input.status", "open"]}`,
		`{"greaterThan": [{"length": ["@matched"]}, 0]}`,
		`{"length": "@matched"}`,
		`{"and": [{"or": [true, false]}, {"not": {"exists": "@x"}}]}`,
		`{"matches": ["@input.name", "^A"]}`,
		`{"matches": ["@input.name", "@bad_pattern"]}`,
		`{"in": ["a", ["a", "@input.name", {"x": "{{input.name}}"}]]}`,
		`{"and": []}`,
		`{"unknown": [1]}`,
		`{}`,
		`[]`,
		`null`,
		`"@input.name"`,
		`{"not": [[[[[[]]]]]]}`,
		`{"equal": [{"equal": [1]}, 2]}`,
	} {
		f.Add(seed)
	}
	vars := testVars(f)
	f.Fuzz(func(t *testing.T, src string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		_ = Depth(v)
		c, err := Compile(v)
		if err != nil {
			return
		}
		_, _ = c.Eval(context.Background(), vars)
		_, _ = c.Value(context.Background(), nil)
	})
}
