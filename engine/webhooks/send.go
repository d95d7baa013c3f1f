package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tracing"
)

// Sending a delivery: a JobDeliver job. The request goes out outside any transaction and
// outside the worker's step slot, in the I/O pool, like any step's call (io.go); what it
// answered is recorded in a transaction fenced by the job's lease, with the next attempt
// (the job's run_at) or the job's completion. The rules are the events package's (spec
// section 8): 2xx within 10 s succeeds; 408, 429, 5xx, timeouts and connection errors are
// tried again up to 5 times with backoff from 1 s and Retry-After; other answers fail at
// once; a circuit per target address opens after 3 consecutive failures and skips (records
// and reschedules, never drops) deliveries for 5 minutes, then lets one through.

// sentAnswer is what one request got.
type sentAnswer struct {
	status     int
	retryAfter string
	latency    time.Duration
	err        error
}

// Deliver runs a JobDeliver job: it sends one delivery (a core.JobHandler).
func (e *Webhooks) Deliver(ctx context.Context, job *svctype.Job) error {
	var p deliveryPayload
	_ = json.Unmarshal(job.Payload, &p)
	d, err := e.store.GetDelivery(ctx, job.OrgID, p.DeliveryID)
	if errors.Is(err, core.ErrNotFound) || (err == nil && d.Status != svctype.DeliveryPending) {
		return e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error { return Tx(stx).CompleteJob(ctx, job) })
	}
	if err != nil {
		return err
	}
	url, secret, gone, err := e.deliveryTarget(ctx, d)
	if err != nil {
		return err
	}
	if gone != "" {
		return e.finishDelivery(ctx, job, d, "", nil, svctype.DeliveryAttempt{Outcome: attemptFailed, Error: gone}, svctype.DeliveryFailed)
	}

	// The circuit of the target's address: skip (and come back) while it is open. Read
	// without a transaction; only a decision that changes the state (taking the probe of a
	// half-open circuit) is written, in a transaction that decides again on what it reads,
	// so two workers cannot both take the probe.
	state, err := e.circuit(ctx, e.store, d.OrgID, url)
	if err != nil {
		return err
	}
	decision, next := events.Allow(state, e.now())
	if next != state {
		err = e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
			tx := Tx(stx)
			state, err := e.circuit(ctx, tx, d.OrgID, url)
			if err != nil {
				return err
			}
			var next events.Circuit
			if decision, next = events.Allow(state, e.now()); next != state {
				e.circuitChanged(state, next)
				return e.putCircuit(ctx, tx, d.OrgID, url, next)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if !decision.Send {
		at := decision.RetryAt
		return e.scheduleDelivery(ctx, job, d, url, nil, svctype.DeliveryAttempt{Outcome: attemptSkipped,
			Error: "circuit open: the target failed " + fmt.Sprint(events.CircuitFailures) + " times in a row", NextAttemptAt: &at}, false)
	}

	ctx, span := e.startAttempt(ctx, d)
	// The requests this round has sent (never fewer than none: a job of an older round).
	sent := max(d.Attempts-p.SentBefore, 0)
	outcome, status, err := e.attempt(ctx, job, d, sent, url, secret)
	endAttempt(span, outcome, status, err)
	return err
}

// attempt sends d and records what the target answered: it returns the attempt's outcome
// and the answer's status code. sent is the number of requests the delivery's round of
// retries has sent before this one.
func (e *Webhooks) attempt(ctx context.Context, job *svctype.Job, d *svctype.Delivery, sent int, url string, secret []byte) (string, int, error) {
	ans := e.post(ctx, d, url, secret)
	attempt := svctype.DeliveryAttempt{StatusCode: ans.status, LatencyMS: ans.latency.Milliseconds()}
	if ans.err != nil {
		attempt.Error = ans.err.Error()
	}
	outcome := events.Classify(ans.status, ans.err)
	ok := outcome == events.OutcomeSuccess
	if ok {
		// A registration's health counts deliveries, not attempts: a success re-enables it,
		// a delivery that fails after its retries counts one failure (below).
		if err := e.recordWebhookHealth(ctx, d, true); err != nil {
			return "", ans.status, err
		}
		attempt.Outcome = attemptSucceeded
		return attempt.Outcome, ans.status, e.finishDelivery(ctx, job, d, url, &ok, attempt, svctype.DeliverySucceeded)
	}
	if outcome == events.OutcomeRetry {
		// The round sent `sent` requests before this one: this is its retry number sent+1.
		if at, more := events.NextAttempt(sent+1, ans.retryAfter, e.now(), rand.Float64); more {
			attempt.Outcome, attempt.NextAttemptAt = attemptRetry, &at
			return attempt.Outcome, ans.status, e.scheduleDelivery(ctx, job, d, url, &ok, attempt, true)
		}
	}
	if err := e.recordWebhookHealth(ctx, d, false); err != nil {
		return "", ans.status, err
	}
	attempt.Outcome = attemptFailed
	return attempt.Outcome, ans.status, e.finishDelivery(ctx, job, d, url, &ok, attempt, svctype.DeliveryFailed)
}

// startAttempt starts the span of a delivery attempt (nil when tracing is off): a trace of
// its own, as an attempt may come hours after the run, linked to the run's trace when the
// event is a run's.
func (e *Webhooks) startAttempt(ctx context.Context, d *svctype.Delivery) (context.Context, trace.Span) {
	tr := e.core.Tracer()
	if tr == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		tracing.OrgID.String(d.OrgID), tracing.DeliveryID.String(d.ID), tracing.WebhookID.String(d.WebhookID),
		tracing.WebhookTarget.String(d.Target), tracing.Event.String(d.Event), tracing.DeliveryAttempt.Int(d.Attempts+1),
		tracing.HTTPMethod.String(http.MethodPost))}
	if d.RunID != "" {
		opts = append(opts, trace.WithAttributes(tracing.RunID.String(d.RunID)),
			trace.WithLinks(trace.Link{SpanContext: tracing.RunSpanContext(d.RunID)}))
	}
	return tr.Start(ctx, "webhook.deliver", opts...)
}

