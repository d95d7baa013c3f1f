// Package steps holds the built-in step kinds that are plain functions of their properties
// and the step's transaction: matcher and nway_match, the reconciliation primitives
// (engine/match does the matching). NewEnvironment registers them. The other step types
// are not here: `loop` is the run core's own (it checkpoints per element), custom-table the
// custom-tables feature's (engine/tables), PbotApproval and PbotForm the pause kinds of the
// people in the loop (engine/hitl). Kinds here do no HTTP and keep no state between calls.
package steps

import (
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Builtins returns the built-in step kinds by name.
func Builtins() map[string]svctype.StepKind {
	return map[string]svctype.StepKind{
		Matcher: {Run: runMatcher, Validate: validateMatcher, FailedEvent: EventMatcherFailed, DocRows: documents.MaxMatchRows,
			RawProperties: []string{"left", "right"},
			// It writes nothing but its outputs: it runs before its transaction, and its
			// outputs are encoded there too (not while the SQLite writer is held).
			ReadOnly: func(map[string]any) bool { return true }},
		NWayMatch: {Run: runNWay, Validate: validateNWay, FailedEvent: EventNWayFailed, DocRows: documents.MaxMatchRows,
			Action: func(_ string, config map[string]any) (svctype.StepKind, error) { return NWayAction(config) }},
	}
}
