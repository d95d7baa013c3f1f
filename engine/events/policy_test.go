package events_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/events"
)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestClassify(t *testing.T) {
	t.Parallel()

	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		status int
		err    error
		want   events.Outcome
	}{
		{200, nil, events.OutcomeSuccess},
		{201, nil, events.OutcomeSuccess},
		{204, nil, events.OutcomeSuccess},
		{299, nil, events.OutcomeSuccess},
		{408, nil, events.OutcomeRetry},
		{429, nil, events.OutcomeRetry},
		{500, nil, events.OutcomeRetry},
		{501, nil, events.OutcomeRetry},
		{502, nil, events.OutcomeRetry},
		{503, nil, events.OutcomeRetry},
		{504, nil, events.OutcomeRetry},
		{599, nil, events.OutcomeRetry},
		{400, nil, events.OutcomeFail},
		{401, nil, events.OutcomeFail},
		{403, nil, events.OutcomeFail},
		{404, nil, events.OutcomeFail},
		{409, nil, events.OutcomeFail},
		{410, nil, events.OutcomeFail},
		{413, nil, events.OutcomeFail},
		{422, nil, events.OutcomeFail},
		{499, nil, events.OutcomeFail},
		{301, nil, events.OutcomeFail},
		{302, nil, events.OutcomeFail},
		{307, nil, events.OutcomeFail},
		{308, nil, events.OutcomeFail},
		{100, nil, events.OutcomeFail},
		{0, nil, events.OutcomeFail},
		{600, nil, events.OutcomeFail},
		{0, context.DeadlineExceeded, events.OutcomeRetry},
		{0, timeout, events.OutcomeRetry},
		{0, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, events.OutcomeRetry},
		{0, &net.DNSError{Err: "no such host", Name: "example.invalid", IsNotFound: true}, events.OutcomeRetry},
		{0, io.ErrUnexpectedEOF, events.OutcomeRetry},
		{200, timeout, events.OutcomeRetry}, // the 2xx did not finish within the timeout
		{0, events.Permanent(errors.New("target not allowed")), events.OutcomeFail},
		{503, fmt.Errorf("sending: %w", events.Permanent(errors.New("bad url"))), events.OutcomeFail},
	} {
		require.Equal(t, tc.want, events.Classify(tc.status, tc.err), "status %d, err %v", tc.status, tc.err)
	}

	require.Equal(t, "success", events.OutcomeSuccess.String())
	require.Equal(t, "retry", events.OutcomeRetry.String())
	require.Equal(t, "fail", events.OutcomeFail.String())
	require.Equal(t, "Outcome(0)", events.Outcome(0).String())

	inner := errors.New("target not allowed")
	p := events.Permanent(inner)
	require.ErrorIs(t, p, events.ErrPermanent)
	require.ErrorIs(t, p, inner)
	require.Equal(t, "target not allowed", p.Error())
	require.NoError(t, events.Permanent(nil))
}

func TestBackoffSchedule(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		name string
		rnd  float64
		want []time.Duration
	}{
		{"no jitter", 0, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}},
		{"half jitter", 0.5, []time.Duration{1125 * time.Millisecond, 2250 * time.Millisecond, 4500 * time.Millisecond, 9 * time.Second, 18 * time.Second}},
		{"most jitter", 0.999, []time.Duration{1249750 * time.Microsecond, 2499500 * time.Microsecond, 4999 * time.Millisecond, 9998 * time.Millisecond, 19996 * time.Millisecond}},
		{"clamped above", 7, []time.Duration{1250 * time.Millisecond, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 20 * time.Second}},
		{"clamped below", -1, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}},
	} {
		var got []time.Duration
		for retry := 1; ; retry++ {
			at, ok := events.NextAttempt(retry, "", now, fixed(tc.rnd))
			if !ok {
				break
			}
			got = append(got, at.Sub(now))
		}
		require.Equal(t, tc.want, got, tc.name)
	}

	_, ok := events.NextAttempt(0, "", now, fixed(0))
	require.False(t, ok)
	_, ok = events.NextAttempt(events.MaxRetries+1, "1", now, fixed(0))
	require.False(t, ok, "no retry after the fifth, whatever Retry-After says")

	for range 100 { // the default source stays within the jitter
		d := events.Backoff(3, nil)
		require.GreaterOrEqual(t, d, 4*time.Second)
		require.Less(t, d, 5*time.Second)
	}
	require.Equal(t, time.Second, events.Backoff(-3, fixed(0)))
	require.Equal(t, time.Second<<30, events.Backoff(1000, fixed(0)), "no overflow")
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	in := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"3600", time.Hour, true},
		{"3601", time.Hour, true},
		{"99999999999999999999999999", time.Hour, true},
		{in(90 * time.Second), 90 * time.Second, true},                          // IMF-fixdate
		{now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second, true}, // obsolete RFC 850
		{now.Add(45 * time.Second).Format(time.ANSIC), 45 * time.Second, true},  // asctime
		{in(-time.Minute), 0, true},                                             // in the past
		{in(3 * time.Hour), time.Hour, true},                                    // capped
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"soon", 0, false},
		{"Wed, 32 Foo 2026 25:00:00 GMT", 0, false},
	} {
		got, ok := events.RetryAfter(tc.value, now)
		require.Equal(t, tc.ok, ok, "%q", tc.value)
		require.Equal(t, tc.want, got, "%q", tc.value)
	}
}

func TestNextAttemptRetryAfter(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		retry      int
		retryAfter string
		want       time.Duration
	}{
		{"seconds, later than the backoff", 1, "30", 30 * time.Second},
		{"seconds, sooner than the backoff", 5, "3", 16 * time.Second},
		{"date, later than the backoff", 2, now.Add(10 * time.Minute).Format(http.TimeFormat), 10 * time.Minute},
		{"date, sooner than the backoff", 4, now.Add(2 * time.Second).Format(http.TimeFormat), 8 * time.Second},
		{"date in the past", 3, now.Add(-time.Hour).Format(http.TimeFormat), 4 * time.Second},
		{"capped at an hour", 1, "86400", time.Hour},
		{"invalid: ignored", 2, "in a while", 2 * time.Second},
		{"negative: ignored", 2, "-30", 2 * time.Second},
		{"absent", 3, "", 4 * time.Second},
	} {
		at, ok := events.NextAttempt(tc.retry, tc.retryAfter, now, fixed(0))
		require.True(t, ok, tc.name)
		require.Equal(t, tc.want, at.Sub(now), tc.name)
	}
}
