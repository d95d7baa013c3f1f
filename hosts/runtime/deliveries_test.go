package runtime_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testclock"
	"github.com/svcflow/svcflow/internal/testlog"
)

// deliveryDoc is GET /deliveries/{deliveryId} as a client reads it.
type deliveryDoc struct {
	ID          string `json:"delivery_id"`
	Status      string `json:"status"`
	Attempts    int    `json:"attempts"`
	AttemptList []struct {
		N          int    `json:"n"`
		Outcome    string `json:"outcome"`
		StatusCode int    `json:"status_code"`
	} `json:"attempt_list"`
}

// A redelivered delivery's attempts go on counting the requests sent (issue 31: it fell
// back to the new round's count, attempts 1 beside two entries in attempt_list), while the
// new round still has its own 5 retries.
func TestRedeliveryCountsEveryRequestSent(t *testing.T) {
	t.Parallel()
	// The engine's and the store's: moving it makes a retry due.
	clock := testclock.New(time.Now().UTC().Truncate(time.Second))
	st := store.OpenTest(t, "sqlite", store.WithNow(clock.Now))
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t),
		Now: clock.Now, AllowPrivateTargets: true})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	srv := runtime.New(eng, runtime.Options{Logger: testlog.Quiet(), Version: "test", IdentityKey: testIdentityKey})
	b := &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API()}

	// The receiver refuses the first request (410: failed at once); after the redelivery it
	// answers 500 five times (five retries) and then takes it.
	answers := []int{http.StatusGone, 500, 500, 500, 500, 500, http.StatusOK}
	var mu sync.Mutex
	var got int
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		status := http.StatusTeapot // more requests than scripted
		if got < len(answers) {
			status = answers[got]
		}
		got++
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	sent := func() int { mu.Lock(); defer mu.Unlock(); return got }

	hook := ok[webhookDoc](t, b.do(t, http.MethodPost, "/webhooks", orgA, map[string]any{"event": "workflow.completed", "url": rc.URL}), http.StatusCreated)
	wf := b.createWorkflow(t, orgA, "redelivered")
	b.execute(t, orgA, wf.ID, map[string]any{"email": "a@x", "name": "A"})
	b.work(t)
	list := ok[struct {
		Items []deliveryDoc `json:"items"`
	}](t, b.do(t, http.MethodGet, "/webhooks/"+hook.ID+"/deliveries", orgA, nil), http.StatusOK)
	require.Len(t, list.Items, 1)
	path := "/deliveries/" + list.Items[0].ID
	d := ok[deliveryDoc](t, b.do(t, http.MethodGet, path, orgA, nil), http.StatusOK)
	require.Equal(t, "failed", d.Status)
	require.Equal(t, 1, d.Attempts)

	ok[deliveryDoc](t, b.do(t, http.MethodPost, path+"/redeliver", orgA, nil), http.StatusAccepted)
	// Each retry is made due at once, the clock past any backoff and any open circuit
	// (three failures in a row open it for 5 minutes).
	for i := 0; i < 20 && d.Status != "succeeded"; i++ {
		b.work(t)
		d = ok[deliveryDoc](t, b.do(t, http.MethodGet, path, orgA, nil), http.StatusOK)
		clock.Advance(6 * time.Minute)
	}
	require.Equal(t, "succeeded", d.Status, "the new round retries 5 times: %+v", d.AttemptList)
	var outcomes []string
	for _, a := range d.AttemptList {
		if a.Outcome != "skipped" {
			outcomes = append(outcomes, http.StatusText(a.StatusCode)+" "+a.Outcome)
		}
	}
	require.Equal(t, []string{"Gone failed", "Internal Server Error retry", "Internal Server Error retry",
		"Internal Server Error retry", "Internal Server Error retry", "Internal Server Error retry", "OK succeeded"}, outcomes)
	require.Equal(t, 7, sent())
	require.Equal(t, 7, d.Attempts, "attempts counts every request sent, both rounds'")
	list = ok[struct {
		Items []deliveryDoc `json:"items"`
	}](t, b.do(t, http.MethodGet, "/webhooks/"+hook.ID+"/deliveries", orgA, nil), http.StatusOK)
	require.Equal(t, 7, list.Items[0].Attempts)
}
