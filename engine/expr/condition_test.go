package expr

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// cond decodes a condition object from JSON, as a workflow definition holds it.
func cond(t testing.TB, src string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(src), &v))
	return v
}

func TestConditionOperators(t *testing.T) {
	t.Parallel()
	vars := testVars(t)
	tests := []struct {
		name string
		cond string
		want bool
	}{
		// equal, notEqual
		{"equal strings", `{"equal": ["@input.status", "open"]}`, true},
		{"equal strings differ", `{"equal": ["@input.status", "closed"]}`, false},
		{"equal numbers across kinds", `{"equal": ["@int64", 3]}`, true},
		{"equal float and int", `{"equal": ["@input.count", "@int64"]}`, true},
		{"equal uint8", `{"equal": ["@uint8", 7.0]}`, true},
		{"equal number and string", `{"equal": ["@input.count", "3"]}`, false},
		{"equal arrays", `{"equal": ["@input.tags", ["urgent", "billing"]]}`, true},
		{"equal arrays order", `{"equal": ["@input.tags", ["billing", "urgent"]]}`, false},
		{"equal typed slice and array", `{"equal": ["@strings", ["x", "y"]]}`, true},
		{"equal maps", `{"equal": ["@input.nested.deep", "@input.nested.deep"]}`, true},
		{"equal maps differ", `{"equal": ["@input.nested", "@input.weird"]}`, false},
		{"equal nil nil", `{"equal": [null, null]}`, true},
		{"equal missing is nil", `{"equal": ["@input.missing", null]}`, true},
		{"equal missing and empty string", `{"equal": ["@input.missing", ""]}`, false},
		{"equal bools", `{"equal": ["@__approved", true]}`, true},
		{"equal template", `{"equal": ["{{input.name}}-{{input.count}}", "Ada-3"]}`, true},
		{"equal time and string", `{"equal": ["@now", "2024-03-02T10:00:00Z"]}`, true},
		{"notEqual", `{"notEqual": ["@input.status", "closed"]}`, true},
		{"notEqual same", `{"notEqual": ["@input.count", 3]}`, false},
		{"notEqual missing", `{"notEqual": ["@input.missing", null]}`, false},

		// ordering
		{"greaterThan numbers", `{"greaterThan": ["@input.amount", 12]}`, true},
		{"greaterThan equal numbers", `{"greaterThan": ["@input.count", 3]}`, false},
		{"greaterThan ISO dates", `{"greaterThan": ["@input.date", "2024-02-29"]}`, true},
		{"greaterThan strings", `{"greaterThan": ["a", "b"]}`, false},
		{"greaterThan mixed", `{"greaterThan": ["@input.count", "1"]}`, false},
		{"greaterThan nil", `{"greaterThan": ["@input.missing", 0]}`, false},
		{"greaterThan time", `{"greaterThan": ["@now", "2024-03-01T00:00:00Z"]}`, true},
		{"greaterThan time and bad string", `{"greaterThan": ["@now", "yesterday"]}`, false},
		{"greaterThanOrEqual equal", `{"greaterThanOrEqual": ["@input.count", 3]}`, true},
		{"greaterThanOrEqual less", `{"greaterThanOrEqual": ["@input.count", 4]}`, false},
		{"greaterThanOrEqual mixed", `{"greaterThanOrEqual": [true, true]}`, false},
		{"lessThan", `{"lessThan": ["@matched.0.amount", "@matched.1.amount"]}`, true},
		{"lessThan not", `{"lessThan": ["@matched.1.amount", "@matched.0.amount"]}`, false},
		{"lessThan strings", `{"lessThan": ["apple", "banana"]}`, true},
		{"lessThanOrEqual equal", `{"lessThanOrEqual": [2, "@matched.length"]}`, true},
		{"lessThanOrEqual greater", `{"lessThanOrEqual": [3, "@matched.length"]}`, false},
		{"lessThanOrEqual nil nil", `{"lessThanOrEqual": [null, null]}`, false},

		// logic
		{"and all true", `{"and": [true, {"equal": [1, 1]}, "@__approved"]}`, true},
		{"and one false", `{"and": [true, {"equal": [1, 2]}]}`, false},
		{"and single", `{"and": [{"exists": "@input.name"}]}`, true},
		{"and truthy values", `{"and": ["@input.name", "@matched"]}`, true},
		{"and falsy value", `{"and": ["@input.name", "@input.no_items"]}`, false},
		{"or one true", `{"or": [false, {"equal": ["@input.status", "open"]}]}`, true},
		{"or none true", `{"or": [false, null, 0, ""]}`, false},
		{"not false", `{"not": [false]}`, true},
		{"not true", `{"not": [true]}`, false},
		{"not bare operator", `{"not": {"equal": ["@input.status", "closed"]}}`, true},
		{"not missing", `{"not": "@input.missing"}`, true},
		{"not string", `{"not": ["@input.name"]}`, false},

		// membership
		{"in array", `{"in": ["@input.status", ["open", "pending"]]}`, true},
		{"in array absent", `{"in": ["closed", ["open", "pending"]]}`, false},
		{"in array numbers", `{"in": [3, [1, 2, 3.0]]}`, true},
		{"in array from path", `{"in": ["billing", "@input.tags"]}`, true},
		{"in substring", `{"in": ["da", "@input.name"]}`, true},
		{"in substring absent", `{"in": ["xyz", "@input.name"]}`, false},
		{"in nil container", `{"in": ["a", "@input.missing"]}`, false},
		{"in number container", `{"in": [1, 1]}`, false},
		{"in literal array with paths", `{"in": ["Ada", ["Bob", "@input.name"]]}`, true},
		{"in literal array with templates", `{"in": ["Ada!", ["{{input.name}}!"]]}`, true},
		{"contains array", `{"contains": ["@input.tags", "urgent"]}`, true},
		{"contains array absent", `{"contains": ["@input.tags", "low"]}`, false},
		{"contains string", `{"contains": ["@__comment", "good"]}`, true},
		{"contains string absent", `{"contains": ["@__comment", "bad"]}`, false},
		{"contains typed slice", `{"contains": ["@strings", "y"]}`, true},
		{"contains operator result", `{"contains": ["@matched", {"equal": [1, 1]}]}`, false},
		{"contains nil", `{"contains": ["@input.missing", "x"]}`, false},
		{"startsWith", `{"startsWith": ["@__run_id", "run_"]}`, true},
		{"startsWith no", `{"startsWith": ["@__run_id", "apr_"]}`, false},
		{"startsWith not a string", `{"startsWith": ["@input.count", "3"]}`, false},
		{"endsWith", `{"endsWith": ["@input.name", "da"]}`, true},
		{"endsWith no", `{"endsWith": ["@input.name", "Ad"]}`, false},
		{"endsWith nil", `{"endsWith": ["@input.missing", ""]}`, false},

		// presence and size
		{"exists", `{"exists": ["@input.name"]}`, true},
		{"exists empty string", `{"exists": ["@input.empty"]}`, true},
		{"exists zero", `{"exists": ["@input.zero"]}`, true},
		{"exists null", `{"exists": ["@input.none"]}`, false},
		{"exists missing", `{"exists": "@input.missing"}`, false},
		{"isEmpty missing", `{"isEmpty": ["@input.missing"]}`, true},
		{"isEmpty empty string", `{"isEmpty": ["@input.empty"]}`, true},
		{"isEmpty empty array", `{"isEmpty": ["@input.no_items"]}`, true},
		{"isEmpty empty map", `{"isEmpty": "@input.no_fields"}`, true},
		{"isEmpty zero", `{"isEmpty": ["@input.zero"]}`, false},
		{"isEmpty false", `{"isEmpty": [false]}`, false},
		{"isEmpty string", `{"isEmpty": ["@input.name"]}`, false},
		{"isEmpty array", `{"isEmpty": ["@matched"]}`, false},
		{"length compared", `{"greaterThan": [{"length": ["@matched"]}, 0]}`, true},
		{"length bare", `{"equal": [{"length": "@matched"}, 2]}`, true},
		{"length of string", `{"equal": [{"length": "@input.name"}, 3]}`, true},
		{"length of map", `{"equal": [{"length": "@input.nested"}, 1]}`, true},
		{"length of nil", `{"equal": [{"length": "@input.missing"}, 0]}`, true},
		{"length of number", `{"equal": [{"length": 5}, 0]}`, true},
		{"length alone non-zero is truthy", `{"length": "@matched"}`, true},
		{"length alone zero is falsy", `{"length": "@input.no_items"}`, false},
		{"path length equals length", `{"equal": ["@matched.length", {"length": "@matched"}]}`, true},

		// matches
		{"matches", `{"matches": ["@input.name", "^A[a-z]+$"]}`, true},
		{"matches no", `{"matches": ["@input.name", "^B"]}`, false},
		{"matches pattern from path", `{"matches": ["@input.name", "@pattern"]}`, true},
		{"matches pattern from template", `{"matches": ["Ada", "^{{input.name}}$"]}`, true},
		{"matches not a string", `{"matches": ["@input.count", "3"]}`, false},
		{"matches pattern not a string", `{"matches": ["Ada", "@input.count"]}`, false},
		{"matches RE2 class", `{"matches": ["INV-0042", "^INV-\\d{4}$"]}`, true},

		// nesting
		{
			"nested",
			`{"and": [
				{"or": [{"equal": ["@input.status", "closed"]}, {"greaterThan": ["@input.amount", 10]}]},
				{"not": [{"isEmpty": ["@matched"]}]},
				{"in": [{"length": "@input.tags"}, [1, 2]]}
			]}`,
			true,
		},
		{"index into step output", `{"equal": ["@matched.1.id", "m2"]}`, true},
		{"typed map", `{"equal": ["@headers.Accept", "json"]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Compile(cond(t, tt.cond))
			require.NoError(t, err)
			got, err := c.Eval(context.Background(), vars)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConditionValue(t *testing.T) {
	t.Parallel()
	vars := testVars(t)
	tests := []struct {
		name string
		cond string
		want any
	}{
		{"length is an int", `{"length": "@matched"}`, 2},
		{"length of a typed slice", `{"length": "@strings"}`, 2},
		{"comparison is a bool", `{"equal": [1, 1]}`, true},
		{"and is a bool", `{"and": ["@input.name"]}`, true},
		{"or is a bool", `{"or": ["@input.empty", 0]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Compile(cond(t, tt.cond))
			require.NoError(t, err)
			got, err := c.Value(context.Background(), vars)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConditionShortCircuit(t *testing.T) {
	t.Parallel()
	vars := testVars(t)
	// A pattern from a path is compiled at evaluation, so a bad one fails only if
	// evaluated: the error shows whether and/or looked at the operand.
	const bad = `{"matches": ["x", "@bad_pattern"]}`
	tests := []struct {
		name    string
		cond    string
		want    bool
		wantErr bool
	}{
		{"and stops at false", `{"and": [false, ` + bad + `]}`, false, false},
		{"and stops at false operator", `{"and": [{"equal": [1, 2]}, ` + bad + `]}`, false, false},
		{"and evaluates past true", `{"and": [true, ` + bad + `]}`, false, true},
		{"or stops at true", `{"or": [{"exists": "@input.name"}, ` + bad + `]}`, true, false},
		{"or evaluates past false", `{"or": [false, ` + bad + `]}`, false, true},
		{"nested and inside or", `{"or": [{"and": [true, true]}, {"and": [` + bad + `]}]}`, true, false},
		{"not is eager", `{"not": [` + bad + `]}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := EvalCondition(context.Background(), cond(t, tt.cond), vars)
			if tt.wantErr {
				require.ErrorContains(t, err, "not a valid regular expression")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cond    any
		wantMsg string
	}{
		{"unknown operator nested", cond(t, `{"and": [true, {"greaterThen": [1, 2]}]}`), `/and/1: unknown operator "greaterThen"`},
		{"unknown operator at root", cond(t, `{"equals": [1, 1]}`), `condition: unknown operator "equals"`},
		{"two operators", cond(t, `{"equal": [1, 1], "not": [true]}`), `exactly one operator, got 2 keys ["equal" "not"]`},
		{"empty object", cond(t, `{"or": [{}]}`), `/or/0: condition object must have exactly one operator, got 0 keys`},
		{"not an object", cond(t, `"@input.x"`), `condition must be an object`},
		{"nil", nil, `condition must be an object with one operator, got null`},
		{"binary with one", cond(t, `{"equal": [1]}`), `/equal: equal takes exactly 2 argument(s), got 1`},
		{"binary with three", cond(t, `{"not": [{"greaterThan": [1, 2, 3]}]}`), `/not/0/greaterThan: greaterThan takes exactly 2 argument(s), got 3`},
		{"binary with bare argument", cond(t, `{"equal": "@x"}`), `equal takes an array of arguments, got a string`},
		{"and with none", cond(t, `{"and": []}`), `and takes at least 1 argument(s), got 0`},
		{"or with none", cond(t, `{"or": []}`), `or takes at least 1 argument(s), got 0`},
		{"not with two", cond(t, `{"not": [true, false]}`), `not takes exactly 1 argument(s), got 2`},
		{"length with none", cond(t, `{"length": []}`), `length takes exactly 1 argument(s), got 0`},
		{"in with one", cond(t, `{"in": ["a"]}`), `in takes exactly 2 argument(s), got 1`},
		{"matches bad literal", cond(t, `{"matches": ["@x", "(unclosed"]}`), `/matches/1: matches pattern "(unclosed" is not a valid regular expression`},
		{"matches non-string literal", cond(t, `{"matches": ["@x", 5]}`), `/matches/1: matches pattern must be a string, got a number`},
		{"matches Perl lookahead", cond(t, `{"matches": ["@x", "a(?=b)"]}`), `not a valid regular expression`},
		{"unary bare pointer", cond(t, `{"not": {"nope": []}}`), `/not: unknown operator "nope"`},
		{"pointer escapes", cond(t, `{"and": [{"a/b": []}]}`), `/and/0: unknown operator "a/b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tt.cond)
			require.ErrorIs(t, err, ErrInvalidCondition)
			require.ErrorContains(t, err, tt.wantMsg)
			var ce *CompileError
			require.ErrorAs(t, err, &ce)

			_, err = EvalCondition(context.Background(), tt.cond, nil)
			require.ErrorIs(t, err, ErrInvalidCondition)
		})
	}
}

// nestedNot wraps true in n "not" objects.
func nestedNot(n int) any {
	var c any = true
	for range n {
		c = map[string]any{"not": []any{c}}
	}
	return c
}

// nestedArray wraps 1 in n arrays.
func nestedArray(n int) any {
	var v any = 1.0
	for range n {
		v = []any{v}
	}
	return v
}

func TestCompileDepth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MaxDepth operators accepted", func(t *testing.T) {
		t.Parallel()
		got, err := EvalCondition(ctx, nestedNot(MaxDepth), nil)
		require.NoError(t, err)
		require.True(t, got) // an even number of nots
	})

	t.Run("one more rejected", func(t *testing.T) {
		t.Parallel()
		_, err := Compile(nestedNot(MaxDepth + 1))
		require.ErrorIs(t, err, ErrTooDeep)
		require.NotErrorIs(t, err, ErrInvalidCondition)
	})

	t.Run("through and/or too", func(t *testing.T) {
		t.Parallel()
		deep := func(n int) any {
			var c any = true
			for range n {
				c = map[string]any{"and": []any{c}}
			}
			return c
		}
		_, err := Compile(deep(MaxDepth))
		require.NoError(t, err)
		_, err = Compile(deep(MaxDepth + 1))
		require.ErrorIs(t, err, ErrTooDeep)
	})

	t.Run("deep literal rejected", func(t *testing.T) {
		t.Parallel()
		_, err := Compile(map[string]any{"equal": []any{"@x", nestedArray(MaxDepth)}})
		require.NoError(t, err)
		_, err = Compile(map[string]any{"equal": []any{"@x", nestedArray(MaxDepth + 1)}})
		require.ErrorIs(t, err, ErrTooDeep)
	})
}

