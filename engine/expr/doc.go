// Package expr owns the expression surface of a workflow definition: @paths into the
// run context, {{templates}}, prefix tokens such as doc: and orgconfig:, and condition
// objects. It does no I/O of its own: prefix tokens are resolved by functions that the
// caller registers on an Evaluator, and everything else is pure evaluation over Vars.
//
// Condition objects are compiled into gval expressions over a language in which every
// operator is a gval function; Compile once, then Eval as often as needed, from any
// number of goroutines.
package expr

import "errors"

// Bounds checked when a workflow is created.
const (
	// MaxDepth is the deepest nesting of condition objects that Compile accepts.
	MaxDepth = 64
	// MaxTemplateBytes is the largest template string that CheckTemplate accepts.
	MaxTemplateBytes = 64 << 10
	// MaxNodes is the most operators and arguments, counted together, that one
	// condition object may hold ({"equal": ["@a", 1]} is three). Compiling costs some
	// microseconds a node: the bound keeps a 10 MiB request from buying seconds of it.
	MaxNodes = 1000
)

// Errors returned by this package; check them with errors.Is.
var (
	// ErrTooDeep means a condition nests operator objects (or a literal nests
	// arrays and maps) deeper than MaxDepth.
	ErrTooDeep = errors.New("expr: nesting too deep")
	// ErrTemplateTooLarge means a template string is longer than MaxTemplateBytes.
	ErrTemplateTooLarge = errors.New("expr: template too large")
	// ErrInvalidTemplate means a template has a "{{" with no closing "}}".
	ErrInvalidTemplate = errors.New("expr: invalid template")
	// ErrInvalidCondition means a condition object cannot be compiled: an unknown
	// operator, a wrong number of arguments, or a bad literal regular expression.
	ErrInvalidCondition = errors.New("expr: invalid condition")
	// ErrConditionTooLarge means a condition holds more than MaxNodes operators and
	// arguments.
	ErrConditionTooLarge = errors.New("expr: condition too large")
	// ErrReservedSegment means a path names __proto__, constructor or prototype (see
	// CheckPath).
	ErrReservedSegment = errors.New("expr: reserved path segment")
)
