package runtime

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/svctype"
)

// The contract's status sets: each is one named string enum in components.schemas
// (RunStatus, StepStatus, ...), and every field and filter of its Go type is a $ref to it,
// so a client generator makes one union type per set and a list filter takes exactly what
// an answer carries. TestResponseStatusesAreNamedEnums walks both committed documents for
// a status left a plain string.

// StatusSet is one set of statuses as the contract names it.
type StatusSet struct {
	// Name is the component schema's name.
	Name string
	Doc  string
	// Values in their lifecycle's order.
	Values []string
	// goType is the Go type of the set's fields; alias stands in for it in a registry.
	goType, alias reflect.Type
}

func statusSet[T ~string](name, doc string, values ...T) StatusSet {
	s := StatusSet{Name: name, Doc: doc, goType: reflect.TypeFor[T](), alias: reflect.TypeFor[statusRef[T]]()}
	for _, v := range values {
		s.Values = append(s.Values, string(v))
	}
	return s
}

// StatusSets are the runtime's status sets, by the svctype type each one is.
var StatusSets = []StatusSet{
	statusSet("RunStatus", "A run's status: running and paused are live, the others are final.",
		svctype.RunRunning, svctype.RunPaused, svctype.RunCompleted, svctype.RunFailed,
		svctype.RunCancelled, svctype.RunRejected, svctype.RunConditionNotMet),
	statusSet("StepStatus", "A step's status within its run.",
		svctype.StepPending, svctype.StepProcessing, svctype.StepCompleted, svctype.StepSkipped,
		svctype.StepFailed, svctype.StepCancelled),
	// The agent package's Status values; hosts do not import it, and
	// TestStatusSetsKnowEveryValue keeps the two lists the same.
	statusSet[svctype.AgentStatus]("AgentRunStatus", "An agent run's status: running and paused are live, the others are final.",
		"running", "paused", "completed", "failed", "budget_exceeded", "cancelled"),
	statusSet("ApprovalStatus", "An approval's status: pending until decided, cancelled with its run.",
		svctype.ApprovalPending, svctype.ApprovalApproved, svctype.ApprovalRejected, svctype.ApprovalCancelled),
	statusSet("FormPauseStatus", "A form pause's status: open until submitted or expired, cancelled with its run.",
		svctype.FormPauseOpen, svctype.FormPauseSubmitted, svctype.FormPauseExpired, svctype.FormPauseCancelled),
	statusSet("DeliveryStatus", "A webhook delivery's status: pending until an attempt succeeds or it gives up.",
		svctype.DeliveryPending, svctype.DeliverySucceeded, svctype.DeliveryFailed),
	statusSet("GenerationStatus", "A workflow drafting's status.",
		svctype.GenerationProcessing, svctype.GenerationCompleted, svctype.GenerationFailed),
	statusSet("RunOperationStatus", "A run operation's status: pending until a worker counts its runs, running while it works through them, then completed.",
		svctype.RunOperationPending, svctype.RunOperationRunning, svctype.RunOperationCompleted),
	statusSet("BundleStatus", "A process bundle's status: a draft until published, then immutable.",
		svctype.BundleDraft, svctype.BundlePublished),
}

// NamedEnum is the $ref to the string enum name in r's components, which it adds the first
// time: the one declaration of a set that every field of it refers to.
func NamedEnum(r huma.Registry, name, doc string, values ...string) *huma.Schema {
	schemas := r.Map()
	if _, done := schemas[name]; !done {
		enum := make([]any, 0, len(values))
		for _, v := range values {
			enum = append(enum, v)
		}
		schemas[name] = &huma.Schema{Type: huma.TypeString, Enum: enum, Description: doc}
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// RegisterStatusSchemas makes every field of a status type, in the documents built on r,
// a $ref to its set. The gateway's registry calls it too: its SDK routes answer the
// runtime's types.
func RegisterStatusSchemas(r huma.Registry) {
	for _, set := range StatusSets {
		r.RegisterTypeAlias(set.goType, set.alias)
	}
}

// statusRef is the type that stands in for the status type T in a registry: its schema is
// the $ref to T's set.
type statusRef[T ~string] string

// Schema is the $ref to the set of T.
func (statusRef[T]) Schema(r huma.Registry) *huma.Schema {
	for _, set := range StatusSets {
		if set.goType == reflect.TypeFor[T]() {
			return NamedEnum(r, set.Name, set.Doc, set.Values...)
		}
	}
	panic("runtime: no status set for " + reflect.TypeFor[T]().String())
}
