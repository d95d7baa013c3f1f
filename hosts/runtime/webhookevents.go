package runtime

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine/events"
)

// The webhooks section of the OpenAPI 3.1 documents: every event of the catalogue as the
// request svcflow sends (events.WebhookDelivery's body, the signature headers), each payload with
// its own schema, made from the payload's Go type (engine/events/payloads.go). OpenAPI 3.0
// has no webhooks: its documents keep the schemas in components (downgrade drops the
// section), so that a client generated from them has the types.

// declareWebhookEvents adds every event of the catalogue to o's webhooks.
func declareWebhookEvents(o *huma.OpenAPI) {
	reg := o.Components.Schemas
	envelope := reg.Schema(reflect.TypeFor[events.WebhookDelivery](), true, "")
	if s := reg.SchemaFromRef(envelope.Ref); s != nil {
		s.Properties["payload"] = &huma.Schema{Type: huma.TypeObject, Description: s.Properties["payload"].Description}
	}
	if o.Webhooks == nil {
		o.Webhooks = map[string]*huma.PathItem{}
	}
	for i := range events.Catalogue {
		spec := &events.Catalogue[i]
		var payloads []*huma.Schema
		for _, p := range spec.Payloads() {
			payloads = append(payloads, reg.Schema(reflect.TypeOf(p), true, ""))
		}
		payload := payloads[0]
		if len(payloads) > 1 {
			payload = &huma.Schema{OneOf: payloads}
		}
		o.Webhooks[spec.Name] = &huma.PathItem{Post: &huma.Operation{
			OperationID: "webhook-" + strings.NewReplacer("_", "-", ".", "-").Replace(spec.Name),
			Summary:     spec.Name,
			Description: webhookDescription(spec),
			Tags:        []string{"Webhook events"},
			Parameters:  deliveryHeaders(),
			// svcflow sends it with no credential: the signature headers authenticate it.
			Security: []map[string][]string{},
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
				AllOf: []*huma.Schema{envelope, {Type: huma.TypeObject, Properties: map[string]*huma.Schema{
					"event":   {Type: huma.TypeString, Enum: []any{spec.Name}},
					"payload": payload,
				}}},
			}}}},
			Responses: map[string]*huma.Response{
				"2XX": {Description: "Any 2xx answered within 10 s acknowledges the delivery; its body is ignored."},
				"default": {Description: "Anything else fails the attempt. 408, 429 and 5xx (and a timeout or a connection error) are tried again, " +
					"up to 5 times, with backoff from 1 s that honours Retry-After; any other answer fails the delivery at once."},
			},
		}}
	}
}

func webhookDescription(spec *events.Spec) string {
	var b strings.Builder
	switch {
	case spec.Registrable && len(spec.Aliases) > 0:
		fmt.Fprintf(&b, "Sent to registrations of %s (POST /webhooks; alias %s) and to the organization's catch-all webhook_url.", spec.Name, strings.Join(spec.Aliases, ", "))
	case spec.Registrable:
		fmt.Fprintf(&b, "Sent to registrations of %s (POST /webhooks) and to the organization's catch-all webhook_url.", spec.Name)
	default:
		b.WriteString("Sent to the organization's catch-all webhook_url only (not registrable).")
	}
	if spec.Filterable {
		b.WriteString(" A registration's filter (tags, content_type) narrows it.")
	}
	if len(spec.OtherPayloads) > 0 {
		b.WriteString(" Its payload is one of several shapes (oneOf).")
	}
	if strings.HasPrefix(spec.Name, "playbook_request.") {
		b.WriteString(" Declared as the spec gives it; this build does not emit it yet (playbooks do not exist).")
	}
	return b.String()
}

// deliveryHeaders are the headers of every delivery (events.Headers).
func deliveryHeaders() []*huma.Param {
	sig := &huma.Schema{Type: huma.TypeString, Pattern: "^" + events.SignaturePrefix + "[0-9a-f]{64}$"}
	return []*huma.Param{
		{Name: events.HeaderDeliveryID, In: "header", Required: true, Schema: &huma.Schema{Type: huma.TypeString},
			Description: "The delivery's id (the body's delivery_id): the same on every retry. Keep the ids handled, to drop a retry or a replay."},
		{Name: events.HeaderTimestamp, In: "header", Required: true, Schema: &huma.Schema{Type: huma.TypeString, Pattern: "^[0-9]+$"},
			Description: "When this attempt was sent, in Unix seconds. Refuse one further than 5 minutes from your clock."},
		{Name: events.HeaderSignature, In: "header", Schema: sig,
			Description: "sha256=<lowercase hex>: HMAC-SHA256 of the raw body with the registration's secret. Absent when the registration has no secret, and on deliveries to the catch-all webhook_url."},
		{Name: events.HeaderSignatureTimestamped, In: "header", Schema: sig,
			Description: "sha256=<lowercase hex>: HMAC-SHA256 of \"<X-Svc-Timestamp>.<raw body>\" with the secret; prefer it (it binds the timestamp, so a captured delivery cannot be replayed later). Absent when X-Svc-Signature is."},
	}
}
