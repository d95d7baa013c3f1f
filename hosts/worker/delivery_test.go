package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/events"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/metrics"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testclock"
)

// received is one request a test receiver got.
type received struct {
	at      time.Time
	header  http.Header
	body    []byte
	decoded struct {
		DeliveryID string          `json:"delivery_id"`
		Event      string          `json:"event"`
		Timestamp  string          `json:"timestamp"`
		Payload    json.RawMessage `json:"payload"`
	}
}

// receiver is a real HTTP target whose answers a test scripts: answer(n, r) gives the status
// (and may set headers) for the n-th request (from 1).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter, r *received) int
}

func newReceiver(t testing.TB, answer func(n int, w http.ResponseWriter, r *received) int) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	// Every delivery is checked against the webhooks of openapi/openapi.yaml: the envelope,
	// a declared event, the headers. The first that is not fails the test when it ends
	// (the server is closed first: cleanups run last in, first out).
	var notDeclared error
	t.Cleanup(func() {
		if notDeclared != nil {
			t.Errorf("contract: a delivery is not what openapi/openapi.yaml declares: %v", notDeclared)
		}
	})
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := received{at: time.Now(), header: r.Header.Clone(), body: body}
		_ = json.Unmarshal(body, &got.decoded)
		err := contracttest.RuntimeEvents().CheckDelivery(r.Header, body)
		rc.mu.Lock()
		if err != nil && notDeclared == nil {
			notDeclared = fmt.Errorf("%s: %w", body, err)
		}
		rc.got = append(rc.got, got)
		n := len(rc.got)
		rc.mu.Unlock()
		status := http.StatusOK
		if rc.answer != nil {
			status = rc.answer(n, w, &got)
		}
		if status != 0 { // 0: the answer wrote its own
			w.WriteHeader(status)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) events() []string {
	var out []string
	for _, r := range rc.requests() {
		out = append(out, r.decoded.Event)
	}
	return out
}

// deliveryEngine is an engine with a keyring (org config holds webhook_url) allowed to reach
// receivers on 127.0.0.1.
func deliveryEngine(t testing.TB, d string, cfg engine.Config) *engine.Engine {
	t.Helper()
	key, err := secrets.GenerateKey()
	require.NoError(t, err)
	kr, err := secrets.NewKeyring(key)
	require.NoError(t, err)
	if cfg.Store == nil {
		cfg.Store = openStore(t, sharedDSN(t, d))
	}
	cfg.Keyring, cfg.AllowPrivateTargets = kr, true
	return newEngine(t, cfg)
}

func setCatchAll(t testing.TB, eng *engine.Engine, orgID, url string) {
	t.Helper()
	_, _, err := eng.SetOrgConfig(context.Background(), orgID, engine.CatchAllKey, url)
	require.NoError(t, err)
}

func deliveriesOf(t testing.TB, eng *engine.Engine, orgID string) []svctype.Delivery {
	t.Helper()
	page, err := eng.ListDeliveries(context.Background(), orgID, "", svctype.ListOptions{Limit: 500})
	require.NoError(t, err)
	return page.Items
}