// TestConditionCompilesToGval pins the shape of the gval expression: one function
// per operator, arguments as slots, and/or operands behind slots of their own.
func TestConditionCompilesToGval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cond string
		want string
	}{
		{`{"greaterThan": [{"length": ["@matched"]}, 0]}`, "greaterThan(length(a0), a1)"},
		{`{"length": "@matched"}`, "length(a0)"},
		{`{"and": [true, {"not": [false]}]}`, "and(a0, a2)"},
		{`{"matches": ["@x", "^a"]}`, "matches(a0, a1)"},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			t.Parallel()
			c, err := Compile(cond(t, tt.cond))
			require.NoError(t, err)
			require.Equal(t, tt.want, c.expr)
		})
	}
}

func TestConditionGoValues(t *testing.T) {
	t.Parallel()
	// Conditions built in Go rather than decoded from JSON.
	c, err := Compile(map[string]any{"and": []map[string]any{
		{"equal": []any{"@n", 3}},
		{"in": []any{"b", []string{"a", "b"}}},
	}})
	require.NoError(t, err)
	got, err := c.Eval(context.Background(), Vars{"n": int32(3)})
	require.NoError(t, err)
	require.True(t, got)

	got, err = EvalCondition(context.Background(), c, Vars{"n": 4})
	require.NoError(t, err)
	require.False(t, got)
}

