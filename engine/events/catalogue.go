// Package events owns svcflow's event catalogue (every event of spec section 6, its payload
// fields, whether a webhook may register for it, its aliases) and the pure parts of webhook
// delivery: signing and verification, the retry policy and the circuit breaker. It does no
// I/O of its own: the engine stores events and deliveries, and the worker sends them.
package events

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Field is one payload field of an event. Optional fields (`?` in the spec) are absent or
// null when they do not apply.
type Field struct {
	Name     string
	Optional bool
}

// Spec is one event of the catalogue.
type Spec struct {
	Name string
	// Registrable events may be registered by POST /webhooks; every event reaches the
	// org's catch-all webhook_url.
	Registrable bool
	// Aliases are other names a registration may use for it (workflow.started ...).
	Aliases []string
	// Payload is a zero value of the event's payload type (payloads.go): its fields are
	// the payload's, and the OpenAPI documents declare its schema under the type's name.
	// OtherPayloads are other complete payloads of the same event (pbot_approval_requested
	// for a standalone agent); a payload is one of Payload or OtherPayloads.
	Payload       any
	OtherPayloads []any
	// Fields and Variants are the payload fields of Payload and of each of OtherPayloads,
	// read from their types.
	Fields   []Field
	Variants [][]Field
	// Filterable events honour a registration's filter (tags, content_type): the
	// document events only.
	Filterable bool
}

// Payloads is the payload type of s, then its other payload types.
func (s *Spec) Payloads() []any { return append([]any{s.Payload}, s.OtherPayloads...) }

// fieldsOf lists the JSON fields of a payload struct: a field is optional when its tag
// says omitempty.
func fieldsOf(payload any) []Field {
	t := reflect.TypeOf(payload)
	var out []Field
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			panic(fmt.Sprintf("events: payload field %s.%s has no json name", t.Name(), f.Name))
		}
		out = append(out, Field{Name: name, Optional: slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	return out
}

// withFields fills every spec's Fields and Variants from its payload types.
func withFields(specs []Spec) []Spec {
	for i := range specs {
		s := &specs[i]
		s.Fields = fieldsOf(s.Payload)
		for _, p := range s.OtherPayloads {
			s.Variants = append(s.Variants, fieldsOf(p))
		}
	}
	return specs
}

// Catalogue is every event of spec section 6 (and the form reminder DESIGN.md names), in the
// spec's order.
var Catalogue = withFields([]Spec{
	// Registrable events (also reach the catch-all).
	{Name: "workflow_run_started", Registrable: true, Aliases: []string{"workflow.started"}, Payload: WorkflowRunStartedEvent{}},
	{Name: "workflow_run_completed", Registrable: true, Aliases: []string{"workflow.completed"}, Payload: WorkflowRunCompletedEvent{}},
	{Name: "workflow_run_failed", Registrable: true, Aliases: []string{"workflow.failed"}, Payload: WorkflowRunFailedEvent{}},
	{Name: "workflow_run_cancelled", Registrable: true, Aliases: []string{"workflow.cancelled"}, Payload: WorkflowRunCancelledEvent{}},
	{Name: "workflow_run_retried", Registrable: true, Payload: WorkflowRunRetriedEvent{}},
	{Name: "pbot_approval_requested", Registrable: true,
		Payload: PbotApprovalRequestedEvent{}, OtherPayloads: []any{AgentApprovalRequestedEvent{}}},
	{Name: "pbot_approval_decided", Registrable: true, Payload: PbotApprovalDecidedEvent{}},
	{Name: "external_form_created", Registrable: true, Payload: ExternalFormCreatedEvent{}},
	{Name: "external_form_updated", Registrable: true, Payload: ExternalFormUpdatedEvent{}},
	{Name: "external_form_deleted", Registrable: true, Payload: ExternalFormDeletedEvent{}},
	{Name: "external_form_submitted", Registrable: true, Payload: ExternalFormSubmittedEvent{}},
	{Name: "document.uploaded", Registrable: true, Filterable: true, Payload: DocumentUploadedEvent{}},
	{Name: "document.version_created", Registrable: true, Filterable: true, Payload: DocumentVersionCreatedEvent{}},
	{Name: "document.deleted", Registrable: true, Filterable: true, Payload: DocumentDeletedEvent{}},
	{Name: "document.expired", Registrable: true, Filterable: true, Payload: DocumentExpiredEvent{}},

	// Catch-all only events.
	{Name: "step.started", Payload: StepStartedEvent{}},
	{Name: "step.completed", Payload: StepCompletedEvent{}},
	{Name: "step.failed", Payload: StepFailedEvent{}},
	{Name: "loop.started", Payload: LoopStartedEvent{}},
	{Name: "loop.failed", Payload: LoopFailedEvent{}},
	{Name: "agent.started", Payload: AgentStartedEvent{}},
	{Name: "agent.completed", Payload: AgentCompletedEvent{}},
	{Name: "agent.paused", Payload: AgentPausedEvent{}},
	{Name: "agent.cancelled", Payload: AgentCancelledEvent{}},
	{Name: "agent.failed", Payload: AgentFailedEvent{}},
	{Name: "form_pause_created", Payload: FormPauseCreatedEvent{}},
	{Name: "form_submitted", Payload: FormSubmittedEvent{}},
	{Name: "form_expired", Payload: FormExpiredEvent{}},
	{Name: "form_reminder", Payload: FormReminderEvent{}},
	{Name: "matcher.started", Payload: MatcherStartedEvent{}},
	{Name: "matcher.completed", Payload: MatcherCompletedEvent{}},
	{Name: "matcher.failed", Payload: MatcherFailedEvent{}},
	{Name: "nway_matcher.started", Payload: NWayMatcherStartedEvent{}},
	{Name: "nway_matcher.completed", Payload: NWayMatcherCompletedEvent{}},
	{Name: "nway_matcher.failed", Payload: NWayMatcherFailedEvent{}},
	{Name: "playbook_request.listed", Payload: PlaybookRequestListedEvent{}},
	{Name: "playbook_request.awaiting_admin", Payload: PlaybookRequestAwaitingAdminEvent{}},
	{Name: "playbook_request.returned", Payload: PlaybookRequestReturnedEvent{}},
	{Name: "workflow_creation_status", Payload: WorkflowCreationStatusEvent{}},
	{Name: "llm_generation_status", Payload: LLMGenerationStatusEvent{}},
	{Name: "llm_key_missing", Payload: LLMKeyMissingEvent{}},
	{Name: "custom_table_dropped_fields", Payload: CustomTableDroppedFieldsEvent{}},
})

var byName = func() map[string]*Spec {
	m := map[string]*Spec{}
	for i := range Catalogue {
		s := &Catalogue[i]
		m[s.Name] = s
		for _, a := range s.Aliases {
			m[a] = s
		}
	}
	return m
}()

// Lookup returns the catalogue entry of an event name or alias.
func Lookup(name string) (*Spec, bool) {
	s, ok := byName[name]
	return s, ok
}

// Canonical returns the registrable event a registration's event (a name or an alias)
// means, and false when it is not registrable.
func Canonical(name string) (string, bool) {
	s, ok := byName[name]
	if !ok || !s.Registrable {
		return "", false
	}
	return s.Name, true
}

// Registrable lists the registrable events' names and aliases, sorted: what a 422 for an
// unknown event lists.
func Registrable() []string {
	var out []string
	for _, s := range Catalogue {
		if s.Registrable {
			out = append(out, s.Name)
			out = append(out, s.Aliases...)
		}
	}
	slices.Sort(out)
	return out
}
