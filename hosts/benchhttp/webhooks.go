package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcflow/svcflow/internal/svcbin"
)

// The load mode's webhook phase: runs of an empty workflow (as make bench-deliveries), whose
// workflow.started and workflow.completed are registered to a receiver in this program.

const (
	hookOrg = "load-hooks"
	// hookTimeout bounds the wait for the last delivery once every run was accepted.
	hookTimeout = 3 * time.Minute
)

// hookReceiver is the webhook target: it answers 204 and keeps the first receipt of each
// delivery id (a retry sends the same id again).
type hookReceiver struct {
	srv  *http.Server
	url  string
	want int
	done chan struct{} // closed when want distinct deliveries have arrived

	mu      sync.Mutex
	first   map[string]receipt
	repeats int
	bad     int // bodies that were not a delivery
}

// receipt is a delivery's first arrival and the time of its event (the body's timestamp,
// to the millisecond).
type receipt struct{ at, event time.Time }

func startReceiver(want int) (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &hookReceiver{url: "http://" + ln.Addr().String() + "/hooks", want: want, done: make(chan struct{}), first: map[string]receipt{}}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }()
	return rc, nil
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	var d struct {
		DeliveryID string `json:"delivery_id"`
		Timestamp  string `json:"timestamp"`
	}
	err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&d)
	event, terr := time.Parse(time.RFC3339Nano, d.Timestamp)
	rc.mu.Lock()
	switch _, seen := rc.first[d.DeliveryID]; {
	case err != nil || terr != nil || d.DeliveryID == "":
		rc.bad++
	case seen:
		rc.repeats++
	default:
		rc.first[d.DeliveryID] = receipt{at: at, event: event}
		if len(rc.first) == rc.want {
			close(rc.done)
		}
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (rc *hookReceiver) close() { _ = rc.srv.Close() }

// webhookPhase: svcflow serve --allow-private-targets (the receiver is on loopback),
// o.hookRuns runs executed as fast as o.clients clients can, 2 deliveries each.
func webhookPhase(ctx context.Context, bin, dir string, o loadOptions) (figs []figure, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	want := 2 * o.hookRuns
	rc, err := startReceiver(want)
	if err != nil {
		return nil, err
	}
	defer rc.close()
	addr, err := svcbin.FreeAddr()
	if err != nil {
		return nil, err
	}
	p, ctx, err := startPhaseServe(ctx, bin, dir, serveArgs(dir, addr, o.workers, "--allow-private-targets"),
		"http://"+addr, "http://"+addr+"/health", o.clients+8)
	if err != nil {
		return nil, err
	}
	defer p.stop(&err)
	c := p.c
	fmt.Printf("\nwebhooks: svcflow serve --workers %d, %d runs of an empty workflow from %d clients, workflow.started and workflow.completed to a receiver here: %d deliveries%s\n",
		o.workers, o.hookRuns, o.clients, want, loadAverage())

	for _, event := range []string{"workflow.started", "workflow.completed"} {
		body := fmt.Appendf(nil, `{"event": %q, "url": %q}`, event, rc.url)
		if _, err := c.do(ctx, "create webhook", http.MethodPost, "/webhooks", hookOrg, body, nil); err != nil {
			return nil, err
		}
	}
	wfID, err := c.createWorkflow(ctx, hookOrg, "empty", `{"actions": []}`)
	if err != nil {
		return nil, err
	}
	path := "/workflows/" + url.PathEscape(wfID) + "/execute"
	var next atomic.Int64
	fails := newTally()
	var wg sync.WaitGroup
	for range min(o.clients, o.hookRuns) {
		wg.Go(func() {
			for int(next.Add(1)) <= o.hookRuns && ctx.Err() == nil {
				if _, err := c.do(ctx, "execute", http.MethodPost, path, hookOrg, []byte(`{"input": {}}`), nil); err != nil && ctx.Err() == nil {
					fails.add(err.Error())
				}
			}
		})
	}
	wg.Wait()
	if n := fails.count(); n > 0 {
		return nil, fmt.Errorf("%d executes failed: %v", n, fails.reasons())
	}
	select {
	case <-rc.done:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(hookTimeout):
		rc.mu.Lock()
		got := len(rc.first)
		rc.mu.Unlock()
		return nil, fmt.Errorf("%d of %d deliveries arrived within %s of the last execute", got, want, hookTimeout)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.bad > 0 {
		return nil, fmt.Errorf("%d requests to the receiver were not deliveries", rc.bad)
	}
	lat := make([]time.Duration, 0, len(rc.first))
	var firstEvent, lastReceipt time.Time
	for _, r := range rc.first {
		lat = append(lat, r.at.Sub(r.event))
		if firstEvent.IsZero() || r.event.Before(firstEvent) {
			firstEvent = r.event
		}
		if r.at.After(lastReceipt) {
			lastReceipt = r.at
		}
	}
	slices.Sort(lat)
	span := lastReceipt.Sub(firstEvent)
	lr := result{lat: lat}
	rps := float64(len(lat)) / span.Seconds()
	fmt.Printf("  %d deliveries in %s from the first event to the last delivery = %.0f/s; %d sent again; event to first arrival p50 %s, p99 %s, max %s (event times are to the millisecond)\n",
		len(lat), span.Round(time.Millisecond), rps, rc.repeats, fmtDur(lr.percentile(50)), fmtDur(lr.percentile(99)), fmtDur(lr.percentile(100)))
	return []figure{
		rate("webhooks.deliveries_per_s", "webhooks: deliveries/s", rps),
		latency("webhooks.event_to_delivery_p50_ms", "webhooks: event to delivery p50", lr.percentile(50)),
		latency("webhooks.event_to_delivery_p99_ms", "webhooks: event to delivery p99", lr.percentile(99)),
	}, nil
}
