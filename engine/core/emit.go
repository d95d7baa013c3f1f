package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Emit writes events to the outbox in tx and hands them to every registered sink, in the
// same transaction: an event exists, with whatever the sinks made of it (webhook
// deliveries), only if its cause commits. subject, when set, is what the events are about.
func (e *Core) Emit(ctx context.Context, tx storage.Tx, evs []svctype.Event, subject *EventSubject) error {
	if len(evs) == 0 {
		return nil
	}
	if err := tx.AppendEvents(ctx, evs); err != nil {
		return err
	}
	return e.sink(ctx, tx, evs, subject)
}

// sink hands events already appended in tx to every event sink.
func (e *Core) sink(ctx context.Context, tx storage.Tx, evs []svctype.Event, subject *EventSubject) error {
	if len(evs) == 0 {
		return nil
	}
	for _, sink := range e.sinks() {
		if err := sink(ctx, tx, evs, subject); err != nil {
			return err
		}
	}
	return nil
}

// Event builds an outbox entry of a run.
// payload is the event's payload type (engine/events/payloads.go), or a map where a step
// kind's fields are filled in (fillStepFields).
func (e *Core) Event(run *svctype.Run, name string, payload any) svctype.Event {
	b, err := json.Marshal(payload)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"run_id": run.ID, "error": "payload not encodable: " + err.Error()})
	}
	return svctype.Event{
		DeliveryID: "dlv_" + uuid.NewString(), OrgID: run.OrgID, RunID: run.ID,
		Event: name, Timestamp: e.now().UTC(), Payload: b,
	}
}

// OrgEvent builds an outbox entry of an organization that belongs to no run (documents,
// external forms).
func (e *Core) OrgEvent(orgID, name string, payload any) (svctype.Event, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return svctype.Event{}, fmt.Errorf("%s payload: %w", name, err)
	}
	return svctype.Event{
		DeliveryID: "dlv_" + uuid.NewString(), OrgID: orgID, Event: name, Timestamp: e.now().UTC(), Payload: b,
	}, nil
}
