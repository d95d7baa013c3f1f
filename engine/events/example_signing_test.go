package events_test

import (
	"fmt"
	"time"

	"github.com/svcflow/svcflow/engine/events"
)

// A delivery is encoded once and signed on every attempt; a receiver verifies the raw bytes.
func Example() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	body, err := events.Body("dlv_42", "document.deleted", at, map[string]any{"document_id": "doc_7"})
	if err != nil {
		panic(err)
	}
	secret := []byte("whsec_example")
	h := events.Headers("dlv_42", secret, body, at.Add(time.Second))

	fmt.Println(string(body))
	fmt.Println(h.Get("X-Svc-Timestamp"))
	fmt.Println(events.VerifyBody(secret, h.Get("X-Svc-Signature"), body))
	fmt.Println(events.Verify(secret, h, body, at.Add(time.Minute), events.DefaultTolerance))
	fmt.Println(events.Verify(secret, h, body, at.Add(time.Hour), events.DefaultTolerance))
	// Output:
	// {"delivery_id":"dlv_42","event":"document.deleted","timestamp":"2026-01-02T03:04:05.678Z","payload":{"document_id":"doc_7"}}
	// 1767323046
	// <nil>
	// <nil>
	// events: delivery timestamp 2026-01-02T03:04:06Z is 1h0m0s from now, more than 5m0s
}
