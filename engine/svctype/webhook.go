package svctype

import (
	"mime"
	"slices"
	"strings"
	"time"
)

// Webhook is an organization's registration of a target for one registrable event (spec
// section 2, "Webhook registration"). Its secret travels sealed (Sealed, under the engine's
// keyring with the organization id and webhook:<id> as additional data): no field of this
// type holds it in plaintext, and Sealed is never encoded to JSON.
type Webhook struct {
	ID    string `json:"id"`
	OrgID string `json:"-"`
	// Event is the canonical event name (workflow_run_started); EventAlias is the alias the
	// registration used (workflow.started), empty when it used the canonical name.
	Event      string `json:"event"`
	EventAlias string `json:"event_alias,omitempty"`
	URL        string `json:"url"`
	HasSecret  bool   `json:"has_secret"`
	// Filter narrows a document event's deliveries; nil when the registration has none.
	Filter *WebhookFilter `json:"filter,omitempty"`
	// AutoPayload is merged into every payload sent to this target (MergeAutoPayload).
	AutoPayload map[string]any `json:"auto_payload,omitempty"`

	// Disabled targets failed ConsecutiveFailures times in a row (or were disabled by
	// their organization) at DisabledAt; a success re-enables them.
	Disabled            bool       `json:"disabled"`
	DisabledAt          *time.Time `json:"disabled_at,omitempty"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	// Circuit is the state of the circuit of the target's address, which counts failed
	// requests (a delivery's retries among them) where ConsecutiveFailures counts
	// deliveries that failed after all their retries: it can be open while no delivery
	// has failed yet. Filled by the reads that answer a registration.
	Circuit *WebhookCircuit `json:"circuit,omitempty"`

	Sealed      []byte `json:"-"`
	MasterKeyID string `json:"-"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WebhookCircuit is the circuit of a target's address as a registration shows it.
type WebhookCircuit struct {
	// State is closed (deliveries go), open (deliveries are held until OpenUntil) or
	// half_open (one delivery is out as a probe).
	State string `json:"state" enum:"closed,open,half_open"`
	// Failures counts the requests to the address that failed in a row.
	Failures  int        `json:"failures"`
	OpenUntil *time.Time `json:"open_until,omitempty"`
}

// WebhookFilter is a registration's filter, honoured for document events only. A document
// passes when it carries at least one of Tags (or Tags is empty) and its content type is
// ContentType (or ContentType is empty).
type WebhookFilter struct {
	Tags        []string `json:"tags,omitempty"`
	ContentType string   `json:"content_type,omitempty"`
}

// IsZero reports whether f filters nothing.
func (f *WebhookFilter) IsZero() bool {
	return f == nil || (len(f.Tags) == 0 && f.ContentType == "")
}

// Matches reports whether a document with tags and contentType passes f. Tags compare
// exactly; content types compare as media types: case-insensitively and without
// parameters (text/csv matches "text/csv; charset=utf-8"), and "text/*" matches any text
// type. A nil filter passes everything.
func (f *WebhookFilter) Matches(tags []string, contentType string) bool {
	if f.IsZero() {
		return true
	}
	if len(f.Tags) > 0 && !slices.ContainsFunc(f.Tags, func(t string) bool { return slices.Contains(tags, t) }) {
		return false
	}
	if f.ContentType == "" {
		return true
	}
	want, got := mediaType(f.ContentType), mediaType(contentType)
	if major, ok := strings.CutSuffix(want, "/*"); ok {
		return strings.HasPrefix(got, major+"/")
	}
	return want == got
}

func mediaType(s string) string {
	if mt, _, err := mime.ParseMediaType(s); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(s, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// MergeAutoPayload returns payload with auto's fields added: a field of the event's own
// payload wins over an auto_payload field of the same name, so the catalogue's fields are
// always what the event says. Neither argument is modified; with an empty auto the payload
// itself is returned.
func MergeAutoPayload(payload, auto map[string]any) map[string]any {
	if len(auto) == 0 {
		return payload
	}
	out := make(map[string]any, len(payload)+len(auto))
	for k, v := range auto {
		out[k] = v
	}
	for k, v := range payload {
		out[k] = v
	}
	return out
}
