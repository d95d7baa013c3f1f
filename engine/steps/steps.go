// Package steps holds the built-in step kinds that are plain functions of their properties
// and the step's transaction: custom-table now; later matcher, nway_match, approval, form.
// The `loop` primitive is the executor's own (it checkpoints per element). Kinds here do
// no HTTP and keep no state between calls.
package steps

import (
	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Builtins returns the built-in step kinds by name.
func Builtins() map[string]svctype.StepKind {
	return map[string]svctype.StepKind{
		CustomTable: {Run: runCustomTable, Validate: validateCustomTable, ReadOnly: readsOnly},
		Matcher: {Run: runMatcher, Validate: validateMatcher, FailedEvent: EventMatcherFailed, DocRows: documents.MaxMatchRows,
			RawProperties: []string{"left", "right"},
			// It writes nothing but its outputs: it runs before its transaction, and its
			// outputs are encoded there too (not while the SQLite writer is held).
			ReadOnly: func(map[string]any) bool { return true }},
		NWayMatch: {Run: runNWay, Validate: validateNWay, FailedEvent: EventNWayFailed, DocRows: documents.MaxMatchRows},
	}
}