func TestCatchAllReceivesEveryEventUnsigned(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			eng := deliveryEngine(t, d, engine.Config{})
			rc := newReceiver(t, nil)
			setCatchAll(t, eng, org, rc.URL+"/all?token=abc")
			wf := ledgerSetup(t, eng)
			run := execute(t, eng, wf, ledgerInput(11)) // amount 11: all three steps run
			startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
			// started, 3 x (step.started, step.completed), completed
			waitFor(t, 10*time.Second, 10*time.Millisecond, "8 deliveries", func() bool {
				if len(rc.requests()) == 8 {
					return true
				}
				if testing.Verbose() {
					for _, d := range deliveriesOf(t, eng, org) {
						doc, _ := eng.GetDelivery(context.Background(), org, d.ID)
						t.Logf("%s %s %s attempts %+v", d.ID, d.Event, d.Status, doc.AttemptList)
					}
					t.Logf("received %v", rc.events())
				}
				return false
			})

			evs := rc.events() // deliveries are unordered across events (spec section 6)
			require.ElementsMatch(t, []string{"workflow_run_started", "step.started", "step.completed", "step.started",
				"step.completed", "step.started", "step.completed", "workflow_run_completed"}, evs)
			seen := map[string]bool{}
			for _, r := range rc.requests() {
				require.Equal(t, "application/json", r.header.Get("Content-Type"))
				require.Equal(t, r.decoded.DeliveryID, r.header.Get("X-Svc-Delivery-Id"))
				require.Empty(t, r.header.Get("X-Svc-Signature"), "the catch-all is unsigned")
				require.False(t, seen[r.decoded.DeliveryID], "one delivery id per delivery")
				seen[r.decoded.DeliveryID] = true
				_, err := time.Parse(time.RFC3339, r.decoded.Timestamp)
				require.NoError(t, err)
				var p map[string]any
				require.NoError(t, json.Unmarshal(r.decoded.Payload, &p))
				if _, isRunEvent := p["run_id"]; isRunEvent {
					require.Equal(t, run, p["run_id"])
				}
			}
			waitFor(t, 5*time.Second, 10*time.Millisecond, "every delivery recorded as succeeded", func() bool {
				for _, dl := range deliveriesOf(t, eng, org) {
					if dl.Status != svctype.DeliverySucceeded {
						return false
					}
				}
				return true
			})
			dl := deliveriesOf(t, eng, org)
			require.Len(t, dl, 8)
			doc, err := eng.GetDelivery(context.Background(), org, dl[0].ID)
			require.NoError(t, err)
			require.Len(t, doc.AttemptList, 1)
			require.Equal(t, 200, doc.AttemptList[0].StatusCode)
			require.Equal(t, "succeeded", doc.AttemptList[0].Outcome)
		})
	}
}

