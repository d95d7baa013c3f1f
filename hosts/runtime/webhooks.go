package runtime

import (
	"context"
	"net/http"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Webhook routes: registrations of targets for registrable events (spec section 2,
// "Webhook registration"). No answer carries a secret: has_secret says whether there is
// one. Delivery is the worker's.

// WebhookFilter narrows the deliveries of a document event.
type WebhookFilter struct {
	Tags        []string `json:"tags,omitempty" doc:"Deliver only for documents carrying at least one of these tags (1-100 bytes each, at most 50)."`
	ContentType string   `json:"content_type,omitempty" example:"text/csv" doc:"Deliver only for documents of this media type (parameters and case ignored); text/* matches every text type."`
}

func (f *WebhookFilter) filter() *svctype.WebhookFilter {
	if f == nil {
		return nil
	}
	return &svctype.WebhookFilter{Tags: f.Tags, ContentType: f.ContentType}
}

// WebhookBody is the body of POST /webhooks. The secret has no schema constraint on
// purpose: the engine checks it and never quotes it, where Huma would.
type WebhookBody struct {
	Event       string         `json:"event" example:"workflow.completed" doc:"A registrable event (spec section 6) or an alias of one: workflow.started, workflow.completed, workflow.failed, workflow.cancelled."`
	URL         string         `json:"url" example:"https://hooks.example.com/svcflow" doc:"The target: an http(s) URL with a host and no credentials. Loopback, private, link-local and metadata addresses are refused (422 target_not_allowed) unless the deployment allows private targets."`
	Secret      string         `json:"secret,omitempty" doc:"Signs every delivery (X-Svc-Signature: sha256=<hex>, HMAC-SHA256 of the raw body), 1-512 bytes. Encrypted at rest; never returned."`
	Filter      *WebhookFilter `json:"filter,omitempty" doc:"Document events only (document.*); 422 on any other event."`
	AutoPayload map[string]any `json:"auto_payload,omitempty" doc:"An object merged into every payload sent to this target (the event's own fields win), at most 64 KiB."`
}

// WebhookPatchBody is the body of PATCH /webhooks/{webhookId}: a field left out stays as it
// is.
type WebhookPatchBody struct {
	Event       *string        `json:"event,omitempty" doc:"A registrable event or an alias of one."`
	URL         *string        `json:"url,omitempty" doc:"A new target, checked as on registration."`
	Secret      *string        `json:"secret,omitempty" doc:"A new secret (1-512 bytes), or \"\" to remove it. Never returned."`
	Filter      *WebhookFilter `json:"filter,omitempty" doc:"Replaces the filter; {} removes it."`
	AutoPayload map[string]any `json:"auto_payload,omitempty" doc:"Replaces auto_payload; {} removes it."`
	Disabled    *bool          `json:"disabled,omitempty" doc:"true stops deliveries to the target; false re-enables it and resets consecutive_failures."`
}

// Webhook is a registration as every answer shows it: never its secret.
type Webhook struct {
	ID                  string                  `json:"id" example:"whk_0b7c…" doc:"Registration id."`
	Event               string                  `json:"event" example:"workflow_run_completed" doc:"The event, by its canonical name."`
	EventAlias          string                  `json:"event_alias,omitempty" example:"workflow.completed" doc:"The alias the registration named the event by, when it used one."`
	URL                 string                  `json:"url" doc:"The target."`
	HasSecret           bool                    `json:"has_secret" doc:"Whether deliveries are signed (the secret itself is never returned)."`
	Filter              *WebhookFilter          `json:"filter,omitempty" doc:"The filter of a document event, when there is one."`
	AutoPayload         map[string]any          `json:"auto_payload,omitempty" doc:"Merged into every payload sent to this target."`
	Disabled            bool                    `json:"disabled" doc:"A disabled target failed 10 deliveries in a row (or was disabled by PATCH); a successful delivery or PATCH {\"disabled\": false} re-enables it."`
	DisabledAt          *time.Time              `json:"disabled_at,omitempty" doc:"When it was disabled."`
	ConsecutiveFailures int                     `json:"consecutive_failures" doc:"Deliveries failed in a row since the last success (each after all its retries)."`
	Circuit             *svctype.WebhookCircuit `json:"circuit,omitempty" doc:"GET and list only: the circuit of the target's address, which counts failed requests (retries among them): it can be open while consecutive_failures is still 0."`
	CreatedAt           time.Time               `json:"created_at"`
	UpdatedAt           time.Time               `json:"updated_at" doc:"When the registration last changed (not its health)."`
}

func webhookOf(w svctype.Webhook) Webhook {
	out := Webhook{
		ID: w.ID, Event: w.Event, EventAlias: w.EventAlias, URL: w.URL, HasSecret: w.HasSecret,
		AutoPayload: w.AutoPayload, Disabled: w.Disabled, DisabledAt: w.DisabledAt,
		ConsecutiveFailures: w.ConsecutiveFailures, Circuit: w.Circuit, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
	if w.Filter != nil {
		out.Filter = &WebhookFilter{Tags: w.Filter.Tags, ContentType: w.Filter.ContentType}
	}
	return out
}

// WebhookPath is the input of the routes under /webhooks/{webhookId}.
type WebhookPath struct {
	OrgParam
	WebhookID string `path:"webhookId" doc:"The registration's id (whk_…)."`
}

type webhookOutput struct {
	Body Webhook
}

var webhookNotFound = failure{notFound: "webhook not found"}

func (s *Server) registerWebhooks() {
	o := op("create-webhook", http.MethodPost, "/webhooks", "Register a webhook target for an event", "Webhooks")
	o.Description = "Registers `url` for one registrable event (or an alias of one). 422, located by JSON pointer, for an " +
		"event that cannot be registered (the message lists those that can), a URL that is not http(s) or carries " +
		"credentials, a secret outside 1-512 bytes, or a filter on an event other than document.*; 422 " +
		"`target_not_allowed` for a target on a loopback, private, link-local or metadata address. The secret is " +
		"encrypted and never returned (503 `master_key_missing` when the service has no master key)."
	o.DefaultStatus = http.StatusCreated
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable}
	o.Metadata = map[string]any{secretsMetadata: true}
	register(s, o, failure{}, s.createWebhook)

	o = op("list-webhooks", http.MethodGet, "/webhooks", "List the organization's webhook registrations", "Webhooks")
	o.Description = "Every registration, oldest first, a page at a time like every list; secrets are never shown."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listWebhooks)

	o = op("get-webhook", http.MethodGet, "/webhooks/{webhookId}", "Get a webhook registration", "Webhooks")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, webhookNotFound, s.getWebhook)

	o = op("update-webhook", http.MethodPatch, "/webhooks/{webhookId}", "Change a webhook registration", "Webhooks")
	o.Description = "Only the fields given change: `\"secret\": \"\"` removes the secret, `\"filter\": {}` the filter, " +
		"`\"auto_payload\": {}` the auto_payload (a `null` changes nothing, like a field left out); `\"disabled\": false` " +
		"re-enables a disabled target. The result is checked whole, as on registration (a new URL's address too)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusServiceUnavailable}
	o.Metadata = map[string]any{secretsMetadata: true}
	register(s, o, webhookNotFound, s.updateWebhook)

	o = op("delete-webhook", http.MethodDelete, "/webhooks/{webhookId}", "Delete a webhook registration", "Webhooks")
	o.Description = "The target receives nothing more, and its secret is gone."
	o.DefaultStatus = http.StatusNoContent
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, webhookNotFound, s.deleteWebhook)
}

