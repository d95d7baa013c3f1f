package events

import "time"

// Circuit breaker limits (spec section 8: "opens after 3 consecutive failures to one URL,
// skips deliveries for 5 minutes, then tries again").
const (
	// CircuitFailures consecutive failed attempts to one URL open its circuit.
	CircuitFailures = 3
	// CircuitOpenFor is how long an open circuit skips deliveries before one probe goes.
	CircuitOpenFor = 5 * time.Minute
	// ProbeLease is how long a half-open circuit waits for its probe's result before it lets
	// another probe through: longer than an attempt (ResponseTimeout) and its commit, so
	// only a probe whose worker died is replaced.
	ProbeLease = time.Minute
)

// CircuitState is the state of one URL's circuit, as stored (text, so a row reads plainly).
type CircuitState string

const (
	CircuitClosed   CircuitState = "closed"    // deliveries go
	CircuitOpen     CircuitState = "open"      // deliveries are skipped until OpenUntil
	CircuitHalfOpen CircuitState = "half_open" // one probe is out until ProbeUntil
)

// Circuit is one URL's circuit breaker, a plain value the engine stores (one row per URL,
// shared by every worker process) and changes only through Allow and Record, reading and
// writing it in one transaction (a row lock, or a compare-and-swap on the row), so two
// workers never both take the probe. The zero value is a closed circuit.
type Circuit struct {
	State CircuitState
	// Failures counts consecutive failed attempts; a success resets it.
	Failures int
	// OpenUntil is when an open circuit lets a probe through.
	OpenUntil time.Time
	// ProbeUntil is when a half-open circuit's probe lease ends.
	ProbeUntil time.Time
}

// Decision is Allow's answer for one delivery about to be sent.
type Decision struct {
	// Send: send it now. Otherwise the delivery is skipped: the engine records the skip
	// and reschedules it for RetryAt, without counting an attempt or a retry.
	Send bool
	// Probe: this delivery is the half-open circuit's one probe; its Record closes the
	// circuit or opens it again.
	Probe bool
	// RetryAt, when skipped, is the earliest the circuit may let a delivery through: the
	// end of the open period, or of the probe's lease.
	RetryAt time.Time
}

// Allow decides whether a delivery to the circuit's URL may be sent at now, and returns the
// circuit to store. Closed: send. Open before OpenUntil: skip until then. Open from
// OpenUntil on: this delivery is the probe and the circuit is half-open. Half-open: skip
// until ProbeUntil, after which the lapsed probe is replaced by this one.
func Allow(c Circuit, now time.Time) (Decision, Circuit) {
	switch c.State {
	case CircuitOpen:
		if now.Before(c.OpenUntil) {
			return Decision{RetryAt: c.OpenUntil}, c
		}
		return probe(c, now)
	case CircuitHalfOpen:
		if now.Before(c.ProbeUntil) {
			return Decision{RetryAt: c.ProbeUntil}, c
		}
		return probe(c, now)
	default: // closed, or a state this version does not know
		return Decision{Send: true}, c
	}
}

func probe(c Circuit, now time.Time) (Decision, Circuit) {
	c.State = CircuitHalfOpen
	c.OpenUntil = time.Time{}
	c.ProbeUntil = now.Add(ProbeLease)
	return Decision{Send: true, Probe: true}, c
}

// Record takes one attempt's result (success: Classify said OutcomeSuccess; every other
// outcome is a failure of the URL) at now and returns the circuit to store. A success
// closes the circuit from any state. A failure counts; the CircuitFailures-th in a row, or a
// probe's, opens it for CircuitOpenFor from now. A failure arriving while it is open
// (an attempt sent before it opened) counts but does not extend the open period.
//
// Attempts last at most ResponseTimeout, far less than CircuitOpenFor, so a result that
// arrives while the circuit is half-open is the probe's.
func Record(c Circuit, success bool, now time.Time) Circuit {
	if success {
		return Circuit{State: CircuitClosed}
	}
	c.Failures++
	switch c.State {
	case CircuitOpen:
		return c
	case CircuitHalfOpen:
		return open(c, now)
	default:
		if c.Failures >= CircuitFailures {
			return open(c, now)
		}
		c.State = CircuitClosed
		return c
	}
}

func open(c Circuit, now time.Time) Circuit {
	c.State = CircuitOpen
	c.OpenUntil = now.Add(CircuitOpenFor)
	c.ProbeUntil = time.Time{}
	return c
}
