package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

func TestNextSlot(t *testing.T) {
	t.Parallel()
	mustTime := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return tm
	}
	cases := []struct {
		name          string
		sched         svctype.Schedule
		anchor, after string
		want          string
	}{
		{"every 15m from the anchor", svctype.Schedule{Every: "15m"}, "2026-01-05T10:07:00Z", "2026-01-05T10:07:00Z", "2026-01-05T10:22:00Z"},
		{"every 15m, missed slots: the next after now", svctype.Schedule{Every: "15m"}, "2026-01-05T10:07:00Z", "2026-01-05T13:00:00Z", "2026-01-05T13:07:00Z"},
		{"every 2h", svctype.Schedule{Every: "2h"}, "2026-01-05T10:00:00Z", "2026-01-05T11:59:59Z", "2026-01-05T12:00:00Z"},
		{"at 09:00 daily, saved after 09:00", svctype.Schedule{At: "09:00"}, "2026-01-05T10:00:00Z", "2026-01-05T10:00:00Z", "2026-01-06T09:00:00Z"},
		{"at 09:00 daily, saved before 09:00", svctype.Schedule{At: "09:00"}, "2026-01-05T08:00:00Z", "2026-01-05T08:00:00Z", "2026-01-05T09:00:00Z"},
		{"at 09:00 Berlin in winter is 08:00Z", svctype.Schedule{Every: "1d", At: "09:00", Timezone: "Europe/Berlin"}, "2026-01-05T10:00:00Z", "2026-01-05T10:00:00Z", "2026-01-06T08:00:00Z"},
		{"09:00 Berlin holds across DST", svctype.Schedule{Every: "1d", At: "09:00", Timezone: "Europe/Berlin"}, "2026-03-27T10:00:00Z", "2026-03-29T06:00:00Z", "2026-03-29T07:00:00Z"},
		{"weekly keeps the anchor weekday", svctype.Schedule{Every: "1w", At: "06:30"}, "2026-01-05T07:00:00Z", "2026-01-05T07:00:00Z", "2026-01-12T06:30:00Z"},
		{"weekly, long outage: one slot, the next", svctype.Schedule{Every: "1w", At: "06:30"}, "2026-01-05T07:00:00Z", "2026-03-01T00:00:00Z", "2026-03-02T06:30:00Z"},
		{"every 2d without at", svctype.Schedule{Every: "2d"}, "2026-01-05T07:00:00Z", "2026-01-05T07:00:00Z", "2026-01-07T07:00:00Z"},
		// Spring forward in New York (2026-03-08, 02:00 EST -> 03:00 EDT): 02:30 does not
		// exist and fires at 03:30 EDT (07:30Z), not 01:30 EST; the next day is 02:30 EDT.
		{"02:30 New York in the spring gap fires at 03:30 EDT", svctype.Schedule{Every: "1d", At: "02:30", Timezone: "America/New_York"}, "2026-03-01T12:00:00Z", "2026-03-08T05:00:00Z", "2026-03-08T07:30:00Z"},
		{"02:30 New York, the day after the gap", svctype.Schedule{Every: "1d", At: "02:30", Timezone: "America/New_York"}, "2026-03-01T12:00:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"},
		{"02:30 New York saved on the gap day keeps 02:30 after it", svctype.Schedule{Every: "1d", At: "02:30", Timezone: "America/New_York"}, "2026-03-08T12:00:00Z", "2026-03-08T12:00:00Z", "2026-03-09T06:30:00Z"},
		{"02:30 New York without at, anchored at 02:30 the day before", svctype.Schedule{Every: "1d", Timezone: "America/New_York"}, "2026-03-07T07:30:00Z", "2026-03-08T05:00:00Z", "2026-03-08T07:30:00Z"},
		{"02:15 Lord Howe in its half-hour spring gap fires at 02:45", svctype.Schedule{Every: "1d", At: "02:15", Timezone: "Australia/Lord_Howe"}, "2026-09-20T00:00:00Z", "2026-10-03T14:00:00Z", "2026-10-03T15:45:00Z"},
		// Fall back in New York (2026-11-01, 02:00 EDT -> 01:00 EST): 01:30 happens twice and
		// fires once, at the first (01:30 EDT, 05:30Z); after it the next is the next day's.
		{"01:30 New York on the fall-back night fires at the first 01:30", svctype.Schedule{Every: "1d", At: "01:30", Timezone: "America/New_York"}, "2026-10-20T12:00:00Z", "2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z"},
		{"01:30 New York on the fall-back night fires once", svctype.Schedule{Every: "1d", At: "01:30", Timezone: "America/New_York"}, "2026-10-20T12:00:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		{"01:45 Lord Howe on its fall-back night fires at the first 01:45", svctype.Schedule{Every: "1d", At: "01:45", Timezone: "Australia/Lord_Howe"}, "2026-03-20T00:00:00Z", "2026-04-04T13:00:00Z", "2026-04-04T14:45:00Z"},
		{"01:45 Lord Howe on its fall-back night fires once", svctype.Schedule{Every: "1d", At: "01:45", Timezone: "Australia/Lord_Howe"}, "2026-03-20T00:00:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"},
		{"every 30m at :10 phase", svctype.Schedule{Every: "30m", At: "00:10"}, "2026-01-05T07:00:00Z", "2026-01-05T07:00:00Z", "2026-01-05T07:10:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sp, err := parseSchedule(&tc.sched)
			require.NoError(t, err)
			got := sp.nextSlot(mustTime(tc.anchor), mustTime(tc.after))
			require.Equal(t, mustTime(tc.want).UTC(), got.UTC())
		})
	}
}
