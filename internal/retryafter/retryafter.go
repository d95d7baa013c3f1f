// Package retryafter reads the Retry-After header (RFC 9110, section 10.2.3): the one
// parser of it in svcflow, shared by the outbound client (engine/outbound), the webhook
// delivery policy (engine/events) and the model client (agent/llm). It is a leaf under
// internal/ so that agent, a library that must not depend on the engine, can import it too.
//
// The rule (docs/decisions.md, "One Retry-After rule"): delay-seconds (ASCII digits only) or
// an HTTP-date in any of the three forms HTTP allows; a date in the past is no wait; a wait
// over Max is Max. Anything else (empty, negative, fractional, "5s", a malformed date) is not
// a Retry-After at all, and the caller falls back to its own backoff.
package retryafter

import (
	"net/http"
	"strings"
	"time"
)

// Max is the longest wait a Retry-After can ask for: a longer one is cut to Max, not
// refused, so a caller that waits still makes its call. A caller with a shorter limit of its
// own (the outbound client gives up past 30 s) compares the wait with it.
const Max = time.Hour

// Parse reads a Retry-After value at now. ok is false when value is not a Retry-After (empty
// or invalid): the caller then ignores it. An HTTP-date is judged against now, which a test
// may move.
func Parse(value string, now time.Time) (wait time.Duration, ok bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var secs int64
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
			if secs <= int64(Max/time.Second) { // stop growing once past the cap: no overflow
				secs = secs*10 + int64(v[i]-'0')
			}
		}
		return min(time.Duration(secs)*time.Second, Max), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), Max), true
}
