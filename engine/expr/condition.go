package expr

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/PaesslerAG/gval"
)

// Condition is a compiled condition object. It is immutable, so one Condition may be
// evaluated by any number of goroutines at once.
//
// A condition object is a map with exactly one operator key, whose value is the array
// of its arguments; a unary operator (not, exists, isEmpty, length) also takes a bare
// argument: {"length": "@matched"}. Each argument is an operator object, an "@path"
// (looked up raw), a string with {{ }} (rendered to text), or a literal. Literal
// arrays may hold "@path" and {{ }} strings, which are resolved too:
// {"in": ["@input.status", ["open", "@input.reopened_as"]]}.
//
// Compile turns the object into a gval expression over a language whose functions are
// the operators, e.g. greaterThan(length(a0), a1), where each aN is an argument slot
// that gval selects from the evaluation scope. The arguments of and/or that are
// operator objects are compiled into expressions of their own and passed as slots
// evaluated on demand, so and/or stop at the first argument that decides them.
type Condition struct {
	eval  gval.Evaluable
	slots []slot
	expr  string // the gval expression, for tests and debugging
}

// CompileError says where and why a condition object does not compile. Its Pointer is
// a JSON pointer into the condition object ("" for the object itself); it unwraps to
// ErrInvalidCondition, ErrTooDeep, ErrConditionTooLarge, or the error of CheckTemplate.
type CompileError struct {
	Pointer string
	Reason  string
	Err     error
}

func (e *CompileError) Error() string {
	if e.Pointer == "" {
		return "condition: " + e.Reason
	}
	return e.Pointer + ": " + e.Reason
}

func (e *CompileError) Unwrap() error { return e.Err }

// Compile validates a condition object and compiles it for evaluation. It rejects an
// unknown operator, a wrong number of arguments (comparisons, in, contains, startsWith,
// endsWith and matches take 2; and/or at least 1; not, exists, isEmpty and length
// exactly 1), a literal matches pattern that is not valid RE2, nesting deeper than
// MaxDepth, more than MaxNodes operators and arguments, and a path or template that
// CheckTemplate refuses (such as a reserved path segment). The bounds are checked as the
// object is read, so a hostile one is refused after at most MaxDepth levels and MaxNodes
// nodes of work. Errors are *CompileError values.
func Compile(cond any) (*Condition, error) {
	var c compiler
	expr, err := c.operator(cond, "", 1)
	if err != nil {
		return nil, err
	}
	eval, err := language.NewEvaluable(expr)
	if err != nil {
		return nil, fmt.Errorf("expr: compile %q: %w", expr, err)
	}
	return &Condition{eval: eval, slots: c.slots, expr: expr}, nil
}

// Value evaluates the condition and returns its raw result: a bool for most
// operators, an int for length.
func (c *Condition) Value(ctx context.Context, vars Vars) (any, error) {
	return c.eval(ctx, &scope{vars: vars, slots: c.slots})
}

// Eval evaluates the condition as a boolean. A result that is not a bool (a bare
// length) counts as true when it is non-zero or non-empty.
func (c *Condition) Eval(ctx context.Context, vars Vars) (bool, error) {
	v, err := c.Value(ctx, vars)
	if err != nil {
		return false, err
	}
	return truthy(v), nil
}

// EvalCondition compiles cond and evaluates it once. cond may also be a *Condition
// compiled earlier.
func EvalCondition(ctx context.Context, cond any, vars Vars) (bool, error) {
	c, ok := cond.(*Condition)
	if !ok {
		var err error
		if c, err = Compile(cond); err != nil {
			return false, err
		}
	}
	return c.Eval(ctx, vars)
}

// slotKind says how an argument slot gets its value at evaluation time.
type slotKind uint8

const (
	slotLiteral  slotKind = iota // value as written (a *regexp.Regexp for a matches pattern)
	slotPath                     // Lookup(text)
	slotTemplate                 // Render(text)
	slotResolved                 // a literal array or map holding paths or templates
	slotDeferred                 // an and/or operand, evaluated when the operator asks
)

type slot struct {
	kind  slotKind
	value any
	text  string
	eval  gval.Evaluable
}

