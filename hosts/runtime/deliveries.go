package runtime

import (
	"context"
	"net/http"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// DeliveryPath is the input of the routes under /deliveries/{deliveryId}.
type DeliveryPath struct {
	OrgParam
	DeliveryID string `path:"deliveryId" doc:"The delivery's delivery_id (dlv_...)."`
}

var deliveryNotFound = failure{notFound: "delivery not found",
	conflict: "the delivery is pending: it will be sent again by itself"}

func (s *Server) registerDeliveries() {
	o := op("list-webhook-deliveries", http.MethodGet, "/webhooks/{webhookId}/deliveries", "A webhook's deliveries, newest first", "Webhooks")
	o.Description = "Each delivery of events to this registered target: status (pending, succeeded, failed), " +
		"attempts, the last answer's status code and error, and the next attempt. GET /deliveries/{deliveryId} " +
		"shows every attempt."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{notFound: "webhook not found", in: "query"}, s.listWebhookDeliveries)

	o = op("get-delivery", http.MethodGet, "/deliveries/{deliveryId}", "A delivery and every attempt", "Webhooks")
	o.Description = "Every attempt in order: when, the outcome (succeeded, retry, failed, skipped while the " +
		"target's circuit was open), the status code, the latency, the error and the next attempt."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, deliveryNotFound, s.getDelivery)

	o = op("redeliver", http.MethodPost, "/deliveries/{deliveryId}/redeliver", "Send a delivery again", "Webhooks")
	o.Description = "Sends an ended delivery (succeeded or failed) once more: the same delivery_id and bytes, " +
		"with a new round of retries. 409 while it is pending."
	o.DefaultStatus = http.StatusAccepted
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, deliveryNotFound, s.redeliver)
}

type listWebhookDeliveriesInput struct {
	OrgParam
	WebhookID string `path:"webhookId" doc:"The webhook's id."`
	Paging
}

func (s *Server) listWebhookDeliveries(ctx context.Context, in *listWebhookDeliveriesInput) (*answer[List[svctype.Delivery]], error) {
	page, err := s.eng.Webhooks.ListDeliveries(ctx, in.OrgID, in.WebhookID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.Delivery]]{Body: listOf(page, same[svctype.Delivery])}, nil
}

func (s *Server) getDelivery(ctx context.Context, in *DeliveryPath) (*answer[*engine.DeliveryDoc], error) {
	d, err := s.eng.Webhooks.GetDelivery(ctx, in.OrgID, in.DeliveryID)
	if err != nil {
		return nil, err
	}
	return &answer[*engine.DeliveryDoc]{Body: d}, nil
}

func (s *Server) redeliver(ctx context.Context, in *DeliveryPath) (*answer[*svctype.Delivery], error) {
	d, err := s.eng.Webhooks.Redeliver(ctx, in.OrgID, in.DeliveryID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.Delivery]{Body: d}, nil
}
