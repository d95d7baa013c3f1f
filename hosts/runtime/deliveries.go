package runtime

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

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
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		WebhookID string `path:"webhookId" doc:"The webhook's id."`
		Paging
	}) (*struct{ Body List[svctype.Delivery] }, error) {
		page, err := s.eng.Webhooks.ListDeliveries(ctx, in.OrgID, in.WebhookID, in.options())
		if err != nil {
			return nil, s.fail(ctx, err, failure{notFound: "webhook not found", in: "query"})
		}
		return &struct{ Body List[svctype.Delivery] }{Body: listOf(page, same[svctype.Delivery])}, nil
	})

	o = op("get-delivery", http.MethodGet, "/deliveries/{deliveryId}", "A delivery and every attempt", "Webhooks")
	o.Description = "Every attempt in order: when, the outcome (succeeded, retry, failed, skipped while the " +
		"target's circuit was open), the status code, the latency, the error and the next attempt."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	huma.Register(s.api, o, func(ctx context.Context, in *DeliveryPath) (*struct{ Body *engine.DeliveryDoc }, error) {
		d, err := s.eng.Webhooks.GetDelivery(ctx, in.OrgID, in.DeliveryID)
		if err != nil {
			return nil, s.fail(ctx, err, deliveryNotFound)
		}
		return &struct{ Body *engine.DeliveryDoc }{Body: d}, nil
	})

	o = op("redeliver", http.MethodPost, "/deliveries/{deliveryId}/redeliver", "Send a delivery again", "Webhooks")
	o.Description = "Sends an ended delivery (succeeded or failed) once more: the same delivery_id and bytes, " +
		"with a new round of retries. 409 while it is pending."
	o.DefaultStatus = http.StatusAccepted
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	huma.Register(s.api, o, func(ctx context.Context, in *DeliveryPath) (*struct{ Body *svctype.Delivery }, error) {
		d, err := s.eng.Webhooks.Redeliver(ctx, in.OrgID, in.DeliveryID)
		if err != nil {
			return nil, s.fail(ctx, err, deliveryNotFound)
		}
		return &struct{ Body *svctype.Delivery }{Body: d}, nil
	})
}
