package testclock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/internal/testclock"
)

func TestStoppedClockMovesWhenTold(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := testclock.New(at)
	require.Equal(t, at, c.Now())
	require.Equal(t, at, c.Now(), "a stopped clock stays")
	c.Advance(90 * time.Second)
	require.Equal(t, at.Add(90*time.Second), c.Now())
	c.Advance(-time.Millisecond)
	require.Equal(t, at.Add(90*time.Second-time.Millisecond), c.Now())
	c.Set(at)
	require.Equal(t, at, c.Now())
}

func TestRunningClockKeepsItsLead(t *testing.T) {
	t.Parallel()
	c := testclock.Running()
	before := time.Now()
	now := c.Now()
	require.False(t, now.Before(before), "it runs with the wall clock")
	c.Advance(time.Hour)
	require.False(t, c.Now().Before(before.Add(time.Hour)), "an hour ahead")
	require.True(t, c.Now().Before(time.Now().Add(time.Hour+time.Minute)))
	past := time.Now().Add(-24 * time.Hour)
	c.Set(past)
	require.True(t, c.Now().Before(time.Now().Add(-23*time.Hour)), "set a day back, it goes on from there")
	require.False(t, c.Now().Before(past))
}

// fired reports whether ch has a value ready.
func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestAfterFiresWhenTheClockIsMoved(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := testclock.New(at)
	require.True(t, fired(c.After(0)), "no wait: at once")
	short, long := c.After(time.Second), c.After(time.Minute)
	require.False(t, fired(short), "not before the clock moves")
	c.Advance(999 * time.Millisecond)
	require.False(t, fired(short), "a millisecond short")
	c.Advance(time.Millisecond)
	require.True(t, fired(short), "due")
	require.False(t, fired(long))
	c.Set(at.Add(2 * time.Minute))
	require.True(t, fired(long), "Set past it fires it too")

	// A running clock's timers wait for the test, not for the wall clock.
	r := testclock.Running()
	ch := r.After(time.Nanosecond)
	for range 1000 {
		require.False(t, fired(ch), "the wall clock does not fire it")
	}
	r.Advance(time.Millisecond)
	require.True(t, fired(ch))
}
