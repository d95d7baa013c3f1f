package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testclock"
	"github.com/svcflow/svcflow/internal/testlog"
)

// statusDoc is the status document as a client reads it.
type statusDoc struct {
	ID      string         `json:"id"`
	Status  string         `json:"status"`
	Context map[string]any `json:"context"`
	Steps   []struct {
		Status string `json:"status"`
	} `json:"steps"`
}

// startWorker runs a worker over b's engine until the test ends.
func (b *bundle) startWorker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = worker.New(b.eng, worker.Options{Logger: testlog.Quiet()}).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestExecuteWaitAnswersWhenTheRunEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t)
	wf := b.createWorkflow(t, orgA, "wait")
	rec := b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute?wait=20s", orgA, map[string]any{"input": map[string]any{"email": "a@x", "name": "A"}})
	doc := ok[statusDoc](t, rec, http.StatusOK)
	require.Equal(t, "completed", doc.Status)
	require.NotEmpty(t, doc.ID)
	require.Contains(t, doc.Context, "saved", "the whole status document, context included")
	require.Len(t, doc.Steps, 1)
	require.Equal(t, "completed", doc.Steps[0].Status)
	require.Zero(t, b.eng.Waiting(), "the wait is released")

	// ?context=false: the same document without the context (a large result is read by key).
	rec = b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute?wait=20s&context=false", orgA, map[string]any{"input": map[string]any{"email": "b@x", "name": "B"}})
	var raw map[string]json.RawMessage
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw))
	require.NotContains(t, raw, "context")
	require.Contains(t, raw, "steps")
	require.JSONEq(t, `"completed"`, string(raw["status"]))
}

func TestExecuteWaitAnswersRunningAtTheDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t) // no worker: the run cannot end
	wf := b.createWorkflow(t, orgA, "deadline")
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		answered <- b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute?wait=300ms", orgA, map[string]any{"input": map[string]any{"email": "a@x"}})
	}()
	require.Eventually(t, func() bool { return b.eng.Waiting() == 1 }, 5*time.Second, time.Millisecond, "it waits")
	b.clk.Advance(300 * time.Millisecond) // the deadline passes
	doc := ok[statusDoc](t, <-answered, http.StatusAccepted)
	require.Zero(t, b.eng.Waiting(), "the wait is over")
	require.Equal(t, "running", doc.Status)
	require.NotEmpty(t, doc.ID)
	require.Len(t, doc.Steps, 1, "the status document, not only {id, status}")

	// Without wait the answer is the bare {id, status}.
	rec := b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute", orgA, map[string]any{"input": map[string]any{"email": "b@x"}})
	var bare map[string]any
	require.NoError(t, json.Unmarshal(ok[json.RawMessage](t, rec, http.StatusAccepted), &bare))
	require.Len(t, bare, 2, "%v", bare)
}

func TestWaitRejectsBadDurationsAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "bad-wait")
	for _, w := range []string{"abc", "61s", "-1s", "10", "1h"} {
		rec := b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute?wait="+w, orgA, map[string]any{"input": map[string]any{"email": "a@x"}})
		p := problem(t, rec, http.StatusUnprocessableEntity, "validation_failed")
		require.Equal(t, "query.wait", p.Errors[0].Location, w)
	}
	runs := ok[list[runRef]](t, b.do(t, http.MethodGet, "/runs", orgA, nil), http.StatusOK)
	require.Empty(t, runs.Items, "a refused execute starts no run")

	run := b.execute(t, orgA, wf.ID, map[string]any{"email": "a@x"})
	for _, w := range []string{"soon", "2m"} {
		problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?wait="+w, orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
	}
	problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?wait=1s&last_status=sleeping", orgA, nil), http.StatusUnprocessableEntity, "validation_failed")
}

