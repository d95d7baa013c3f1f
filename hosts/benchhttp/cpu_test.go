package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		ok         bool
	}{
		// utime 150 and stime 25 ticks: 1.75 s.
		{"plain", "4242 (svcflow) S 1 4242 4242 0 -1 4194560 9000 0 0 0 150 25 0 0 20 0 12 0 500 1000000 2000", 1750 * time.Millisecond, true},
		// A command name with spaces and a parenthesis does not shift the fields.
		{"odd name", "7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 100 10", 70 * time.Millisecond, true},
		{"cut short", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 3", 0, false},
		{"no name", "garbage", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseStatCPU(tc.stat)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestProcessCPUReadsThisProcess: this process's own line parses, where there is a /proc.
func TestProcessCPUReadsThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	_, ok := processCPU(os.Getpid())
	require.True(t, ok)
	_, ok = processCPU(-1)
	require.False(t, ok)
}

// TestFiguresLine: the line make bench-vs-temporal reads (hosts/benchhttp/temporal's
// parseFigures) has every key it looks for, with the nearest-rank percentiles and the CPU a
// run, and no CPU keys when /proc did not tell.
func TestFiguresLine(t *testing.T) {
	t.Parallel()
	r := result{name: "wait", runs: 4, completed: 4, elapsed: 2 * time.Second,
		lat:       []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 400 * time.Millisecond},
		failures:  newTally(),
		serverCPU: 8 * time.Millisecond, ownCPU: 2 * time.Millisecond, cpuKnown: true}
	require.Equal(t, "figures: mode=wait runs=4 completed=4 seconds=2.000 runs_per_s=2.0 p50_ms=20.00 p90_ms=400.00 p99_ms=400.00 max_ms=400.00 server_cpu_ms_per_run=2.000 client_cpu_ms_per_run=0.500", r.figuresLine())
	r.cpuKnown = false
	require.NotContains(t, r.figuresLine(), "cpu")
	require.Empty(t, r.cpuNote())
}
