package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// BenchmarkGatewayOverhead is the gateway's own cost of a runtime call: the key from the
// cache, the token bucket, the header rewrite and the hand-off to the runtime, here a
// handler that answers at once. Reports the p50 and p99 of single requests.
func BenchmarkGatewayOverhead(b *testing.B) {
	st := store.OpenTest(b, "sqlite")
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := gateway.New(gateway.Options{Store: gwstore.OpenTest(b, st), Runtime: noop, Rate: 1e9, Burst: 1 << 30}).Handler()
	do := func(method, path, token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	var acct map[string]any
	_ = json.Unmarshal(do("POST", "/gateway/signup", "", `{"email": "b@example.com", "name": "B"}`).Body.Bytes(), &acct)
	mgmt := acct["management_token"].(string)
	do("POST", "/gateway/orgs", mgmt, `{"id": "o", "name": "O"}`)
	var key map[string]any
	_ = json.Unmarshal(do("POST", "/gateway/orgs/o/keys", mgmt, `{"kind": "runtime"}`).Body.Bytes(), &key)
	live := key["secret"].(string)
	if w := do("GET", "/workflows", live, ""); w.Code != http.StatusNoContent {
		b.Fatalf("%d %s", w.Code, w.Body)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		began := time.Now()
		req := httptest.NewRequest("GET", "/workflows", nil)
		req.Header.Set("Authorization", "Bearer "+live)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		lat = append(lat, time.Since(began))
		if w.Code != http.StatusNoContent {
			b.Fatal(w.Code)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkGatewayLoopback drives a real gateway over loopback HTTP with 64 concurrent
// keep-alive clients for b.N requests in all, each an authenticated call of a runtime route
// answered at once: requests a second, and each request's p50 and p99 as the clients saw it.
func BenchmarkGatewayLoopback(b *testing.B) {
	st := store.OpenTest(b, "sqlite")
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(gateway.New(gateway.Options{Store: gwstore.OpenTest(b, st), Runtime: noop, Rate: 1e9, Burst: 1 << 30}).Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	post := func(path, token, body string) map[string]any {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	mgmt := post("/gateway/signup", "", `{"email": "b@example.com", "name": "B"}`)["management_token"].(string)
	post("/gateway/orgs", mgmt, `{"id": "o", "name": "O"}`)
	live := post("/gateway/orgs/o/keys", mgmt, `{"kind": "runtime"}`)["secret"].(string)

	const clients = 64
	per := max(1, b.N/clients)
	lats := make([][]time.Duration, clients)
	b.ResetTimer()
	began := time.Now()
	done := make(chan int, clients)
	for c := range clients {
		go func() {
			for range per {
				t := time.Now()
				req, _ := http.NewRequest("GET", srv.URL+"/workflows", nil)
				req.Header.Set("Authorization", "Bearer "+live)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_ = resp.Body.Close()
				lats[c] = append(lats[c], time.Since(t))
			}
			done <- c
		}()
	}
	for range clients {
		<-done
	}
	elapsed := time.Since(began)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
