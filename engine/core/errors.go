package core

import (
	"errors"
	"fmt"
	"strings"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Sentinel errors of the run core. Features wrap them too; hosts map them to status codes
// in one place (hosts/runtime). Check with errors.Is.
var (
	// ErrNotFound: the resource does not exist in this organization (another org's resource
	// is not found too: existence is never revealed).
	ErrNotFound = svctype.ErrNotFound
	// ErrConflict: a unique name is taken, or the resource is in a state that forbids the call.
	ErrConflict = svctype.ErrConflict
	// ErrLeaseLost: the job's lease expired or the job was removed (a cancelled run) before
	// the worker committed; its transaction is rolled back and nothing it did lands.
	ErrLeaseLost = svctype.ErrLeaseLost
	// ErrInvalidOrg: the organization id is empty or malformed.
	ErrInvalidOrg = errors.New("invalid organization id")
	// ErrNoContextKey: the run exists but its context has no such key. It is an
	// ErrNotFound, so errors.Is(err, ErrNotFound) holds too.
	ErrNoContextKey = fmt.Errorf("%w: no such context key", ErrNotFound)
	// ErrInvalidCursor: a paging cursor that the listing did not issue (garbled, truncated,
	// or another listing's). Cursors are opaque, so there is nothing in one to correct: the
	// caller starts again from the first page.
	ErrInvalidCursor = storage.ErrInvalidCursor
	// ErrOutcomeUnknown fails a step whose call was made by MaxCallTries claims and never
	// committed: whether the other side acted on it is not known.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrNoSecrets: no secret source is registered (SetSecrets), so a step's call cannot
	// read a secret.
	ErrNoSecrets = errors.New("this engine has no secret source")
	// ErrIdempotencyKeyReused: an Idempotency-Key seen within IdempotencyWindow came with
	// another request (another workflow or input) than the one it started its run with.
	ErrIdempotencyKeyReused = errors.New("the idempotency key was used with another request")
)

// Problem is one thing wrong with an input, located by a JSON pointer.
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError is a request that is well formed but not acceptable: each problem names
// where (a JSON pointer into the request body) and what.
type ValidationError struct {
	Problems []Problem
	// Code, when set, names the problem for programs more precisely than
	// validation_failed (target_not_allowed); hosts answer it as the problem's code.
	Code string
}

func (e *ValidationError) Error() string {
	parts := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		if p.Pointer == "" {
			parts = append(parts, p.Message)
			continue
		}
		parts = append(parts, p.Pointer+": "+p.Message)
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// Invalid builds a ValidationError with one problem.
func Invalid(pointer, format string, args ...any) *ValidationError {
	return &ValidationError{Problems: []Problem{{Pointer: pointer, Message: fmt.Sprintf(format, args...)}}}
}
