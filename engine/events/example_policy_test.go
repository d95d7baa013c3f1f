package events_test

import (
	"fmt"
	"time"

	"github.com/svcflow/svcflow/engine/events"
)

// The retry schedule of a delivery whose target answers 503 every time, with the jitter
// fixed at its lowest; the third answer also asks for a minute with Retry-After.
func ExampleNextAttempt() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	noJitter := func() float64 { return 0 }
	fmt.Println(events.Classify(503, nil))
	for retry := 1; ; retry++ {
		retryAfter := ""
		if retry == 3 {
			retryAfter = "60"
		}
		at, ok := events.NextAttempt(retry, retryAfter, now, noJitter)
		if !ok {
			fmt.Println("failed after", retry, "attempts")
			break
		}
		fmt.Println("retry", retry, "after", at.Sub(now))
		now = at
	}
	// Output:
	// retry
	// retry 1 after 1s
	// retry 2 after 2s
	// retry 3 after 1m0s
	// retry 4 after 8s
	// retry 5 after 16s
	// failed after 6 attempts
}
