package expr_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcflow/svcflow/engine/expr"
)

// vars is a run context as the executor holds it: the input and a step's output.
func vars() expr.Vars {
	var v expr.Vars
	_ = json.Unmarshal([]byte(`{
		"input": {"customer": {"name": "Ada"}, "total": 1250},
		"matched": [{"id": "m1", "amount": 1000}, {"id": "m2", "amount": 250.5}]
	}`), &v)
	return v
}

func ExampleLookup() {
	v := vars()
	fmt.Println(expr.Lookup("@input.customer.name", v))
	fmt.Println(expr.Lookup("matched.1.amount", v))
	fmt.Println(expr.Lookup("@matched.length", v))
	fmt.Println(expr.Lookup("@input.missing.field", v))
	// Output:
	// Ada
	// 250.5
	// 2
	// <nil>
}

func ExampleEvaluator_Resolve() {
	e := expr.New()
	e.RegisterPrefix("doc:", func(_ context.Context, ref string) (any, error) {
		return "content of " + ref, nil
	})

	props := map[string]any{
		"to":       "@input.customer.name",
		"subject":  "Total {{input.total}} over {{ @matched.length }} matches",
		"amounts":  []any{"@matched.0.amount", "@matched.1.amount"},
		"contract": "doc:doc_123@2",
	}
	out, err := e.Resolve(context.Background(), props, vars())
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	// Output:
	// {"amounts":[1000,250.5],"contract":"content of doc_123@2","subject":"Total 1250 over 2 matches","to":"Ada"}
}

func ExampleEvalCondition() {
	var cond any
	_ = json.Unmarshal([]byte(`{"and": [
		{"greaterThan": [{"length": ["@matched"]}, 0]},
		{"startsWith": ["@matched.0.id", "m"]},
		{"not": {"isEmpty": "@input.customer.name"}}
	]}`), &cond)

	ok, err := expr.EvalCondition(context.Background(), cond, vars())
	fmt.Println(ok, err)

	_, err = expr.Compile(map[string]any{"and": []any{true, map[string]any{"greaterThen": []any{1, 0}}}})
	fmt.Println(err)
	// Output:
	// true <nil>
	// /and/1: unknown operator "greaterThen"
}

func ExampleCompile() {
	c, err := expr.Compile(map[string]any{"matches": []any{"@invoice", `^INV-\d{4}$`}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, invoice := range []string{"INV-0042", "inv-42"} {
		ok, _ := c.Eval(context.Background(), expr.Vars{"invoice": invoice})
		fmt.Println(invoice, ok)
	}
	// Output:
	// INV-0042 true
	// inv-42 false
}

func ExampleRender() {
	fmt.Println(expr.Render("Hello {{input.customer.name}}, total {{@input.total}}{{input.missing}}.", vars()))
	// Output:
	// Hello Ada, total 1250.
}

func ExampleCheckTemplate() {
	fmt.Println(expr.CheckTemplate("Dear {{input.customer.name}}"))
	fmt.Println(expr.CheckTemplate("Dear {{input.customer.name"))
	fmt.Println(expr.CheckTemplate("@input.__proto__.admin"))
	// Output:
	// <nil>
	// expr: invalid template: unterminated "{{" at byte 5
	// expr: reserved path segment "__proto__": a path may not name __proto__, constructor or prototype
}