// A 500 then a 429 with Retry-After, then 200: the same delivery id and the same bytes
// every time, each attempt recorded; a 410 and a 302 are failures not retried (and a 302 is
// not followed).
func TestDeliveryRetriesAndFailures(t *testing.T) {
	t.Parallel()
	eng := deliveryEngine(t, "sqlite", engine.Config{})
	redirected := newReceiver(t, nil)
	// Org acme's target fails twice, then takes the delivery; org refusing's answers 410 to
	// the run's start and 302 to its end. Two targets, so that neither opens its circuit.
	var startedTries int
	flaky := newReceiver(t, func(n int, w http.ResponseWriter, r *received) int {
		if r.decoded.Event != "workflow_run_started" {
			return http.StatusOK
		}
		startedTries++ // the receiver's handler runs one request at a time per delivery
		switch startedTries {
		case 1:
			return http.StatusInternalServerError
		case 2:
			w.Header().Set("Retry-After", "1")
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	})
	refusing := newReceiver(t, func(n int, w http.ResponseWriter, r *received) int {
		if r.decoded.Event == "workflow_run_started" {
			return http.StatusGone
		}
		w.Header().Set("Location", redirected.URL)
		return http.StatusFound
	})
	const refusingOrg = "refusing"
	setCatchAll(t, eng, org, flaky.URL)
	setCatchAll(t, eng, refusingOrg, refusing.URL)
	// An empty workflow's run emits workflow_run_started and workflow_run_completed.
	ctx := context.Background()
	for _, o := range []string{org, refusingOrg} {
		w, err := eng.CreateWorkflow(ctx, o, engine.WorkflowInput{Name: "empty", Definition: json.RawMessage(`{"actions": []}`)})
		require.NoError(t, err)
		_, err = eng.Execute(ctx, o, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
		require.NoError(t, err)
	}
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	ended := func(o string, n int) func() bool {
		return func() bool {
			ds := deliveriesOf(t, eng, o)
			for _, d := range ds {
				if d.Status == svctype.DeliveryPending {
					return false
				}
			}
			return len(ds) == n
		}
	}
	waitFor(t, 15*time.Second, 20*time.Millisecond, "acme's deliveries end", ended(org, 2))
	waitFor(t, 5*time.Second, 20*time.Millisecond, "refusing's deliveries end", ended(refusingOrg, 2))

	byID := map[string][]received{}
	for _, r := range flaky.requests() {
		byID[r.decoded.DeliveryID] = append(byID[r.decoded.DeliveryID], r)
	}
	var retried []received
	for _, rs := range byID {
		if len(rs) > 1 {
			retried = rs
		}
	}
	require.Len(t, retried, 3, "one delivery tried three times")
	for _, r := range retried[1:] {
		require.Equal(t, string(retried[0].body), string(r.body), "a retry resends the same bytes")
		require.Equal(t, retried[0].decoded.DeliveryID, r.header.Get("X-Svc-Delivery-Id"))
	}
	require.GreaterOrEqual(t, retried[1].at.Sub(retried[0].at), 900*time.Millisecond, "backoff from 1 s")
	require.GreaterOrEqual(t, retried[2].at.Sub(retried[1].at), 900*time.Millisecond, "Retry-After: 1 honoured")
	require.Empty(t, redirected.requests(), "a 302 is not followed")
	require.Len(t, refusing.requests(), 2, "a 410 and a 302 are not retried")

	outcomes := func(o, id string) []string {
		doc, err := eng.GetDelivery(ctx, o, id)
		require.NoError(t, err)
		var out []string
		for _, a := range doc.AttemptList {
			out = append(out, fmt.Sprintf("%d %s", a.StatusCode, a.Outcome))
		}
		return out
	}
	require.Equal(t, []string{"500 retry", "429 retry", "200 succeeded"}, outcomes(org, retried[0].decoded.DeliveryID))
	for _, d := range deliveriesOf(t, eng, refusingOrg) {
		require.Equal(t, svctype.DeliveryFailed, d.Status)
		want := "302 failed"
		if d.Event == "workflow_run_started" {
			want = "410 failed"
		}
		require.Equal(t, []string{want}, outcomes(refusingOrg, d.ID))
	}
}

// A target that hangs does not hold back deliveries to a healthy one. No wall-clock bound:
// the healthy target gets all its deliveries while the hanging one still holds its own.
func TestHangingTargetDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	eng := deliveryEngine(t, "sqlite", engine.Config{})
	release := make(chan struct{})
	var once sync.Once
	hang := newReceiver(t, func(int, http.ResponseWriter, *received) int { <-release; return http.StatusOK })
	// Registered after the receivers, so it runs before their Close, which waits for the
	// requests the hanging target holds.
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	healthy := newReceiver(t, nil)
	const other = "other-org"
	setCatchAll(t, eng, org, hang.URL)
	setCatchAll(t, eng, other, healthy.URL)
	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	w2, err := eng.CreateWorkflow(context.Background(), other, engine.WorkflowInput{Name: "empty", Definition: json.RawMessage(`{"actions": []}`)})
	require.NoError(t, err)
	for range 5 {
		execute(t, eng, wf, json.RawMessage(`{}`))
	}
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	waitFor(t, 5*time.Second, 10*time.Millisecond, "the hanging target holds requests", func() bool { return len(hang.requests()) >= 2 })
	for range 10 {
		_, err := eng.Execute(context.Background(), other, w2.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
		require.NoError(t, err)
	}
	// Every delivery to the healthy target arrives while the hanging one still holds its
	// requests (they are released only below).
	waitFor(t, 5*time.Second, 10*time.Millisecond, "the healthy target gets its 20 deliveries", func() bool { return len(healthy.requests()) == 20 })
	require.GreaterOrEqual(t, len(hang.requests()), 2)
	require.True(t, strings.HasPrefix(healthy.requests()[0].decoded.DeliveryID, "dlv_"))
	once.Do(func() { close(release) })
}

// deliveryOutcomes lists a delivery's attempts as "status outcome".
func deliveryOutcomes(t testing.TB, eng *engine.Engine, orgID, id string) []string {
	t.Helper()
	doc, err := eng.GetDelivery(context.Background(), orgID, id)
	require.NoError(t, err)
	var out []string
	for _, a := range doc.AttemptList {
		out = append(out, fmt.Sprintf("%d %s", a.StatusCode, a.Outcome))
	}
	return out
}

// The circuit of a target address opens after 3 consecutive failures: deliveries to it are
// skipped (recorded, rescheduled, not lost) for 5 minutes, then one goes through; its
// success closes the circuit and the held deliveries follow. The engine and its store share
// a clock that stands still until the test moves it: a retry is due only when it says so.
func TestCircuitOpensForFiveMinutes(t *testing.T) {
	t.Parallel()
	t0 := time.Now().UTC().Truncate(time.Second)
	clock := testclock.New(t0)
	st := openStore(t, sharedDSN(t, "sqlite"), store.WithNow(clock.Now))
	reg := metrics.New(nil, st, engine.Metrics()...)
	eng := deliveryEngine(t, "", engine.Config{Store: st, Now: clock.Now, Meter: reg})
	var mu sync.Mutex
	healthy := false
	rc := newReceiver(t, func(int, http.ResponseWriter, *received) int {
		mu.Lock()
		defer mu.Unlock()
		if healthy {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	setCatchAll(t, eng, org, rc.URL)
	startWorker(t, eng, worker.Options{Concurrency: 1, Poll: 10 * time.Millisecond})
	// One event at a time (a document upload emits document.uploaded), each delivery failing
	// before the next event: deliveries in flight together are all sent; the circuit judges
	// the ones that start after the third failure.
	upload := func(i int) {
		_, err := eng.UploadDocument(context.Background(), org, engine.DocumentUpload{Name: fmt.Sprintf("d%d.csv", i), Content: []byte("a\n1\n")})
		require.NoError(t, err)
	}
	// (The fake clock stands still: every delivery has the same created_at.)
	allTried := func(n int) func() bool {
		return func() bool {
			ds := deliveriesOf(t, eng, org)
			if len(ds) != n {
				return false
			}
			for _, d := range ds {
				if len(deliveryOutcomes(t, eng, org, d.ID)) == 0 {
					return false
				}
			}
			return true
		}
	}
	for i := range 3 {
		upload(i)
		waitFor(t, 10*time.Second, 5*time.Millisecond, "the delivery failed", allTried(i+1))
	}
	upload(3)
	waitFor(t, 10*time.Second, 5*time.Millisecond, "the 4th delivery met the open circuit", allTried(4))
	require.Len(t, rc.requests(), 3, "the 4th delivery was not sent")
	var skipped *svctype.DeliveryAttempt
	for _, d := range deliveriesOf(t, eng, org) {
		doc, err := eng.GetDelivery(context.Background(), org, d.ID)
		require.NoError(t, err)
		for i, a := range doc.AttemptList {
			if a.Outcome == "skipped" {
				skipped = &doc.AttemptList[i]
			}
		}
	}
	require.NotNil(t, skipped)
	require.Equal(t, t0.Add(5*time.Minute), *skipped.NextAttemptAt, "skipped until the circuit may let one through")
	// A delivery's counts add up to its attempt records: the requests sent and the skips.
	for _, d := range deliveriesOf(t, eng, org) {
		doc, err := eng.GetDelivery(context.Background(), org, d.ID)
		require.NoError(t, err)
		require.Equal(t, len(doc.AttemptList), doc.Attempts+doc.Skipped, "delivery %s: %+v", d.ID, doc.AttemptList)
	}
	// A registration of the same address shows the open circuit, though none of its
	// deliveries has failed (it has none): consecutive_failures counts those.
	w, err := eng.CreateWebhook(context.Background(), org, engine.WebhookInput{Event: "workflow.completed", URL: rc.URL})
	require.NoError(t, err)
	shown, err := eng.GetWebhook(context.Background(), org, w.ID)
	require.NoError(t, err)
	require.Equal(t, 0, shown.ConsecutiveFailures)
	require.Equal(t, &svctype.WebhookCircuit{State: "open", Failures: 3, OpenUntil: ptrTo(t0.Add(5 * time.Minute))}, shown.Circuit)
	listed, err := eng.ListWebhooks(context.Background(), org, svctype.ListOptions{})
	require.NoError(t, err)
	require.Len(t, listed.Items, 1)
	require.Equal(t, shown.Circuit, listed.Items[0].Circuit)

	// 4 minutes later: still open. The retries due by then meet it: each is skipped (until
	// 5 minutes), none is sent.
	clock.Set(t0.Add(4 * time.Minute))
	waitFor(t, 10*time.Second, 5*time.Millisecond, "every retry due at 4 minutes to be tried", func() bool {
		for _, d := range deliveriesOf(t, eng, org) {
			if d.NextAttemptAt == nil || !d.NextAttemptAt.After(clock.Now()) {
				return false
			}
		}
		return true
	})
	require.Len(t, rc.requests(), 3)
	for _, d := range deliveriesOf(t, eng, org) {
		require.Equal(t, t0.Add(5*time.Minute), d.NextAttemptAt.UTC(), "held until the circuit may let one through")
	}

	// 5 minutes: one probe; it succeeds and the circuit closes, the held deliveries follow.
	mu.Lock()
	healthy = true
	mu.Unlock()
	// A delivery claimed while the probe is in flight is skipped until the probe's window
	// ends: whenever nothing is due (and so nothing in flight, whose lease a jump could
	// lapse), the clock moves on to the next attempt.
	clock.Set(t0.Add(5*time.Minute + time.Second))
	waitFor(t, 10*time.Second, 20*time.Millisecond, "every delivery succeeds", func() bool {
		var next time.Time
		for _, d := range deliveriesOf(t, eng, org) {
			if d.Status == svctype.DeliverySucceeded {
				continue
			}
			if d.NextAttemptAt == nil || !d.NextAttemptAt.After(clock.Now()) {
				return false // due, or in flight
			}
			if next.IsZero() || d.NextAttemptAt.Before(next) {
				next = *d.NextAttemptAt
			}
		}
		if next.IsZero() {
			return true
		}
		clock.Set(next)
		return false
	})
	require.Len(t, rc.requests(), 3+4, "each delivery sent once more; no skipped one lost")

	// What /metrics says of it.
	got := scrape(t, reg)
	require.Equal(t, 4.0, got[`svcflow_webhook_attempts_total{outcome="succeeded"}`])
	require.GreaterOrEqual(t, got[`svcflow_webhook_attempts_total{outcome="retry"}`], 3.0)
	require.GreaterOrEqual(t, got[`svcflow_webhook_attempts_total{outcome="skipped"}`], 1.0)
	require.Equal(t, 1.0, got[`svcflow_webhook_circuit_transitions_total{state="open"}`])
	require.Equal(t, 1.0, got[`svcflow_webhook_circuit_transitions_total{state="half_open"}`])
	require.Equal(t, 1.0, got[`svcflow_webhook_circuit_transitions_total{state="closed"}`])
}

// scrape reads reg's /metrics as a client would: each series' value by its name and labels.
func scrape(t *testing.T, reg *metrics.Registry) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// Deliveries are jobs: a worker stopped in the middle of retries leaves them to the next
// one, which sends the same delivery ids and bytes.
func TestDeliveriesSurviveAWorkerRestart(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dsn := sharedDSN(t, d)
			first := deliveryEngine(t, "", engine.Config{Store: openStore(t, dsn)})
			var mu sync.Mutex
			up := false
			rc := newReceiver(t, func(int, http.ResponseWriter, *received) int {
				mu.Lock()
				defer mu.Unlock()
				if up {
					return http.StatusOK
				}
				return http.StatusBadGateway
			})
			// Each org its own target address, so no circuit opens in this test.
			wfs := map[string]string{}
			for i := range 2 {
				o := fmt.Sprintf("org-%d", i)
				setCatchAll(t, first, o, fmt.Sprintf("%s/%s", rc.URL, o))
				w, err := first.CreateWorkflow(context.Background(), o, engine.WorkflowInput{Name: "empty", Definition: json.RawMessage(`{"actions": []}`)})
				require.NoError(t, err)
				wfs[o] = w.ID
				_, err = first.Execute(context.Background(), o, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
				require.NoError(t, err)
			}
			stop := startWorker(t, first, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
			waitFor(t, 10*time.Second, 10*time.Millisecond, "every delivery failed once", func() bool { return len(rc.requests()) >= 4 })
			require.NoError(t, stop())

			mu.Lock()
			up = true
			mu.Unlock()
			// Another engine (the keyring of the first: the catch-all is org config).
			second := newEngine(t, engine.Config{Store: openStore(t, dsn), Keyring: first.Keyring(), AllowPrivateTargets: true})
			startWorker(t, second, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
			waitFor(t, 15*time.Second, 20*time.Millisecond, "every delivery succeeds after the restart", func() bool {
				for o := range wfs {
					ds := deliveriesOf(t, second, o)
					if len(ds) != 2 {
						return false
					}
					for _, dl := range ds {
						if dl.Status != svctype.DeliverySucceeded {
							return false
						}
					}
				}
				return true
			})
			perID := map[string][]string{}
			for _, r := range rc.requests() {
				perID[r.decoded.DeliveryID] = append(perID[r.decoded.DeliveryID], string(r.body))
			}
			require.Len(t, perID, 4)
			for id, bodies := range perID {
				require.GreaterOrEqual(t, len(bodies), 2, id)
				for _, b := range bodies[1:] {
					require.Equal(t, bodies[0], b, "the same bytes after the restart")
				}
			}
		})
	}
}

// A receiver that answers 200 with a huge or garbage body: read up to 64 KiB and dropped,
// the attempt recorded as succeeded.
func TestHugeAnswerIsReadUpTo64KiB(t *testing.T) {
	t.Parallel()
	eng := deliveryEngine(t, "sqlite", engine.Config{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *received) int {
		w.WriteHeader(http.StatusOK)
		chunk := strings.Repeat("\x00garbage{", 1<<10)
		for range 1024 { // ~9 MiB, more than any reader should take
			if _, err := io.WriteString(w, chunk); err != nil {
				break
			}
		}
		return 0
	})
	setCatchAll(t, eng, org, rc.URL)
	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	execute(t, eng, wf, json.RawMessage(`{}`))
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	waitFor(t, 10*time.Second, 20*time.Millisecond, "both deliveries end", func() bool {
		ds := deliveriesOf(t, eng, org)
		return len(ds) == 2 && ds[0].Status != svctype.DeliveryPending && ds[1].Status != svctype.DeliveryPending
	})
	for _, d := range deliveriesOf(t, eng, org) {
		require.Equal(t, []string{"200 succeeded"}, deliveryOutcomes(t, eng, org, d.ID))
	}
}

// A registered target receives only its event, signed: X-Svc-Signature checked with an
// independent implementation (go-github's webhook validation, the same sha256= scheme), the
// timestamped signature with events.Verify; auto_payload merged in; a document event's
// filter applied.
func TestRegisteredWebhookDeliveriesAreSigned(t *testing.T) {
	t.Parallel()
	eng := deliveryEngine(t, "sqlite", engine.Config{})
	ctx := context.Background()
	rc := newReceiver(t, nil)
	const secret = "whsec-test-5a1f9c"
	_, err := eng.CreateWebhook(ctx, org, engine.WebhookInput{Event: "workflow.completed", URL: rc.URL + "/runs",
		Secret: secret, AutoPayload: map[string]any{"source": "ledger-sync", "run_id": "not-this-one"}})
	require.NoError(t, err)
	_, err = eng.CreateWebhook(ctx, org, engine.WebhookInput{Event: "document.uploaded", URL: rc.URL + "/docs",
		Filter: &svctype.WebhookFilter{Tags: []string{"invoices"}}})
	require.NoError(t, err)

	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	run := execute(t, eng, wf, json.RawMessage(`{}`))
	for _, tags := range [][]string{{"invoices", "q3"}, {"receipts"}} {
		_, err := eng.UploadDocument(ctx, org, engine.DocumentUpload{Name: "d.csv", Tags: tags, Content: []byte("a\n1\n")})
		require.NoError(t, err)
	}
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	// Every delivery is a job made with its event: once no job is left, nothing more comes.
	waitFor(t, 10*time.Second, 10*time.Millisecond, "every job to be done", func() bool { return countJobs(t, eng) == 0 })
	got := rc.requests()
	require.Len(t, got, 2, "only the registered events, and only the tagged document")
	byEvent := map[string]received{}
	for _, r := range got {
		byEvent[r.decoded.Event] = r
	}
	completed := byEvent["workflow_run_completed"]
	body, err := github.ValidatePayloadFromBody("application/json", bytes.NewReader(completed.body),
		completed.header.Get("X-Svc-Signature"), []byte(secret))
	require.NoError(t, err, "go-github accepts the signature")
	require.Equal(t, completed.body, body)
	require.NoError(t, events.Verify([]byte(secret), completed.header, completed.body, time.Now(), 0))
	_, err = github.ValidatePayloadFromBody("application/json", bytes.NewReader(append([]byte(" "), completed.body...)),
		completed.header.Get("X-Svc-Signature"), []byte(secret))
	require.Error(t, err, "a changed body fails")
	var p map[string]any
	require.NoError(t, json.Unmarshal(completed.decoded.Payload, &p))
	require.Equal(t, "ledger-sync", p["source"], "auto_payload merged")
	require.Equal(t, run, p["run_id"], "the event's own fields win")

	doc := byEvent["document.uploaded"]
	require.Empty(t, doc.header.Get("X-Svc-Signature"), "a registration without a secret is unsigned")
	require.Contains(t, string(doc.decoded.Payload), `"document_id"`)
}

// Without --allow-private-targets a delivery to a loopback address is refused when the
// connection is made (the catch-all is org config, not checked at registration): the
// attempt fails with target_not_allowed, is not retried, and nothing reaches the receiver.
func TestDeliveryToAPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	key, err := secrets.GenerateKey()
	require.NoError(t, err)
	kr, err := secrets.NewKeyring(key)
	require.NoError(t, err)
	eng := newEngine(t, engine.Config{Store: openStore(t, sharedDSN(t, "sqlite")), Keyring: kr})
	rc := newReceiver(t, nil)
	setCatchAll(t, eng, org, rc.URL)
	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	execute(t, eng, wf, json.RawMessage(`{}`))
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	waitFor(t, 10*time.Second, 20*time.Millisecond, "both deliveries fail", func() bool {
		ds := deliveriesOf(t, eng, org)
		return len(ds) == 2 && ds[0].Status == svctype.DeliveryFailed && ds[1].Status == svctype.DeliveryFailed
	})
	for _, d := range deliveriesOf(t, eng, org) {
		doc, err := eng.GetDelivery(context.Background(), org, d.ID)
		require.NoError(t, err)
		require.Len(t, doc.AttemptList, 1)
		require.Contains(t, doc.AttemptList[0].Error, "target_not_allowed")
	}
	require.Empty(t, rc.requests())
}

// POST /deliveries/{id}/redeliver (Engine.Redeliver) sends an ended delivery again: the same
// id and bytes, a new round of retries; a pending one is a conflict.
func TestRedeliver(t *testing.T) {
	t.Parallel()
	eng := deliveryEngine(t, "sqlite", engine.Config{})
	var mu sync.Mutex
	status := http.StatusGone
	rc := newReceiver(t, func(int, http.ResponseWriter, *received) int { mu.Lock(); defer mu.Unlock(); return status })
	ctx := context.Background()
	_, err := eng.CreateWebhook(ctx, org, engine.WebhookInput{Event: "workflow.completed", URL: rc.URL})
	require.NoError(t, err)
	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	execute(t, eng, wf, json.RawMessage(`{}`))
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	var d svctype.Delivery
	waitFor(t, 10*time.Second, 10*time.Millisecond, "the delivery fails", func() bool {
		ds := deliveriesOf(t, eng, org)
		if len(ds) == 1 {
			d = ds[0]
		}
		return len(ds) == 1 && ds[0].Status == svctype.DeliveryFailed
	})
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	again, err := eng.Redeliver(ctx, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.DeliveryPending, again.Status)
	// Pending, it is a conflict; but the worker may have sent it already, and a delivery
	// that has ended may be sent again.
	want := []string{"410 failed", "200 succeeded"}
	if _, err = eng.Redeliver(ctx, org, d.ID); err == nil {
		want = append(want, "200 succeeded")
	} else {
		require.ErrorIs(t, err, engine.ErrConflict)
	}
	waitFor(t, 10*time.Second, 10*time.Millisecond, "the redelivery succeeds", func() bool {
		doc, err := eng.GetDelivery(ctx, org, d.ID)
		require.NoError(t, err)
		return doc.Status == svctype.DeliverySucceeded && len(doc.AttemptList) == len(want)
	})
	require.Equal(t, want, deliveryOutcomes(t, eng, org, d.ID))
	got := rc.requests()
	require.Len(t, got, len(want))
	for _, r := range got[1:] {
		require.Equal(t, string(got[0].body), string(r.body), "the same bytes each time")
	}
	_, err = eng.Redeliver(ctx, "another-org", d.ID)
	require.ErrorIs(t, err, engine.ErrNotFound)
}

// A target that does not answer within the delivery timeout (10 s; shortened here) is a
// failed attempt that is retried. The timeout is wall time: at 300 ms a CI run under load
// (-race, four packages at once) saw the second attempt's immediate 200 arrive after 310 ms,
// so the test gives 1 s and accepts more timed-out attempts before the success.
func TestHangingTargetTimesOutAndIsRetried(t *testing.T) {
	t.Parallel()
	eng := deliveryEngine(t, "sqlite", engine.Config{DeliveryTimeout: time.Second})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, _ *received) int {
		if n == 1 {
			select { // hang past the timeout
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}
		return http.StatusOK
	})
	ctx := context.Background()
	_, err := eng.CreateWebhook(ctx, org, engine.WebhookInput{Event: "workflow.started", URL: rc.URL})
	require.NoError(t, err)
	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	execute(t, eng, wf, json.RawMessage(`{}`))
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	waitFor(t, 10*time.Second, 20*time.Millisecond, "the retry succeeds", func() bool {
		ds := deliveriesOf(t, eng, org)
		return len(ds) == 1 && ds[0].Status == svctype.DeliverySucceeded
	})
	d := deliveriesOf(t, eng, org)[0]
	doc, err := eng.GetDelivery(ctx, org, d.ID)
	require.NoError(t, err)
	attempts := doc.AttemptList
	require.GreaterOrEqual(t, len(attempts), 2)
	for _, a := range attempts[:len(attempts)-1] {
		require.Equal(t, "retry", a.Outcome)
		require.Equal(t, 0, a.StatusCode)
		require.Contains(t, a.Error, "no answer within 1s")
		require.GreaterOrEqual(t, a.LatencyMS, int64(1000))
	}
	require.Equal(t, "succeeded", attempts[len(attempts)-1].Outcome)
	once.Do(func() { close(release) })
}

func ptrTo[T any](v T) *T { return &v }
