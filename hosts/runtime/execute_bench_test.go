package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/testlog"
)

// BenchmarkExecuteWait is one POST /workflows/{id}/execute?wait=30s of a one-step run, one
// client at a time, through the whole handler, with a worker in the same process running
// the run: what a run over HTTP costs the server (issue 35's HTTP target), without the
// sockets. cpu-ms/op is the process's user and system time over the loop, the test's
// own work included.
func BenchmarkExecuteWait(b *testing.B) {
	bn := setup(b)
	wf := bn.createWorkflow(b, orgA, "bench-execute-wait")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = worker.New(bn.eng, worker.Options{Logger: testlog.Quiet(), Poll: 20 * time.Millisecond}).Run(ctx)
	})
	b.Cleanup(func() { cancel(); wg.Wait() })
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		rec := bn.do(b, http.MethodPost, "/workflows/"+wf.ID+"/execute?wait=30s", orgA,
			map[string]any{"input": map[string]any{"email": fmt.Sprintf("%d@x", i), "name": "A"}})
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
