package events

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/svcflow/svcflow/internal/retryafter"
)

// The delivery limits of spec section 8.
const (
	// MaxRetries is how many times a failed delivery is sent again: at most 1+MaxRetries
	// attempts.
	MaxRetries = 5
	// ResponseTimeout bounds one attempt, from connecting to the end of the answer the
	// sender reads: a 2xx must arrive within it, else the attempt failed (and is retried).
	ResponseTimeout = 10 * time.Second
	// MaxResponseBody is how much of an answer the sender reads (and discards, keeping an
	// excerpt at most) before closing the connection: a receiver cannot make it read more.
	MaxResponseBody = 64 << 10
	// FirstBackoff is the wait before the first retry; each next one doubles it
	// (1, 2, 4, 8, 16 s), plus jitter of up to BackoffJitter of it.
	FirstBackoff = time.Second
	// BackoffJitter: a wait is the backoff times 1 + BackoffJitter·r, r uniform in [0, 1).
	// Jitter only lengthens a wait, so no retry comes sooner than the spec's schedule, and
	// targets that failed together are not retried together.
	BackoffJitter = 0.25
	// MaxRetryAfter caps what a Retry-After may ask: a longer one waits this long. It is
	// retryafter.Max, the cap of every reader of the header.
	MaxRetryAfter = retryafter.Max
)

// Outcome is what one attempt's answer means for the delivery.
type Outcome int

const (
	// OutcomeSuccess: a 2xx within ResponseTimeout. The delivery is done.
	OutcomeSuccess Outcome = iota + 1
	// OutcomeRetry: 408, 429, 5xx, a timeout or a connection error. Retried while retries
	// remain (NextAttempt), then the delivery failed.
	OutcomeRetry
	// OutcomeFail: any other status (other 4xx; 3xx, which is not followed; 1xx or an
	// unknown status) or a Permanent error. Not retried.
	OutcomeFail
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSuccess:
		return "success"
	case OutcomeRetry:
		return "retry"
	case OutcomeFail:
		return "fail"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// ErrPermanent matches (errors.Is) every error made by Permanent.
var ErrPermanent = errors.New("events: permanent delivery failure")

// Permanent marks an attempt's error as one a retry cannot mend (a target refused by the
// address guard, a URL that does not parse): Classify makes it OutcomeFail.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// Classify judges one attempt: status is the answer's status code and err the error that
// kept an answer from arriving in time (then status is ignored). Every error is retried
// (timeouts, refused or reset connections, DNS failures) unless it is Permanent.
func Classify(status int, err error) Outcome {
	switch {
	case err != nil && errors.Is(err, ErrPermanent):
		return OutcomeFail
	case err != nil:
		return OutcomeRetry
	case status >= 200 && status <= 299:
		return OutcomeSuccess
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500 && status <= 599:
		return OutcomeRetry
	default:
		return OutcomeFail
	}
}

// Backoff is the wait before retry number retry (1 for the first retry):
// FirstBackoff·2^(retry-1) times 1 + BackoffJitter·rnd(). rnd returns a number in [0, 1)
// (nil: math/rand/v2.Float64); values outside are clamped. retry < 1 counts as 1.
func Backoff(retry int, rnd func() float64) time.Duration {
	retry = min(max(retry, 1), 31)
	d := FirstBackoff << (retry - 1)
	if rnd == nil {
		rnd = rand.Float64
	}
	r := rnd()
	if !(r >= 0) { // also NaN
		r = 0
	}
	r = min(r, 1)
	return d + time.Duration(float64(d)*BackoffJitter*r)
}

// RetryAfter reads a Retry-After value by the one rule of internal/retryafter:
// delay-seconds (ASCII digits) or an HTTP-date (any of the three forms HTTP allows). A date in
// the past is no wait; a wait over MaxRetryAfter is MaxRetryAfter. Anything else (empty,
// negative, fractional, malformed) is not a Retry-After, and ok is false.
func RetryAfter(value string, now time.Time) (wait time.Duration, ok bool) {
	return retryafter.Parse(value, now)
}

// NextAttempt is when retry number retry (1 for the first retry, after the first attempt
// failed) is due: now plus the later of Backoff(retry, rnd) and the answer's Retry-After
// (retryAfter is the header's value, "" when absent; an invalid one is ignored). ok is
// false when retry is beyond MaxRetries (or below 1): the delivery has failed.
func NextAttempt(retry int, retryAfter string, now time.Time, rnd func() float64) (at time.Time, ok bool) {
	if retry < 1 || retry > MaxRetries {
		return time.Time{}, false
	}
	wait := Backoff(retry, rnd)
	if ra, ok := RetryAfter(retryAfter, now); ok {
		wait = max(wait, ra)
	}
	return now.Add(wait), true
}