type createWebhookInput struct {
	OrgParam
	Body WebhookBody
}

func (s *Server) createWebhook(ctx context.Context, in *createWebhookInput) (*webhookOutput, error) {
	w, err := s.eng.Webhooks.CreateWebhook(ctx, in.OrgID, engine.WebhookInput{
		Event: in.Body.Event, URL: in.Body.URL, Secret: in.Body.Secret,
		Filter: in.Body.Filter.filter(), AutoPayload: in.Body.AutoPayload,
	})
	if err != nil {
		return nil, err
	}
	return &webhookOutput{Body: webhookOf(*w)}, nil
}

type listWebhooksInput struct {
	OrgParam
	Paging
}

func (s *Server) listWebhooks(ctx context.Context, in *listWebhooksInput) (*answer[List[Webhook]], error) {
	page, err := s.eng.Webhooks.ListWebhooks(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[Webhook]]{Body: listOf(page, webhookOf)}, nil
}

func (s *Server) getWebhook(ctx context.Context, in *WebhookPath) (*webhookOutput, error) {
	w, err := s.eng.Webhooks.GetWebhook(ctx, in.OrgID, in.WebhookID)
	if err != nil {
		return nil, err
	}
	return &webhookOutput{Body: webhookOf(*w)}, nil
}

type updateWebhookInput struct {
	WebhookPath
	Body WebhookPatchBody
}

func (s *Server) updateWebhook(ctx context.Context, in *updateWebhookInput) (*webhookOutput, error) {
	w, err := s.eng.Webhooks.UpdateWebhook(ctx, in.OrgID, in.WebhookID, engine.WebhookPatch{
		Event: in.Body.Event, URL: in.Body.URL, Secret: in.Body.Secret, Filter: in.Body.Filter.filter(),
		AutoPayload: in.Body.AutoPayload, Disabled: in.Body.Disabled,
	})
	if err != nil {
		return nil, err
	}
	return &webhookOutput{Body: webhookOf(*w)}, nil
}

func (s *Server) deleteWebhook(ctx context.Context, in *WebhookPath) (*struct{}, error) {
	if err := s.eng.Webhooks.DeleteWebhook(ctx, in.OrgID, in.WebhookID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