func TestStatusWaitLongPollsUntilTheStatusChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "long-poll")
	run := b.execute(t, orgA, wf.ID, map[string]any{"email": "a@x"})

	// The engine's clock fires a wait's deadline only when the test moves it, and this
	// test never moves it past 30 s: an answer to a 30 s wait came from the run, not from
	// the deadline (a broken wake would hang the test).
	got := make(chan *httptest.ResponseRecorder, 1)
	go func() { got <- b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?wait=30s", orgA, nil) }()
	require.Eventually(t, func() bool { return b.eng.Waiting() == 1 }, 5*time.Second, time.Millisecond)
	b.work(t) // the run completes in this process: the waiter is woken by the commit
	doc := ok[statusDoc](t, <-got, http.StatusOK)
	require.Equal(t, "completed", doc.Status, "answered once the run changed, not before")

	// Already not running: at once (no deadline passes here either).
	doc = ok[statusDoc](t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?wait=30s", orgA, nil), http.StatusOK)
	require.Equal(t, "completed", doc.Status)
	// Waiting for a change from completed: until the deadline.
	go func() {
		got <- b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?wait=250ms&last_status=completed", orgA, nil)
	}()
	require.Eventually(t, func() bool { return b.eng.Waiting() == 1 }, 5*time.Second, time.Millisecond, "it waits for a change")
	b.clk.Advance(250 * time.Millisecond)
	doc = ok[statusDoc](t, <-got, http.StatusOK)
	require.Equal(t, "completed", doc.Status)

	// Another organization's run is not found, and is not waited for.
	problem(t, b.do(t, http.MethodGet, "/runs/"+run.ID+"/status?wait=30s", orgB, nil), http.StatusNotFound, "not_found")
	require.Zero(t, b.eng.Waiting())
}

// A client that goes away frees its wait at once, not at the deadline.
func TestWaitEndsWhenTheClientDisconnects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.createWorkflow(t, orgA, "disconnect")
	run := b.execute(t, orgA, wf.ID, map[string]any{"email": "a@x"})
	srv := httptest.NewServer(b.h)
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "GET /runs/%s/status?wait=60s HTTP/1.1\r\nHost: x\r\nX-Org-Id: %s\r\n\r\n", run.ID, orgA)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.eng.Waiting() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return b.eng.Waiting() == 0 }, 2*time.Second, time.Millisecond,
		"the wait is released when the connection closes, not after 60s")
}

// Waiting works when the run executes in another process: here a second engine over its
// own store, sharing only the database. On PostgreSQL the waiter is woken by LISTEN/NOTIFY
// (its poll is set to an hour, so nothing else could wake it); on a SQLite file shared by
// two processes, by the poll.
func TestWaitForARunExecutedElsewhere(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn := store.NewTestDSN(t, dialect)
			open := func() *store.Store {
				st, err := store.Open(context.Background(), dsn)
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				require.NoError(t, st.Migrate(context.Background()))
				return st
			}
			poll := time.Hour
			if dialect == "sqlite" {
				poll = 50 * time.Millisecond
			}
			quiet := testlog.Quiet()
			// Its clock is never moved: a 30 s wait's deadline cannot pass, so every answer
			// came from the run's end in the other engine.
			clk := testclock.Running()
			front, err := engine.New(engine.Config{Store: open(), Logger: quiet, WaitPoll: poll, Now: clk.Now, After: clk.After})
			require.NoError(t, err)
			contracttest.WatchEvents(t, front)
			back, err := engine.New(engine.Config{Store: open(), Logger: quiet})
			require.NoError(t, err)
			contracttest.WatchEvents(t, back)
			srv := runtime.New(front, runtime.Options{Logger: quiet})
			b := &bundle{eng: front, srv: srv, h: srv.Handler(), api: srv.API()}
			wf := b.createWorkflow(t, orgA, "elsewhere")

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = worker.New(back, worker.Options{Logger: quiet, Poll: 20 * time.Millisecond}).Run(ctx) })
			t.Cleanup(func() { cancel(); wg.Wait() })

			for i := range 5 {
				rec := b.do(t, http.MethodPost, "/workflows/"+wf.ID+"/execute?wait=30s", orgA, map[string]any{"input": map[string]any{"email": fmt.Sprintf("%d@x", i)}})
				doc := ok[statusDoc](t, rec, http.StatusOK)
				require.Equal(t, "completed", doc.Status)
			}
		})
	}
}

// BenchmarkStatusWait measures how soon a waiting GET /runs/{runId}/status?wait=30s answers
// once the run it waits for completes in this process (woken by the commit), from the start
// of the work that completes it.
func BenchmarkStatusWait(b *testing.B) {
	bn := setup(b)
	wf := bn.createWorkflow(b, orgA, "bench-wait")
	var took time.Duration
	for b.Loop() {
		run := bn.execute(b, orgA, wf.ID, map[string]any{"email": "a@x"})
		got := make(chan *httptest.ResponseRecorder, 1)
		go func() { got <- bn.do(b, http.MethodGet, "/runs/"+run.ID+"/status?wait=30s", orgA, nil) }()
		for bn.eng.Waiting() != 1 {
			goruntime.Gosched()
		}
		began := time.Now()
		bn.work(b)
		rec := <-got
		took += time.Since(began)
		require.Equal(b, http.StatusOK, rec.Code)
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "work-to-answer-ms")
}