// scope is the gval parameter of one evaluation: the caller's Vars and the slots of
// the condition being evaluated.
type scope struct {
	vars  Vars
	slots []slot
}

// deferred is a not yet evaluated and/or operand.
type deferred struct {
	eval  gval.Evaluable
	scope *scope
}

func (s *scope) arg(i int) any {
	sl := &s.slots[i]
	switch sl.kind {
	case slotPath:
		return Lookup(sl.text, s.vars)
	case slotTemplate:
		return Render(sl.text, s.vars)
	case slotResolved:
		v, _ := resolve(context.Background(), sl.value, s.vars, nil) // no prefixes, so no errors
		return v
	case slotDeferred:
		return deferred{eval: sl.eval, scope: s}
	}
	return sl.value
}

// force evaluates an and/or operand if it was deferred.
func force(ctx context.Context, v any) (any, error) {
	if d, ok := v.(deferred); ok {
		return d.eval(ctx, d.scope)
	}
	return v, nil
}

// slotName is how the gval expression refers to slot i.
func slotName(i int) string { return "a" + strconv.Itoa(i) }

// selectSlot is the gval variable selector: it binds the identifier aN to slot N once,
// when the expression is parsed.
func selectSlot(path gval.Evaluables) gval.Evaluable {
	name := ""
	if len(path) == 1 {
		v, _ := path[0](context.Background(), nil) // identifiers parse to constants
		name, _ = v.(string)
	}
	i, err := strconv.Atoi(strings.TrimPrefix(name, "a"))
	if !strings.HasPrefix(name, "a") || err != nil || i < 0 {
		return func(context.Context, any) (any, error) {
			return nil, fmt.Errorf("expr: unknown argument %q", name)
		}
	}
	return func(_ context.Context, param any) (any, error) {
		s, ok := param.(*scope)
		if !ok || i >= len(s.slots) {
			return nil, fmt.Errorf("expr: argument %q out of scope", name)
		}
		return s.arg(i), nil
	}
}

// compiler builds the gval expression text and its slots from a condition object.
type compiler struct {
	slots []slot
	nodes int // operators and arguments read so far, bounded by MaxNodes
}

func (c *compiler) add(s slot) string {
	c.slots = append(c.slots, s)
	return slotName(len(c.slots) - 1)
}

