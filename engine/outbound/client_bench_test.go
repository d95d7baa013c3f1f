package outbound_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/outbound"
)

// BenchmarkRetryWaits measures how long the calls of TestRetryAfterSeconds and TestTimeout
// take, which those tests assert only the attempts of: a 429 with Retry-After: 1 then a 200
// (about 1 s: the backoff alone is 1-5 ms), and a server that never answers, one attempt
// and two of 100 ms each.
func BenchmarkRetryWaits(b *testing.B) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	for _, bc := range []struct {
		name     string
		handlers []http.HandlerFunc
		req      outbound.Request
		retries  int
		status   int
	}{
		{"retry-after-1s", []http.HandlerFunc{func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}, status(200, "ok")}, outbound.Request{}, 0, 200},
		{"timeout-100ms-once", []http.HandlerFunc{hang}, outbound.Request{Timeout: 100 * time.Millisecond}, -1, 0},
		{"timeout-100ms-twice", []http.HandlerFunc{hang}, outbound.Request{Timeout: 100 * time.Millisecond}, 1, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				s := newServer(b, bc.handlers...)
				req := bc.req
				req.URL = s.URL
				start := time.Now()
				resp, err := local(func(o *outbound.Options) { o.Retries = bc.retries }).Do(context.Background(), req)
				took += time.Since(start)
				if bc.status == 0 {
					require.ErrorIs(b, err, outbound.ErrTimeout)
					continue
				}
				require.NoError(b, err)
				require.Equal(b, bc.status, resp.Status)
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "call-ms")
		})
	}
}