// endAttempt ends an attempt's span with its outcome and the answer's status code.
func endAttempt(span trace.Span, outcome string, status int, err error) {
	if span == nil {
		return
	}
	if status != 0 {
		span.SetAttributes(tracing.HTTPStatusCode.Int(status))
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, "recording the attempt failed; it is made again")
	case outcome == attemptRetry || outcome == attemptFailed:
		span.SetAttributes(tracing.ErrorType.String(outcome))
		span.SetStatus(codes.Error, "the target did not accept the delivery")
	}
	span.SetAttributes(tracing.DeliveryOutcome.String(outcome))
	span.End()
}

// Attempt outcomes, as GET /deliveries/{id} shows them.
const (
	attemptSucceeded = "succeeded"
	attemptRetry     = "retry"
	attemptFailed    = "failed"
	attemptSkipped   = "skipped"
)

// deliveryTarget returns where d goes now and the secret to sign with (nil: unsigned), or,
// in gone, why it cannot go anywhere (its registration was deleted, the catch-all removed).
func (e *Webhooks) deliveryTarget(ctx context.Context, d *svctype.Delivery) (url string, secret []byte, gone string, err error) {
	if d.Target == TargetCatchAll {
		url, err = e.catchAll(ctx, d.OrgID)
		if err == nil && url == "" {
			gone = "the organization's catch-all (org config " + CatchAllKey + ") was removed"
		}
		return url, nil, gone, err
	}
	t, err := e.webhookTarget(ctx, d.OrgID, d.Event, d.WebhookID)
	if errors.Is(err, core.ErrNotFound) {
		return "", nil, "the webhook registration was deleted", nil
	}
	if err != nil {
		return "", nil, "", err
	}
	return t.url, t.secret, "", nil
}

// post sends d's bytes to url, signed with secret when there is one, outside any
// transaction, with the worker's slot given back meanwhile. The answer's body is read up to
// events.MaxResponseBody and dropped.
func (e *Webhooks) post(ctx context.Context, d *svctype.Delivery, url string, secret []byte) sentAnswer {
	var ans sentAnswer
	// The attempt's own timeout starts with its request (send); this bound covers the wait
	// for a place in the I/O pool too.
	if err := e.core.OutsideCall(ctx, d.OrgID, 2*e.deliveryTimeout, func(ctx context.Context) { ans = e.send(ctx, d, url, secret) }); err != nil {
		return sentAnswer{err: err}
	}
	return ans
}

// send makes one delivery request and reads the answer (its body up to MaxResponseBody).
func (e *Webhooks) send(ctx context.Context, d *svctype.Delivery, url string, secret []byte) sentAnswer {
	ctx, cancel := context.WithTimeout(ctx, e.deliveryTimeout)
	defer cancel()
	// The catch-all's address is an org config value: an error names the key and quotes
	// nothing of the value (not even the text before its first ':', which net/http would
	// call its scheme).
	target, hide := "the target address", []string(nil)
	if d.Target == TargetCatchAll {
		target = "the catch-all address (org config " + CatchAllKey + ")"
		hide = []string{url}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err == nil && (req.URL.Scheme != "http" && req.URL.Scheme != "https" || req.URL.Host == "") {
		err = errors.New("not an http or https URL")
	}
	if err != nil {
		return sentAnswer{err: events.Permanent(fmt.Errorf("%s is not usable: %w", target, outbound.ErrInvalidRequest))}
	}
	if hide != nil {
		hide = append(hide, req.URL.Host, req.URL.Hostname())
	}
	req.Header = events.Headers(d.ID, secret, d.Body, e.now())
	began := time.Now()
	resp, err := e.hooks.Do(req)
	if err != nil {
		return sentAnswer{latency: time.Since(began), err: deliveryError(err, e.deliveryTimeout, hide)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, events.MaxResponseBody))
	_ = resp.Body.Close()
	return sentAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), latency: time.Since(began)}
}