// operator compiles the operator object v, found at ptr at nesting depth depth.
func (c *compiler) operator(v any, ptr string, depth int) (string, error) {
	m, ok := object(v)
	if !ok {
		return "", invalid(ptr, "condition must be an object with one operator, got %s", describe(v))
	}
	if depth > MaxDepth {
		return "", &CompileError{Pointer: ptr, Reason: fmt.Sprintf("conditions nest deeper than %d", MaxDepth), Err: ErrTooDeep}
	}
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, strconv.Quote(k))
		}
		slices.Sort(keys)
		return "", invalid(ptr, "condition object must have exactly one operator, got %d keys [%s]", len(m), strings.Join(keys, " "))
	}
	var name string
	var raw any
	for k, v := range m {
		name, raw = k, v
	}
	op, ok := operators[name]
	if !ok {
		return "", invalid(ptr, "unknown operator %q", name)
	}
	ptr += "/" + escapePointer(name)

	args, isList := list(raw)
	argPtr := func(i int) string { return ptr + "/" + strconv.Itoa(i) }
	if !isList {
		if op.min != 1 || op.max != 1 {
			return "", invalid(ptr, "%s takes an array of arguments, got %s", name, describe(raw))
		}
		args = []any{raw}
		argPtr = func(int) string { return ptr }
	}
	if err := op.checkArity(name, len(args)); err != nil {
		return "", invalid(ptr, "%s", err)
	}
	if c.nodes += 1 + len(args); c.nodes > MaxNodes {
		return "", &CompileError{Pointer: ptr, Reason: fmt.Sprintf("a condition holds at most %d operators and arguments", MaxNodes), Err: ErrConditionTooLarge}
	}

	parts := make([]string, len(args))
	for i, a := range args {
		var err error
		switch {
		case name == "matches" && i == 1:
			parts[i], err = c.pattern(a, argPtr(i), depth)
		case name == "and" || name == "or":
			parts[i], err = c.argument(a, argPtr(i), depth, true)
		default:
			parts[i], err = c.argument(a, argPtr(i), depth, false)
		}
		if err != nil {
			return "", err
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ")", nil
}

// argument compiles one argument of an operator at depth depth. A nested operator
// object becomes an inline call, or, when deferred, an expression of its own behind
// a slot.
func (c *compiler) argument(a any, ptr string, depth int, deferred bool) (string, error) {
	if _, ok := object(a); ok {
		expr, err := c.operator(a, ptr, depth+1)
		if err != nil || !deferred {
			return expr, err
		}
		eval, err := language.NewEvaluable(expr)
		if err != nil {
			return "", fmt.Errorf("expr: compile %q: %w", expr, err)
		}
		return c.add(slot{kind: slotDeferred, eval: eval}), nil
	}
	if s, ok := str(a); ok {
		switch {
		case isPath(s):
			if err := CheckTemplate(s); err != nil {
				return "", &CompileError{Pointer: ptr, Reason: err.Error(), Err: err}
			}
			return c.add(slot{kind: slotPath, text: s}), nil
		case strings.Contains(s, "{{"):
			if err := CheckTemplate(s); err != nil {
				return "", &CompileError{Pointer: ptr, Reason: err.Error(), Err: err}
			}
			return c.add(slot{kind: slotTemplate, text: s}), nil
		}
		return c.add(slot{kind: slotLiteral, value: s}), nil
	}
	if _, ok := list(a); ok {
		if deeperThan(a, MaxDepth) {
			return "", &CompileError{Pointer: ptr, Reason: fmt.Sprintf("literal nests deeper than %d", MaxDepth), Err: ErrTooDeep}
		}
		if dynamic(a) {
			if err := checkDynamic(a); err != nil {
				return "", &CompileError{Pointer: ptr, Reason: err.Error(), Err: err}
			}
			return c.add(slot{kind: slotResolved, value: a}), nil
		}
	}
	return c.add(slot{kind: slotLiteral, value: a}), nil
}

// pattern compiles the pattern argument of matches. A literal pattern is compiled to
// a regexp now, once; a path or template pattern is compiled when evaluated.
func (c *compiler) pattern(a any, ptr string, depth int) (string, error) {
	s, ok := str(a)
	if !ok {
		if _, isObject := object(a); isObject {
			return c.argument(a, ptr, depth, false)
		}
		return "", invalid(ptr, "matches pattern must be a string, got %s", describe(a))
	}
	if isPath(s) || strings.Contains(s, "{{") {
		return c.argument(a, ptr, depth, false)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return "", invalid(ptr, "matches pattern %q is not a valid regular expression: %v", s, err)
	}
	return c.add(slot{kind: slotLiteral, value: re}), nil
}

// dynamic reports whether a literal array or map holds a path or a template.
func dynamic(v any) bool {
	if s, ok := str(v); ok {
		return isPath(s) || strings.Contains(s, "{{")
	}
	if l, ok := list(v); ok {
		return slices.ContainsFunc(l, dynamic)
	}
	if m, ok := object(v); ok {
		for _, e := range m {
			if dynamic(e) {
				return true
			}
		}
	}
	return false
}

// checkDynamic applies CheckTemplate to every path and template in a literal array or
// map (whose depth the caller has bounded).
func checkDynamic(v any) error {
	if s, ok := str(v); ok {
		if isPath(s) || strings.Contains(s, "{{") {
			return CheckTemplate(s)
		}
		return nil
	}
	if l, ok := list(v); ok {
		for _, e := range l {
			if err := checkDynamic(e); err != nil {
				return err
			}
		}
		return nil
	}
	if m, ok := object(v); ok {
		for _, e := range m {
			if err := checkDynamic(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func invalid(ptr, format string, args ...any) error {
	return &CompileError{Pointer: ptr, Reason: fmt.Sprintf(format, args...), Err: ErrInvalidCondition}
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// describe names the JSON type of v for error messages.
func describe(v any) string {
	if v == nil {
		return "null"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	if _, ok := str(v); ok {
		return "a string"
	}
	if _, ok := v.(bool); ok {
		return "a boolean"
	}
	if _, ok := list(v); ok {
		return "an array"
	}
	if _, ok := object(v); ok {
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
