package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/hosts/worker"
)

// BenchmarkDeliveries is issue 8's speed target: deliveries per second to a local receiver
// on SQLite, and the latency from an event's commit (its timestamp) to the first attempt
// reaching the receiver, for a healthy target. Runs of an empty workflow each emit
// workflow_run_started and workflow_run_completed to the organization's catch-all; the
// worker has 4 step slots, as `svcflow serve`.
//
//   - paced: 2,000 runs executed at 500 a second, so 1,000 deliveries a second are offered
//     for 4 s: the latency at the target rate (p99 < 1 s);
//   - burst: 2,000 runs executed as fast as one client can while the worker runs them too;
//   - queued: 4,000 documents uploaded (one document.uploaded event each) before the worker
//     starts, then delivered: the rate of deliveries alone (>= 1,000 a second).
//
// Run with -benchtime 1x (make bench-deliveries).
func BenchmarkDeliveries(b *testing.B) {
	const runs = 2000
	for _, mode := range []struct {
		name  string
		every time.Duration
	}{{"paced", time.Second / 500}, {"burst", 0}, {"queued", -1}} {
		b.Run(mode.name, func(b *testing.B) {
			eng := deliveryEngine(b, "", engine.Config{Store: openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))})
			rc := newReceiver(b, func(int, http.ResponseWriter, *received) int { return http.StatusOK })
			setCatchAll(b, eng, org, rc.URL)
			wf := createWorkflow(b, eng, "empty", `{"actions": []}`)
			if mode.every < 0 {
				for i := range 2 * runs {
					_, err := eng.UploadDocument(context.Background(), org, engine.DocumentUpload{Name: fmt.Sprintf("d%d.csv", i), Content: []byte("a\n1\n")})
					require.NoError(b, err)
				}
			}
			stop := startWorker(b, eng, worker.Options{Concurrency: 4})
			began := time.Now()
			for i := range runs {
				if mode.every < 0 {
					break
				}
				if mode.every > 0 {
					// The benchmark's arrival rate: event i is due i·every after the first.
					time.Sleep(time.Until(began.Add(time.Duration(i) * mode.every)))
				}
				execute(b, eng, wf, json.RawMessage(`{}`))
			}
			waitFor(b, 5*time.Minute, 5*time.Millisecond, "every delivery received", func() bool { return len(rc.requests()) >= 2*runs })
			elapsed := time.Since(began)
			require.NoError(b, stop())
			got := rc.requests()
			lat := make([]time.Duration, 0, len(got))
			for _, r := range got {
				at, err := time.Parse(time.RFC3339Nano, r.decoded.Timestamp)
				require.NoError(b, err)
				lat = append(lat, r.at.Sub(at))
			}
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
			rate := float64(len(got)) / elapsed.Seconds()
			b.ReportMetric(rate, "deliveries/s")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.Logf("%s: %d deliveries in %s = %.0f/s; event to first attempt p50 %s, p99 %s, max %s (targets: >= 1,000/s, p99 < 1 s)",
				mode.name, len(got), elapsed.Round(time.Millisecond), rate, p50.Round(time.Millisecond), p99.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		})
	}
}