// deliveryError says why a request got no answer without the address's path or query
// (they may carry a token): the guard's refusal, a timeout, or a connection failure. hide,
// for an address that is a secret whole (the catch-all's), is the URL, its host and host
// name, none of which the error may quote.
func deliveryError(err error, timeout time.Duration, hide []string) error {
	switch {
	case errors.Is(err, outbound.ErrTargetNotAllowed):
		return events.Permanent(fmt.Errorf("%s: %w", outbound.CodeTargetNotAllowed, outbound.ErrTargetNotAllowed))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", timeout)
	}
	if hide != nil {
		return fmt.Errorf("connection failed: %s", outbound.HiddenCause(err, hide))
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap() // *url.Error carries the full URL: keep what it wraps
	}
	return fmt.Errorf("connection failed: %v", err)
}

// scheduleDelivery records attempt and sets the delivery's next attempt (the job's run_at);
// sent says whether a request went out (a skip is not an attempt). answered, when set, is
// recorded on the circuit of url in the same transaction.
func (e *Webhooks) scheduleDelivery(ctx context.Context, job *svctype.Job, d *svctype.Delivery, url string, answered *bool, attempt svctype.DeliveryAttempt, sent bool) error {
	now := e.now().UTC()
	return e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := e.recordAttempt(ctx, tx, d, url, answered, &attempt, now); err != nil {
			return err
		}
		if sent {
			d.Attempts++
			d.LastStatusCode, d.LastError = attempt.StatusCode, attempt.Error
		}
		d.NextAttemptAt, d.UpdatedAt = attempt.NextAttemptAt, now
		if err := tx.UpdateDelivery(ctx, d); err != nil {
			return err
		}
		// The engine's clock is its store's (store.WithNow): the job is due at the attempt.
		job.RunAt = *attempt.NextAttemptAt
		return tx.RenewJob(ctx, job, 0)
	})
}

// finishDelivery records the last attempt and ends the delivery and its job, in one
// transaction.
func (e *Webhooks) finishDelivery(ctx context.Context, job *svctype.Job, d *svctype.Delivery, url string, answered *bool, attempt svctype.DeliveryAttempt, status svctype.DeliveryStatus) error {
	now := e.now().UTC()
	return e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := e.recordAttempt(ctx, tx, d, url, answered, &attempt, now); err != nil {
			return err
		}
		if answered != nil {
			d.Attempts++
		}
		d.Status, d.LastStatusCode, d.LastError = status, attempt.StatusCode, attempt.Error
		d.NextAttemptAt, d.UpdatedAt, d.CompletedAt = nil, now, &now
		if err := tx.UpdateDelivery(ctx, d); err != nil {
			return err
		}
		return tx.CompleteJob(ctx, job)
	})
}

// recordAttempt appends attempt to d's record and, when the target answered (or failed to),
// records that on its circuit (written only when the state changes).
func (e *Webhooks) recordAttempt(ctx context.Context, tx Tx, d *svctype.Delivery, url string, answered *bool, a *svctype.DeliveryAttempt, now time.Time) error {
	d.Recorded++
	a.DeliveryID, a.N, a.At = d.ID, d.Recorded, now
	if err := tx.AddDeliveryAttempt(ctx, d.OrgID, a); err != nil {
		return err
	}
	e.core.Meter().Record(MetricAttempts, 1, a.Outcome)
	if answered == nil {
		return nil
	}
	state, err := e.circuit(ctx, tx, d.OrgID, url)
	if err != nil {
		return err
	}
	if next := events.Record(state, *answered, e.now()); next != state {
		e.circuitChanged(state, next)
		return e.putCircuit(ctx, tx, d.OrgID, url, next)
	}
	return nil
}

// circuitChanged counts a circuit entering another state.
func (e *Webhooks) circuitChanged(from, to events.Circuit) {
	// The zero value is a closed circuit.
	if circuitStateName(from.State) != circuitStateName(to.State) {
		e.core.Meter().Record(MetricCircuitTransitions, 1, circuitStateName(to.State))
	}
}

func (e *Webhooks) circuit(ctx context.Context, q Reads, orgID, url string) (events.Circuit, error) {
	var state events.Circuit
	raw, err := q.GetCircuit(ctx, orgID, url)
	if err != nil || raw == nil {
		return state, err
	}
	if err := json.Unmarshal(raw, &state); err != nil {
		return events.Circuit{}, nil // an unreadable state starts closed
	}
	return state, nil
}

func (e *Webhooks) putCircuit(ctx context.Context, tx Tx, orgID, url string, state events.Circuit) error {
	raw, err := json.Marshal(state)
	if err != nil {
		return err
	}
	return tx.PutCircuit(ctx, orgID, url, raw)
}
