// Package events owns svcflow's event catalogue (every event of spec section 6, its payload
// fields, whether a webhook may register for it, its aliases) and the pure parts of webhook
// delivery: signing and verification, the retry policy and the circuit breaker. It does no
// I/O of its own: the engine stores events and deliveries, and the worker sends them.
package events

import "slices"

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
	// Fields are the payload fields, as the spec's tables list them. Variants lists other
	// complete field sets of the same event (pbot_approval_requested for a standalone
	// agent); a payload matches one of Fields or Variants.
	Fields   []Field
	Variants [][]Field
	// Filterable events honour a registration's filter (tags, content_type): the
	// document events only.
	Filterable bool
}

func req(names ...string) []Field {
	out := make([]Field, len(names))
	for i, n := range names {
		out[i] = Field{Name: n}
	}
	return out
}

func opt(fs []Field, names ...string) []Field {
	for _, n := range names {
		fs = append(fs, Field{Name: n, Optional: true})
	}
	return fs
}

// Catalogue is every event of spec section 6 (and the form reminder DESIGN.md names), in the
// spec's order.
var Catalogue = []Spec{
	// Registrable events (also reach the catch-all).
	{Name: "workflow_run_started", Registrable: true, Aliases: []string{"workflow.started"}, Fields: req("run_id", "workflow_id", "input_payload")},
	{Name: "workflow_run_completed", Registrable: true, Aliases: []string{"workflow.completed"}, Fields: req("run_id", "workflow_id", "result")},
	{Name: "workflow_run_failed", Registrable: true, Aliases: []string{"workflow.failed"}, Fields: req("run_id", "workflow_id", "reason", "context")},
	{Name: "workflow_run_cancelled", Registrable: true, Aliases: []string{"workflow.cancelled"}, Fields: req("run_id", "workflow_id", "reason", "actor")},
	{Name: "workflow_run_retried", Registrable: true, Fields: req("run_id", "retry_of", "from_step", "reason", "actor")},
	{Name: "pbot_approval_requested", Registrable: true,
		Fields:   req("run_id", "step_id", "workflow_id", "comment", "request_payload", "status"),
		Variants: [][]Field{req("source", "agent_run_id", "run_id", "step_id", "question", "options", "context_summary", "urgency", "status")}},
	{Name: "pbot_approval_decided", Registrable: true, Fields: req("run_id", "step_id", "approval_id", "approved", "comment", "decided_at")},
	{Name: "external_form_created", Registrable: true, Fields: req("form_id", "form_name", "is_public", "created_at")},
	{Name: "external_form_updated", Registrable: true, Fields: req("form_id", "form_name", "changes")},
	{Name: "external_form_deleted", Registrable: true, Fields: req("form_id", "form_name", "deleted_at")},
	{Name: "external_form_submitted", Registrable: true, Fields: opt(req("form_id", "form_name", "submission_id", "submitted_at",
		"triggered_run_id", "triggered_execution_type", "has_triggered_workflow"), "submitted_by")},
	{Name: "document.uploaded", Registrable: true, Filterable: true, Fields: req("document_id", "name", "content_type", "size_bytes")},
	{Name: "document.version_created", Registrable: true, Filterable: true, Fields: req("document_id", "version", "content_type", "size_bytes")},
	{Name: "document.deleted", Registrable: true, Filterable: true, Fields: req("document_id")},
	{Name: "document.expired", Registrable: true, Filterable: true, Fields: req("document_id", "name", "expires_at")},

	// Catch-all only events.
	{Name: "step.started", Fields: req("run_id", "step_index", "step_type")},
	{Name: "step.completed", Fields: req("run_id", "step_index")},
	{Name: "step.failed", Fields: req("run_id", "step_index", "error")},
	{Name: "loop.started", Fields: opt(req("run_id", "step_id", "step_index", "mode", "total_items"), "agent_run_id")},
	{Name: "loop.failed", Fields: req("run_id", "step_id", "step_index", "mode", "error")},
	{Name: "agent.started", Fields: req("agent_run_id")},
	{Name: "agent.completed", Fields: opt(req("agent_run_id", "status", "iterations"), "final_answer", "confidence", "paused_reason")},
	{Name: "agent.paused", Fields: opt(req("agent_run_id", "status", "iterations"), "final_answer", "confidence", "paused_reason")},
	{Name: "agent.cancelled", Fields: opt(req("agent_run_id", "status", "iterations"), "final_answer", "confidence", "paused_reason")},
	{Name: "agent.failed", Fields: opt(req("agent_run_id", "status", "iterations"), "final_answer", "confidence", "paused_reason")},
	{Name: "form_pause_created", Fields: req("form_pause_id", "run_id", "step_id", "expected_keys", "expires_at")},
	{Name: "form_submitted", Fields: opt(req("form_pause_id", "submission_id", "run_id", "step_id"), "claimed_by")},
	{Name: "form_expired", Fields: req("run_id", "step_id")},
	{Name: "form_reminder", Fields: req("run_id", "step_id", "form_pause_id", "reminder_index", "expires_at")},
	{Name: "matcher.started", Fields: req("run_id", "step_index", "left_size", "right_size")},
	{Name: "matcher.completed", Fields: req("run_id", "step_index", "schema_version", "matched_count", "unmatched_left_count", "unmatched_right_count", "policy")},
	{Name: "matcher.failed", Fields: req("run_id", "step_index", "error")},
	{Name: "nway_matcher.started", Fields: req("run_id", "step_index", "leg_counts")},
	{Name: "nway_matcher.completed", Fields: req("run_id", "step_index", "schema_version", "counts", "result_reference")},
	{Name: "nway_matcher.failed", Fields: req("run_id", "step_index", "error")},
	{Name: "playbook_request.listed", Fields: req("request_id", "package_id", "key", "code", "title", "listed_by")},
	{Name: "playbook_request.awaiting_admin", Fields: req("request_id", "package_id", "title", "code", "deadline_hours")},
	{Name: "playbook_request.returned", Fields: opt(req("request_id", "title", "notes"), "package_id")},
	{Name: "workflow_creation_status", Fields: opt(req("process_id", "status"), "workflow_id", "workflow_name", "error")},
	{Name: "llm_generation_status", Fields: opt(req("generation_id", "status"), "result")},
	{Name: "llm_key_missing", Fields: req("run_id", "event", "message")},
	{Name: "custom_table_dropped_fields", Fields: req("run_id", "step_index", "table", "dropped")},
}

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
