package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/internal/svcbin"
	"github.com/svcflow/svcflow/internal/testlog"
)

// TestLoadMode keeps make load from rotting: every phase with tiny sizes against the real
// binary, on SQLite, and on PostgreSQL with one worker process when SVC_TEST_POSTGRES_DSN is
// set. It checks that every figure is there and positive, not what it is.
func TestLoadMode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts svcflow")
	}
	dir := t.TempDir()
	testlog.Gather(t, dir) // the svcflow processes' logs
	bin, err := svcbin.Build(t.Context(), dir)
	require.NoError(t, err)
	o := loadOptions{
		options:    options{clients: 8, runs: 40, workers: 4, keys: 50},
		pgDSN:      os.Getenv(pgEnv),
		hookRuns:   20,
		gwRequests: 400,
		gwClients:  8,
	}
	want := 5 + 3 + 6 // sqlite, webhooks, gateway and runtime direct
	if o.pgDSN != "" {
		o.pgWorkers = []int{1}
		want += 5
	} else {
		t.Log(pgEnv + " is unset: no PostgreSQL phase")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	figs, mach, err := loadRun(ctx, bin, dir, o)
	require.NoError(t, err)
	require.Contains(t, mach, "CPUs")
	require.Len(t, figs, want)
	keys := map[string]bool{}
	for _, f := range figs {
		require.Greater(t, f.value, 0.0, f.key)
		require.False(t, keys[f.key], "figure %s twice", f.key)
		keys[f.key] = true
	}
	for _, k := range []string{"sqlite.runs_per_s", "sqlite.step_p99_ms", "webhooks.deliveries_per_s", "gateway.requests_per_s"} {
		require.True(t, keys[k], k)
	}
	if o.pgDSN != "" {
		require.True(t, keys["postgres_1w.runs_per_s"])
	}
}

// TestBaselineComparison: figures saved as a baseline read back; a rate that lost more than
// 20 % and a latency that grew by more than 25 % are REGRESSIONs, smaller changes are not.
func TestBaselineComparison(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baseline.json")
	old := []figure{
		rate("a.runs_per_s", "a: runs/s", 500),
		rate("b.runs_per_s", "b: runs/s", 500),
		latency("a.p99_ms", "a: p99", 100*time.Millisecond),
		latency("b.p99_ms", "b: p99", 100*time.Millisecond),
	}
	require.NoError(t, writeBaseline(path, "test machine", "quiet", old))
	bl, err := readBaseline(path)
	require.NoError(t, err)
	require.Equal(t, "test machine", bl.Machine)
	require.Equal(t, "quiet", bl.Note)
	require.Equal(t, 500.0, bl.Figures["a.runs_per_s"])
	require.Equal(t, 100.0, bl.Figures["a.p99_ms"])

	now := []figure{
		rate("a.runs_per_s", "a: runs/s", 390),              // 0.78: regression
		rate("b.runs_per_s", "b: runs/s", 410),              // 0.82
		latency("a.p99_ms", "a: p99", 130*time.Millisecond), // 1.30: regression
		latency("b.p99_ms", "b: p99", 120*time.Millisecond), // 1.20
		rate("c.requests_per_s", "c: requests/s", 1000),     // not in the baseline
	}
	var out bytes.Buffer
	require.Equal(t, 2, compare(&out, now, bl))
	lines := strings.Split(out.String(), "\n")
	require.Contains(t, lines[1], "REGRESSION")
	require.NotContains(t, lines[2], "REGRESSION")
	require.Contains(t, lines[3], "REGRESSION")
	require.NotContains(t, lines[4], "REGRESSION")
	require.Regexp(t, `c: requests/s\s+1000/s\s+-\s+-`, lines[5])
	require.Equal(t, 0, compare(&out, now, nil), "no baseline, no regression")
}

// TestHistogramQuantile: quantiles interpolated inside a bucket, summed over processes, and
// taken on the difference of two scrapes.
func TestHistogramQuantile(t *testing.T) {
	t.Parallel()
	inf := []float64{0.001, 0.01, math.Inf(1)}
	before := histogram{bounds: inf, counts: []float64{10, 10, 10}}
	after := histogram{bounds: inf, counts: []float64{60, 110, 110}}
	d := after.sub(before) // 50 at most 1 ms, 50 more in (1 ms, 10 ms]
	require.Equal(t, 100.0, d.total())
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.25, 500 * time.Microsecond},
		{0.5, time.Millisecond},
		{0.75, 5500 * time.Microsecond},
		{1, 10 * time.Millisecond},
	} {
		require.InDelta(t, float64(tc.want), float64(d.quantile(tc.q)), float64(time.Microsecond), "q %v", tc.q)
	}
	sum := d.add(histogram{bounds: inf, counts: []float64{0, 0, 100}}) // 100 above the last bound
	require.Equal(t, 10*time.Millisecond, sum.quantile(0.99), "the +Inf bucket is the largest finite bound")
	require.Equal(t, time.Duration(0), histogram{}.quantile(0.5))

	le, v, err := bucketLine(`step_type="custom-table",le="+Inf"} 42`)
	require.NoError(t, err)
	require.True(t, math.IsInf(le, 1))
	require.Equal(t, 42.0, v)
}
