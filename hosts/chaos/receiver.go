package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// receiver is the flaky webhook target: an HTTP server in this program that answers a
// fraction of deliveries with a 500, by closing the connection without an answer, or by
// hanging past the service's 10 s attempt timeout, and answers the rest 200. It records
// every request by its X-Svc-Delivery-Id.
//
// Two rules keep the service's circuit breaker (3 failed attempts in a row to one URL open
// it for 5 minutes) out of the way, since a held delivery would outlast the chaos run: a
// delivery is failed at most once, and never right after a failure on the same path (each
// event has its own path, so its own circuit).
type receiver struct {
	srv  *http.Server
	ln   net.Listener
	base string // http://127.0.0.1:port

	failRate float64

	mu       sync.Mutex
	rng      *rand.Rand
	byID     map[string]*received
	lastFail map[string]bool // path -> the last answer there was a failure
	requests int
	answers  map[string]int // "200", "500", "closed", "hung"
}

// received is what the receiver saw of one delivery_id.
type received struct {
	event, runID, path string
	requests           int // every request carrying this delivery_id
	accepted           int // requests answered 2xx
	failed             int // requests answered otherwise (500, closed, hung)
}

func newReceiver(seed uint64, failRate float64) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{ln: ln, base: "http://" + ln.Addr().String(), failRate: failRate,
		rng: rand.New(rand.NewPCG(seed, 0x5eed)), byID: map[string]*received{}, lastFail: map[string]bool{},
		answers: map[string]int{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	_ = r.srv.Close()
}

// answer kinds.
const (
	answerOK     = "200"
	answer500    = "500"
	answerClosed = "closed" // the connection closed without an answer
	answerHung   = "hung"   // no answer until the sender gave up
)

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id := req.Header.Get("X-Svc-Delivery-Id")
	var doc struct {
		Event   string `json:"event"`
		Payload struct {
			RunID string `json:"run_id"`
		} `json:"payload"`
	}
	_ = json.Unmarshal(body, &doc)

	r.mu.Lock()
	r.requests++
	rec := r.byID[id]
	if rec == nil {
		rec = &received{event: doc.Event, runID: doc.Payload.RunID, path: req.URL.Path}
		r.byID[id] = rec
	}
	rec.requests++
	kind := answerOK
	if rec.failed == 0 && !r.lastFail[req.URL.Path] && r.rng.Float64() < r.failRate {
		switch x := r.rng.Float64(); {
		case x < 0.55:
			kind = answer500
		case x < 0.9:
			kind = answerClosed
		default:
			kind = answerHung
		}
	}
	if kind == answerOK {
		// Accepted: recorded before the answer is written, as a receiver that processes
		// and then answers would; an answer that never reaches the service is exactly the
		// case at-least-once delivery sends again.
		rec.accepted++
	} else {
		rec.failed++
	}
	r.lastFail[req.URL.Path] = kind != answerOK
	r.answers[kind]++
	r.mu.Unlock()

	switch kind {
	case answerOK:
		w.WriteHeader(http.StatusOK)
	case answer500:
		w.WriteHeader(http.StatusInternalServerError)
	case answerClosed:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	case answerHung:
		// Until the sender gives up (its attempt timeout is 10 s) or 15 s.
		select {
		case <-req.Context().Done():
		case <-time.After(15 * time.Second):
		}
		w.WriteHeader(http.StatusGatewayTimeout)
	}
}

// snapshot copies what was received, by delivery_id, and the answer counts.
func (r *receiver) snapshot() (map[string]received, map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byID := make(map[string]received, len(r.byID))
	for id, rec := range r.byID {
		byID[id] = *rec
	}
	answers := make(map[string]int, len(r.answers))
	for k, v := range r.answers {
		answers[k] = v
	}
	return byID, answers, r.requests
}