func TestConditionConcurrentEval(t *testing.T) {
	t.Parallel()
	c, err := Compile(cond(t, `{"and": [{"greaterThan": ["@n", 5]}, {"matches": ["@s", "^x"]}]}`))
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 100 {
				n := i*100 + j
				got, err := c.Eval(context.Background(), Vars{"n": n, "s": "xyz"})
				if err != nil || got != (n > 5) {
					t.Errorf("n=%d: got %v, %v", n, got, err)
				}
			}
		})
	}
	wg.Wait()
}

// Numbers from JSON are json.Number (decoded with UseNumber, as the engine does) and
// compare on their decimal digits: two 30-digit integers that one float64 holds both of
// differ, and so do 0.1 and the decimal nearest the float64 0.1.
func TestConditionExactNumbers(t *testing.T) {
	t.Parallel()
	vars := Vars{"input": map[string]any{
		"a":    json.Number("123456789012345678901234567891"),
		"b":    json.Number("123456789012345678901234567890"),
		"d":    json.Number("0.1000000000000000055511151231257827"),
		"one":  json.Number("1.0"),
		"f":    0.1,
		"i":    int64(1),
		"text": "123456789012345678901234567891",
	}}
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{`{"equal": ["@input.a", "@input.b"]}`, false},
		{`{"equal": ["@input.a", "@input.a"]}`, true},
		{`{"notEqual": ["@input.a", "@input.b"]}`, true},
		{`{"greaterThan": ["@input.a", "@input.b"]}`, true},
		{`{"lessThan": ["@input.a", "@input.b"]}`, false},
		{`{"greaterThanOrEqual": ["@input.b", "@input.a"]}`, false},
		{`{"equal": ["@input.d", "@input.f"]}`, false},
		{`{"greaterThan": ["@input.d", "@input.f"]}`, true},
		{`{"equal": ["@input.one", "@input.i"]}`, true},
		{`{"equal": ["@input.a", "@input.text"]}`, false},
		{`{"in": ["@input.a", ["@input.b", "@input.a"]]}`, true},
		{`{"in": ["@input.a", ["@input.b"]]}`, false},
	} {
		var c any
		dec := json.NewDecoder(strings.NewReader(tc.cond))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&c))
		got, err := EvalCondition(context.Background(), c, vars)
		require.NoError(t, err, tc.cond)
		require.Equal(t, tc.want, got, tc.cond)
	}
}
