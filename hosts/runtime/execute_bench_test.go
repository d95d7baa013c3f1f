package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/testlog"
)

// BenchmarkExecuteWait is one POST /workflows/{id}/execute?wait=30s of a one-step run, one
// client at a time, through the whole handler, with a worker in the same process running
// the run: what a run over HTTP costs the server (issue 35's HTTP target), without the
// sockets. The server is built as serve builds it: no contract checks of the answers or
// events (setup's), which would be counted too. cpu-ms/op is the process's user and system
// time over the loop.
func BenchmarkExecuteWait(b *testing.B) {
	quiet := testlog.Quiet()
	eng, err := engine.New(engine.Config{Store: store.OpenTest(b, "sqlite"), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	h := runtime.New(eng, runtime.Options{Logger: quiet}).Handler()
	send := func(path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Org-Id", orgA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := send("/custom-tables", `{"name":"contacts","fields":{"email":"text","name":"text","status":"text"}}`); rec.Code != http.StatusCreated {
		b.Fatal(rec.Code, rec.Body.String())
	}
	rec := send("/workflows", `{"name":"bench-execute-wait","definition":`+upsertDefinition+`}`)
	if rec.Code != http.StatusCreated {
		b.Fatal(rec.Code, rec.Body.String())
	}
	var wf struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &wf); err != nil {
		b.Fatal(err)
	}
	id := wf.ID

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = worker.New(eng, worker.Options{Logger: quiet, Poll: 20 * time.Millisecond}).Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait() })

	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		rec := send("/workflows/"+id+"/execute?wait=30s", fmt.Sprintf(`{"input":{"email":"%d@x","name":"A"}}`, i))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"completed"`) {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
