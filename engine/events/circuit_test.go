package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/events"
)

// clock is a fake clock for the circuit's transitions.
type clock struct{ now time.Time }

func (c *clock) advance(d time.Duration) time.Time { c.now = c.now.Add(d); return c.now }

// circuitSetup is a closed circuit and a clock.
func circuitSetup(t *testing.T) (*events.Circuit, *clock) {
	t.Helper()
	return &events.Circuit{}, &clock{now: time.Date(2026, 7, 8, 9, 0, 0, 0, time.UTC)}
}

// send asks the circuit about one delivery and stores its answer.
func send(c *events.Circuit, now time.Time) events.Decision {
	d, next := events.Allow(*c, now)
	*c = next
	return d
}

// fail records failures one second apart, each after a delivery the circuit let through.
func fail(t *testing.T, c *events.Circuit, clk *clock, n int) {
	t.Helper()
	for range n {
		require.True(t, send(c, clk.advance(time.Second)).Send)
		*c = events.Record(*c, false, clk.now)
	}
}

func TestCircuitOpensAfterThreeFailures(t *testing.T) {
	t.Parallel()
	c, clk := circuitSetup(t)

	fail(t, c, clk, 2)
	require.Equal(t, events.CircuitClosed, c.State)
	require.Equal(t, 2, c.Failures)

	fail(t, c, clk, 1)
	require.Equal(t, events.CircuitOpen, c.State)
	require.Equal(t, clk.now.Add(5*time.Minute), c.OpenUntil)
	opened := clk.now

	// Skipped for exactly 5 minutes, each skip told when to come back.
	for _, after := range []time.Duration{0, time.Second, 4*time.Minute + 59*time.Second, 5*time.Minute - time.Nanosecond} {
		d := send(c, opened.Add(after))
		require.Equal(t, events.Decision{RetryAt: opened.Add(5 * time.Minute)}, d, "after %s", after)
		require.Equal(t, events.CircuitOpen, c.State)
	}

	// At 5 minutes one delivery goes, as the probe; the others wait for its result.
	d := send(c, opened.Add(5*time.Minute))
	require.Equal(t, events.Decision{Send: true, Probe: true}, d)
	require.Equal(t, events.CircuitHalfOpen, c.State)
	for _, after := range []time.Duration{0, time.Second, 30 * time.Second} {
		d := send(c, opened.Add(5*time.Minute+after))
		require.Equal(t, events.Decision{RetryAt: opened.Add(5*time.Minute + events.ProbeLease)}, d)
	}
}

func TestCircuitProbe(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		success bool
	}{{"success closes", true}, {"failure reopens", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, clk := circuitSetup(t)
			fail(t, c, clk, 3)
			clk.advance(5 * time.Minute)
			require.True(t, send(c, clk.now).Probe)

			*c = events.Record(*c, tc.success, clk.advance(2*time.Second))
			if tc.success {
				require.Equal(t, events.Circuit{State: events.CircuitClosed}, *c)
				require.Equal(t, events.Decision{Send: true}, send(c, clk.now))
				fail(t, c, clk, 2)
				require.Equal(t, events.CircuitClosed, c.State, "the count starts again")
				return
			}
			require.Equal(t, events.CircuitOpen, c.State)
			require.Equal(t, clk.now.Add(5*time.Minute), c.OpenUntil, "another 5 minutes from the probe's failure")
			require.Equal(t, events.Decision{RetryAt: clk.now.Add(5 * time.Minute)}, send(c, clk.advance(4*time.Minute)))
			require.Equal(t, events.Decision{Send: true, Probe: true}, send(c, clk.advance(time.Minute)))
		})
	}
}

func TestCircuitSuccessResetsTheCount(t *testing.T) {
	t.Parallel()
	c, clk := circuitSetup(t)

	fail(t, c, clk, 2)
	*c = events.Record(*c, true, clk.advance(time.Second))
	require.Equal(t, events.Circuit{State: events.CircuitClosed}, *c)
	fail(t, c, clk, 2)
	require.Equal(t, events.CircuitClosed, c.State, "2 + success + 2 is not 3 in a row")
	fail(t, c, clk, 1)
	require.Equal(t, events.CircuitOpen, c.State)
}

func TestCircuitLapsedProbe(t *testing.T) {
	t.Parallel()
	c, clk := circuitSetup(t)

	fail(t, c, clk, 3)
	require.True(t, send(c, clk.advance(5*time.Minute)).Probe)
	// The probe's worker died: nothing is recorded. After the lease, another probe goes.
	require.False(t, send(c, clk.advance(events.ProbeLease-time.Nanosecond)).Send)
	d := send(c, clk.advance(time.Nanosecond))
	require.Equal(t, events.Decision{Send: true, Probe: true}, d)
	require.Equal(t, clk.now.Add(events.ProbeLease), c.ProbeUntil)
}

func TestCircuitLateResults(t *testing.T) {
	t.Parallel()
	c, clk := circuitSetup(t)

	fail(t, c, clk, 3)
	until := c.OpenUntil
	// An attempt sent before the circuit opened fails after: counted, open period unchanged.
	*c = events.Record(*c, false, clk.advance(5*time.Second))
	require.Equal(t, events.CircuitOpen, c.State)
	require.Equal(t, until, c.OpenUntil)
	require.Equal(t, 4, c.Failures)
	// One that succeeds shows the URL answers: closed.
	*c = events.Record(*c, true, clk.advance(time.Second))
	require.Equal(t, events.Circuit{State: events.CircuitClosed}, *c)
}

func TestCircuitZeroAndUnknownStates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 8, 9, 0, 0, 0, time.UTC)

	for _, c := range []events.Circuit{{}, {State: "something newer"}} {
		d, next := events.Allow(c, now)
		require.Equal(t, events.Decision{Send: true}, d)
		require.Equal(t, c, next)
		require.Equal(t, events.Circuit{State: events.CircuitClosed, Failures: 1}, events.Record(c, false, now))
	}
}
