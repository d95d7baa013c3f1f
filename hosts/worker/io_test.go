package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

// getKind is a step kind whose IO half GETs properties.url with the call's idempotency
// key and answers the decoded JSON body.
var getKind = svctype.StepKind{IO: func(ctx context.Context, call *svctype.StepCall) (any, error) {
	url, _ := call.Properties["url"].(string)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Idempotency-Key", call.IdempotencyKey)
	req.Header.Set("X-Org", call.OrgID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("receiver answered %d: %s", resp.StatusCode, body)
	}
	var out any
	return out, json.Unmarshal(body, &out)
}}

func ioEngine(t testing.TB, d string, cfg engine.Config) *engine.Engine {
	t.Helper()
	env := engine.NewEnvironment()
	env.RegisterStepKind("get", getKind)
	cfg.Store, cfg.Env = openStore(t, sharedDSN(t, d)), env
	return newEngine(t, cfg)
}

// A receiver that answers only once a fast run elsewhere has committed: with the call made
// inside a transaction the SQLite writer would be held and the fast run could not commit;
// with the call holding its step slot, the one slot of this worker would keep the fast run
// from being claimed. Either way the receiver would time out.
func TestCallsHoldNeitherATransactionNorASlot(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			eng := ioEngine(t, d, engine.Config{})
			fastWF := ledgerSetup(t, eng)
			fastRun := make(chan string, 1) // the fast run's id, once it is started
			received := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				received <- struct{}{}
				if fastRunEnds(r.Context(), eng, fastRun) {
					_, _ = fmt.Fprint(w, `{"fast_run_finished_first": true}`)
					return
				}
				http.Error(w, "the fast run did not finish while this call was in flight", http.StatusGatewayTimeout)
			}))
			defer srv.Close()
			slowWF := createWorkflow(t, eng, "slow", fmt.Sprintf(`{"actions": [
				{"type": "get", "properties": {"url": %q}, "outputKey": "answer"}]}`, srv.URL))
			startWorker(t, eng, worker.Options{Concurrency: 1, Poll: 10 * time.Millisecond})

			slow := execute(t, eng, slowWF, json.RawMessage(`{}`))
			<-received
			fastRun <- execute(t, eng, fastWF, ledgerInput(1))
			waitFor(t, 15*time.Second, 10*time.Millisecond, "the slow run ends", func() bool {
				run, err := eng.GetRun(context.Background(), org, slow)
				require.NoError(t, err)
				return run.Status.Terminal()
			})
			doc, err := eng.RunStatus(context.Background(), org, slow)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Equal(t, map[string]any{"fast_run_finished_first": true}, doc.Context["answer"])
		})
	}
}

// fastRunEnds waits (up to 10 s) for the id of the fast run of the tests above, then for
// that run to complete, and says whether it did.
func fastRunEnds(ctx context.Context, eng *engine.Engine, fastRun <-chan string) bool {
	var id string
	select {
	case id = <-fastRun:
	case <-time.After(10 * time.Second):
		return false
	}
	status, err := eng.WaitRun(ctx, org, id, svctype.RunRunning, 10*time.Second)
	return err == nil && status == svctype.RunCompleted
}

// One organization's slow calls take at most IOPerOrg places of the I/O pool: another
// organization's call goes out while they are in flight.
func TestIOPoolCapsEachOrganization(t *testing.T) {
	t.Parallel()
	eng := ioEngine(t, "sqlite", engine.Config{IOConcurrency: 8, IOPerOrg: 2})
	release := make(chan struct{})
	var mu sync.Mutex
	inFlight, maxA := map[string]int{}, 0
	bArrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("X-Org")
		mu.Lock()
		inFlight[o]++
		if o == "org-a" {
			maxA = max(maxA, inFlight[o])
		}
		mu.Unlock()
		if o == "org-b" {
			close(bArrived)
		} else {
			<-release
		}
		mu.Lock()
		inFlight[o]--
		mu.Unlock()
		_, _ = fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseAll() // before srv.Close, which waits for the handlers
	def := json.RawMessage(fmt.Sprintf(`{"actions": [{"type": "get", "properties": {"url": %q}}]}`, srv.URL))
	ctx := context.Background()
	var runs []string
	for _, o := range []string{"org-a", "org-b"} {
		w, err := eng.CreateWorkflow(ctx, o, engine.WorkflowInput{Name: "call", Definition: def})
		require.NoError(t, err)
		n := 6
		if o == "org-b" {
			n = 1
		}
		for range n {
			run, err := eng.Execute(ctx, o, w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{})
			require.NoError(t, err)
			runs = append(runs, o+"/"+run.ID)
		}
	}
	startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
	select {
	case <-bArrived:
	case <-time.After(10 * time.Second):
		t.Fatal("org-b's call did not go out while org-a's calls were in flight")
	}
	// Every org-a call reaches the pool (a job waiting for a place gives its step slot back):
	// two take org-a's places, the four others wait, and org-b's has returned.
	waitFor(t, 5*time.Second, 5*time.Millisecond, "org-a's six calls at the pool", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight["org-a"] == 2 && eng.InFlight() == 2 && eng.IOWaiting() == 4
	})
	require.Equal(t, 2, eng.InFlight())
	releaseAll()
	waitFor(t, 10*time.Second, 10*time.Millisecond, "every run ends", func() bool { return countJobs(t, eng) == 0 })
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, maxA, "org-a never had more than IOPerOrg calls in flight")
}
