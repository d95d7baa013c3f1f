package expr

import (
	"context"
	"testing"
)

func BenchmarkConditionEval(b *testing.B) {
	vars := testVars(b)
	c, err := Compile(cond(b, `{"and": [
		{"greaterThan": [{"length": ["@matched"]}, 0]},
		{"equal": ["@input.status", "open"]},
		{"matches": ["@input.name", "^A[a-z]+$"]}
	]}`))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := c.Eval(ctx, vars); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	src := cond(b, `{"and": [{"greaterThan": [{"length": ["@matched"]}, 0]}, {"equal": ["@input.status", "open"]}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	vars := testVars(b)
	e := New()
	e.RegisterPrefix("doc:", testResolver)
	props := map[string]any{
		"to":      "@input.name",
		"subject": "Run {{__run_id}}: {{matched.length}} matches, total {{input.amount}}",
		"body":    []any{"@matched.0", map[string]any{"doc": "doc:doc_1@2", "n": 1.0}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Resolve(ctx, props, vars); err != nil {
			b.Fatal(err)
		}
	}
}
