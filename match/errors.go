package match

import (
	"errors"
	"strings"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrInvalidOptions: the step's properties are unusable (a leg count outside 2-4, an
	// unknown tolerance type, a fuzzyThreshold outside 0-100, ...). The error is a
	// *ValidationError that lists every problem.
	ErrInvalidOptions = errors.New("match: invalid options")
	// ErrTooManyPairs: a matcher with no matchOn, tolerance or dateWindowDays would have to
	// compare every left record with every right record and the product is over
	// MaxUnindexedPairs.
	ErrTooManyPairs = errors.New("match: too many candidate pairs without an index")
	// ErrRule: a rule's evaluation failed (not: returned false). The error names the rule
	// and the group.
	ErrRule = errors.New("match: rule failed to evaluate")
	// ErrInvalidRecords: raw records are not a JSON array of objects (NewRawRecords).
	ErrInvalidRecords = errors.New("match: invalid records")
)

// Problem is one thing wrong with the step's properties, located by a JSON pointer relative
// to the properties object ("/tolerances/amount/type").
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError lists what is wrong with the options given to Match or NWay. It is
// ErrInvalidOptions for errors.Is.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		parts = append(parts, p.Pointer+": "+p.Message)
	}
	return "match: invalid options: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalidOptions) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidOptions }

// pointerToken escapes a map key for use as one JSON pointer segment (RFC 6901).
func pointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
