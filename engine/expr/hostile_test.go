package expr

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Hostile input (issue 21): each is refused with an error by a bound checked before the
// work the input would cost. The durations are logged, not asserted (a timed assertion
// is flaky on a loaded machine); the tests show instead that the refusal comes first: a
// template that is both too large and unterminated is refused for its size, and
// conditions nested without end (cycles) are refused, which a walk to the bottom could
// not do.

func TestHostileTemplate10MB(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("{{", 5<<20) // 10 MiB, and unterminated throughout
	cond := map[string]any{"equal": []any{"@input.name", huge}}

	start := time.Now()
	err := CheckTemplate(huge)
	took := time.Since(start)
	require.ErrorIs(t, err, ErrTemplateTooLarge)
	require.NotErrorIs(t, err, ErrInvalidTemplate, "the size is checked before the template is read")
	require.ErrorContains(t, err, "10485760 bytes, limit 65536")
	t.Logf("CheckTemplate of a 10 MiB template: refused in %v", took)

	start = time.Now()
	_, err = Compile(cond)
	took = time.Since(start)
	require.ErrorIs(t, err, ErrTemplateTooLarge)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "/equal/1", ce.Pointer)
	t.Logf("Compile of a condition holding a 10 MiB template: refused in %v", took)
}

func TestHostileConditionDepth(t *testing.T) {
	t.Parallel()

	t.Run("100,000 deep", func(t *testing.T) {
		t.Parallel()
		deep := nestedNot(100_000)
		start := time.Now()
		_, err := Compile(deep)
		took := time.Since(start)
		require.ErrorIs(t, err, ErrTooDeep)
		var ce *CompileError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, MaxDepth, strings.Count(ce.Pointer, "/not/0"), "refused at the first level past MaxDepth")
		t.Logf("Compile of a condition nested 100,000 deep: refused in %v", took)
	})

	t.Run("a literal 100,000 deep", func(t *testing.T) {
		t.Parallel()
		deep := map[string]any{"equal": []any{"@x", nestedArray(100_000)}}
		start := time.Now()
		_, err := Compile(deep)
		took := time.Since(start)
		require.ErrorIs(t, err, ErrTooDeep)
		t.Logf("Compile of a literal nested 100,000 deep: refused in %v", took)
	})

	// Without end: a cycle. Only a bound checked on the way down returns at all.
	t.Run("cyclic condition", func(t *testing.T) {
		t.Parallel()
		loop := map[string]any{}
		loop["not"] = []any{loop}
		_, err := Compile(loop)
		require.ErrorIs(t, err, ErrTooDeep)
	})
	t.Run("cyclic literal", func(t *testing.T) {
		t.Parallel()
		loop := []any{nil}
		loop[0] = loop
		_, err := Compile(map[string]any{"in": []any{"@x", loop}})
		require.ErrorIs(t, err, ErrTooDeep)
	})
}

func TestHostileConditionSize(t *testing.T) {
	t.Parallel()
	wide := func(n int, arg any) any {
		args := make([]any, n)
		for i := range args {
			args[i] = arg
		}
		return map[string]any{"and": args}
	}

	_, err := Compile(wide(MaxNodes-1, true)) // and + its arguments: MaxNodes
	require.NoError(t, err)
	_, err = Compile(wide(MaxNodes, true))
	require.ErrorIs(t, err, ErrConditionTooLarge)
	require.ErrorContains(t, err, "at most 1000 operators and arguments")

	// 1,000,000 operands: refused after reading MaxNodes of them, not compiled one by one.
	huge := wide(1_000_000, map[string]any{"not": true})
	start := time.Now()
	_, err = Compile(huge)
	took := time.Since(start)
	require.ErrorIs(t, err, ErrConditionTooLarge)
	t.Logf("Compile of and with 1,000,000 operands: refused in %v", took)

	// Nested operators count too: 400 "equal" of two arguments are 1,201 nodes.
	_, err = Compile(wide(400, map[string]any{"equal": []any{"@input.a", 1.0}}))
	require.ErrorIs(t, err, ErrConditionTooLarge)
}

func TestHostilePaths(t *testing.T) {
	t.Parallel()
	vars := Vars{
		"input": map[string]any{
			"__proto__":   map[string]any{"polluted": true},
			"constructor": "Object",
			"a":           map[string]any{"prototype": 1.0},
		},
		"__proto__": "root",
	}
	for _, path := range []string{
		"@input.__proto__", "@input.__proto__.polluted", "@input.constructor", "@input.a.prototype",
		"@__proto__", "@constructor.name", "input.constructor",
	} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			err := CheckPath(path)
			took := time.Since(start)
			require.ErrorIs(t, err, ErrReservedSegment)
			require.ErrorContains(t, err, "a path may not name __proto__, constructor or prototype")
			t.Logf("CheckPath(%q): refused in %v", path, took)

			require.Nil(t, Lookup(path, vars), "Lookup finds nothing through a reserved segment")
			got, err := New().Resolve(context.Background(), "@"+strings.TrimPrefix(path, "@"), vars)
			require.NoError(t, err)
			require.Nil(t, got)
			require.Empty(t, Render("{{"+path+"}}", vars))

			require.ErrorIs(t, CheckTemplate("@"+strings.TrimPrefix(path, "@")), ErrReservedSegment)
			err = CheckTemplate("Dear {{ " + path + " }}")
			require.ErrorIs(t, err, ErrReservedSegment)
			require.ErrorContains(t, err, "placeholder at byte 5")

			for _, c := range []any{
				map[string]any{"exists": "@" + strings.TrimPrefix(path, "@")},
				map[string]any{"equal": []any{"{{" + path + "}}", "x"}},
				map[string]any{"in": []any{"x", []any{"y", []any{"@" + strings.TrimPrefix(path, "@")}}}},
				map[string]any{"matches": []any{"@input.name", "@" + strings.TrimPrefix(path, "@")}},
			} {
				_, err := Compile(c)
				require.ErrorIs(t, err, ErrReservedSegment, "%v", c)
				var ce *CompileError
				require.ErrorAs(t, err, &ce)
				require.NotEmpty(t, ce.Pointer)
			}
		})
	}

	// Names that merely resemble them are ordinary fields.
	for _, path := range []string{"@input.proto", "@input.__proto", "@input.Constructor", "@input.constructors", "@__run_id", "@input.a.prototype_id"} {
		require.NoError(t, CheckPath(path), path)
		require.NoError(t, CheckTemplate(path), path)
		require.NoError(t, CheckTemplate("{{"+path+"}}"), path)
	}
	require.Equal(t, "ok", Lookup("@input.Constructor", Vars{"input": map[string]any{"Constructor": "ok"}}))
}

func TestDeeperThanAgreesWithDepth(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		nil, 1.0, "x", []any{}, map[string]any{}, nestedArray(3), nestedNot(2),
		[]any{1.0, []any{[]any{}}, map[string]any{"a": []any{map[string]any{}}}}, []string{"a"},
	} {
		for n := range 6 {
			require.Equal(t, Depth(v) > n, deeperThan(v, n), "%v at %d", v, n)
		}
	}
}
