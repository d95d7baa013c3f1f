package expr

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/PaesslerAG/gval"
)

// opFunc is the signature gval calls without starting a goroutine per call.
type opFunc = func(ctx context.Context, args ...any) (any, error)

// operator is one condition operator: its arity and its gval function.
type operator struct {
	min, max int // max < 0: no upper bound
	fn       opFunc
}

func (op operator) checkArity(name string, n int) error {
	switch {
	case op.max < 0 && n < op.min:
		return fmt.Errorf("%s takes at least %d argument(s), got %d", name, op.min, n)
	case op.max >= 0 && (n < op.min || n > op.max):
		return fmt.Errorf("%s takes exactly %d argument(s), got %d", name, op.min, n)
	}
	return nil
}

// operators is the condition vocabulary (DESIGN.md, "condition operators"). It is a
// fixed table, read only.
var operators = map[string]operator{
	"equal":              {2, 2, binary(func(a, b any) (any, error) { return equalValues(a, b), nil })},
	"notEqual":           {2, 2, binary(func(a, b any) (any, error) { return !equalValues(a, b), nil })},
	"greaterThan":        {2, 2, ordered(func(c int) bool { return c > 0 })},
	"greaterThanOrEqual": {2, 2, ordered(func(c int) bool { return c >= 0 })},
	"lessThan":           {2, 2, ordered(func(c int) bool { return c < 0 })},
	"lessThanOrEqual":    {2, 2, ordered(func(c int) bool { return c <= 0 })},
	"and":                {1, -1, and},
	"or":                 {1, -1, or},
	"not":                {1, 1, unary(func(a any) any { return !truthy(a) })},
	"in":                 {2, 2, binary(in)},
	"contains":           {2, 2, binary(func(a, b any) (any, error) { return in(b, a) })},
	"startsWith":         {2, 2, stringTest(strings.HasPrefix)},
	"endsWith":           {2, 2, stringTest(strings.HasSuffix)},
	"exists":             {1, 1, unary(func(a any) any { return a != nil })},
	"isEmpty":            {1, 1, unary(func(a any) any { return isEmpty(a) })},
	"length":             {1, 1, unary(length)},
	"matches":            {2, 2, binary(matches)},
}

// language is the gval language conditions compile to: one function per operator and
// the aN argument slots as variables. Like operators, it is never changed.
var language = newLanguage()

func newLanguage() gval.Language {
	parts := []gval.Language{gval.Base(), gval.VariableSelector(selectSlot)}
	for name, op := range operators {
		parts = append(parts, gval.Function(name, op.fn))
	}
	return gval.NewLanguage(parts...)
}

func unary(f func(a any) any) opFunc {
	return func(_ context.Context, args ...any) (any, error) {
		if len(args) != 1 { // cannot happen for an expression that Compile wrote
			return nil, fmt.Errorf("expr: 1 argument expected, got %d", len(args))
		}
		return f(args[0]), nil
	}
}

func binary(f func(a, b any) (any, error)) opFunc {
	return func(_ context.Context, args ...any) (any, error) {
		if len(args) != 2 { // cannot happen for an expression that Compile wrote
			return nil, fmt.Errorf("expr: 2 arguments expected, got %d", len(args))
		}
		return f(args[0], args[1])
	}
}

// ordered compares two numbers, two strings or two times; any other pair is false.
func ordered(test func(c int) bool) opFunc {
	return binary(func(a, b any) (any, error) {
		c, ok := compare(a, b)
		return ok && test(c), nil
	})
}

// stringTest applies a string predicate; it is false unless both arguments are strings.
func stringTest(test func(s, affix string) bool) opFunc {
	return binary(func(a, b any) (any, error) {
		s, ok1 := str(a)
		affix, ok2 := str(b)
		return ok1 && ok2 && test(s, affix), nil
	})
}

func and(ctx context.Context, args ...any) (any, error) {
	for _, a := range args {
		v, err := force(ctx, a)
		if err != nil {
			return nil, err
		}
		if !truthy(v) {
			return false, nil
		}
	}
	return true, nil
}

func or(ctx context.Context, args ...any) (any, error) {
	for _, a := range args {
		v, err := force(ctx, a)
		if err != nil {
			return nil, err
		}
		if truthy(v) {
			return true, nil
		}
	}
	return false, nil
}

// in is true when a is an element of the array b, or a substring of the string b.
func in(a, b any) (any, error) {
	if s, ok := str(b); ok {
		sub, ok := str(a)
		return ok && strings.Contains(s, sub), nil
	}
	if l, ok := list(b); ok {
		return slices.ContainsFunc(l, func(e any) bool { return equalValues(e, a) }), nil
	}
	return false, nil
}

// length is the length of an array, a map or a string; 0 for anything else.
func length(a any) any {
	n, _ := size(a)
	return n
}

// matches tests a string against an RE2 pattern: a *regexp.Regexp compiled by Compile
// from a literal, or a string that came from a path or template.
func matches(a, pattern any) (any, error) {
	s, ok := str(a)
	if !ok {
		return false, nil
	}
	re, ok := pattern.(*regexp.Regexp)
	if !ok {
		p, isString := str(pattern)
		if !isString {
			return false, nil
		}
		var err error
		if re, err = regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("expr: matches pattern %q is not a valid regular expression: %w", p, err)
		}
	}
	return re.MatchString(s), nil
}
