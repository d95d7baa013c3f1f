package core

import "strings"

// OwnedContextKey reports whether a run's context key belongs to the engine: the run's
// input, and the __ keys (__run_id, __approved, __comment, __approval_decisions, ...).
// Nothing a person submits may set one: a form's expected key "input" would let a
// submission replace what the run record still shows as the run's input.
func OwnedContextKey(k string) bool { return k == "input" || strings.HasPrefix(k, "__") }
