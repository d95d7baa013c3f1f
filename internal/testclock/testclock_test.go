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
