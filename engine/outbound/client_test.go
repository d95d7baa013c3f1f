package outbound_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/outbound"
)

// server is an httptest server that records what it was sent and answers with the
// handlers in turn (the last one again once they run out).
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	method string
	header http.Header
	body   string
}

func newServer(t *testing.T, handlers ...http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, recorded{method: r.Method, header: r.Header.Clone(), body: string(body)})
		s.mu.Unlock()
		handlers[min(n, len(handlers)-1)](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *server) got(i int) recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func jsonAnswer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// local is a client that may call httptest servers, with waits short enough for tests.
func local(opts ...func(*outbound.Options)) *outbound.Client {
	o := outbound.Options{AllowPrivateTargets: true, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	return outbound.NewClient(o)
}

func TestDoSuccess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    any
	}{
		{"json", jsonAnswer(200, `{"id": 42, "tags": ["a"]}`), map[string]any{"id": 42.0, "tags": []any{"a"}}},
		{"problem json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.api+json; charset=utf-8")
			_, _ = io.WriteString(w, `[1, 2]`)
		}, []any{1.0, 2.0}},
		{"text", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, `{"looks": "like json"}`)
		}, `{"looks": "like json"}`},
		{"undeclared json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = nil // no sniffing: no Content-Type at all
			_, _ = io.WriteString(w, `{"ok": true}`)
		}, map[string]any{"ok": true}},
		{"json that is not", jsonAnswer(200, `{"cut`), `{"cut`},
		{"empty", status(204, ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tc.handler)
			resp, err := local().Do(context.Background(), outbound.Request{URL: s.URL + "/x"})
			require.NoError(t, err)
			require.Equal(t, tc.want, resp.Body)
			require.Len(t, resp.Attempts, 1)
			require.Equal(t, resp.Status, resp.Attempts[0].Status)
			require.Equal(t, http.MethodGet, s.got(0).method)
		})
	}
}

func TestDoSendsBodyAndHeaders(t *testing.T) {
	t.Parallel()
	s := newServer(t, jsonAnswer(201, `{"id": 1}`))
	resp, err := local().Do(context.Background(), outbound.Request{
		Method:         "post",
		URL:            s.URL,
		Headers:        map[string]string{"X-Api-Key": "k-123456"},
		Body:           map[string]any{"name": "Ada"},
		IdempotencyKey: "run-1:2:0",
	})
	require.NoError(t, err)
	require.Equal(t, 201, resp.Status)
	got := s.got(0)
	require.Equal(t, http.MethodPost, got.method)
	require.JSONEq(t, `{"name": "Ada"}`, got.body)
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, "k-123456", got.header.Get("X-Api-Key"))
	require.Equal(t, "run-1:2:0", got.header.Get("Idempotency-Key"))
	require.Equal(t, "svcflow", got.header.Get("User-Agent"))

	// Bytes and strings go as they are, with the caller's Content-Type.
	_, err = local().Do(context.Background(), outbound.Request{
		Method: "PUT", URL: s.URL, Body: "a,b\n1,2\n", Headers: map[string]string{"Content-Type": "text/csv"},
	})
	require.NoError(t, err)
	require.Equal(t, "a,b\n1,2\n", s.got(1).body)
	require.Equal(t, "text/csv", s.got(1).header.Get("Content-Type"))
}

func TestRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		method      string
		optIn       bool
		handlers    []http.HandlerFunc
		wantStatus  int
		wantErr     error
		wantAttempt []int
	}{
		{"GET 500 then 200", "GET", false, []http.HandlerFunc{status(500, "boom"), jsonAnswer(200, `{}`)}, 200, nil, []int{500, 200}},
		{"PUT 502 503 then 200", "PUT", false, []http.HandlerFunc{status(502, ""), status(503, ""), status(200, "")}, 200, nil, []int{502, 503, 200}},
		{"DELETE 429 then 204", "DELETE", false, []http.HandlerFunc{status(429, ""), status(204, "")}, 204, nil, []int{429, 204}},
		{"GET 500 until the cap", "GET", false, []http.HandlerFunc{status(500, "")}, 500, outbound.ErrStatus, []int{500, 500, 500, 500}},
		{"GET 501 not retried", "GET", false, []http.HandlerFunc{status(501, "")}, 501, outbound.ErrStatus, []int{501}},
		{"GET 404 not retried", "GET", false, []http.HandlerFunc{status(404, "")}, 404, outbound.ErrStatus, []int{404}},
		{"POST 500 not retried", "POST", false, []http.HandlerFunc{status(500, ""), status(200, "")}, 500, outbound.ErrStatus, []int{500}},
		{"PATCH 429 not retried", "PATCH", false, []http.HandlerFunc{status(429, ""), status(200, "")}, 429, outbound.ErrStatus, []int{429}},
		{"POST 500 retried when opted in", "POST", true, []http.HandlerFunc{status(500, ""), status(200, "")}, 200, nil, []int{500, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tc.handlers...)
			resp, err := local().Do(context.Background(), outbound.Request{
				Method: tc.method, URL: s.URL, Body: []byte("x"), RetryNonIdempotent: tc.optIn,
			})
			require.NotNil(t, resp)
			require.Equal(t, tc.wantStatus, resp.Status)
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
				var oe *outbound.Error
				require.ErrorAs(t, err, &oe)
				require.Equal(t, outbound.CodeHTTPStatus, oe.Code)
				require.Equal(t, tc.wantStatus, oe.Status)
				require.Len(t, oe.Attempts, len(tc.wantAttempt))
			}
			var statuses []int
			for _, a := range resp.Attempts {
				statuses = append(statuses, a.Status)
			}
			require.Equal(t, tc.wantAttempt, statuses)
			require.Equal(t, len(tc.wantAttempt), s.count())
			for i := range s.count() {
				require.Equal(t, "x", s.got(i).body, "the body is sent again on every attempt")
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}, status(200, "ok"))
	start := time.Now()
	resp, err := local().Do(context.Background(), outbound.Request{URL: s.URL})
	require.NoError(t, err)
	require.Equal(t, 200, resp.Status)
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the backoff is 1-5 ms: only Retry-After makes it wait a second")
	require.Equal(t, 2, s.count())
}

func TestRetryAfterTooLong(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	}, status(200, "ok"))
	start := time.Now()
	resp, err := local(func(o *outbound.Options) { o.MaxRetryAfter = 10 * time.Second }).Do(context.Background(), outbound.Request{URL: s.URL})
	require.Less(t, time.Since(start), 5*time.Second, "gives up at once: waits neither the 120 s asked nor the 10 s cap")
	require.ErrorIs(t, err, outbound.ErrStatus)
	require.Equal(t, 503, resp.Status)
	var oe *outbound.Error
	require.ErrorAs(t, err, &oe)
	require.Equal(t, 120*time.Second, oe.RetryAfter, "the caller may wait itself")
	require.Equal(t, 1, s.count())
}

func TestIdempotencyKeySameOnEveryAttempt(t *testing.T) {
	t.Parallel()
	s := newServer(t, status(503, ""), status(500, ""), status(200, ""))
	_, err := local().Do(context.Background(), outbound.Request{
		Method: "POST", URL: s.URL, Body: map[string]any{"a": 1}, IdempotencyKey: "run-7:3:0", RetryNonIdempotent: true,
	})
	require.NoError(t, err)
	require.Equal(t, 3, s.count())
	for i := range 3 {
		require.Equal(t, []string{"run-7:3:0"}, s.got(i).header.Values("Idempotency-Key"))
		require.JSONEq(t, `{"a": 1}`, s.got(i).body)
	}
}

// closedAddr is a 127.0.0.1 port nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestConnectionRefusedRetried(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	// A connection never made sent nothing, so even a POST is tried again.
	for _, method := range []string{"GET", "POST"} {
		resp, err := local(func(o *outbound.Options) { o.Retries = 2 }).Do(context.Background(), outbound.Request{Method: method, URL: "http://" + addr + "/"})
		require.Nil(t, resp)
		var oe *outbound.Error
		require.ErrorAs(t, err, &oe)
		require.Equal(t, outbound.CodeConnection, oe.Code)
		require.Len(t, oe.Attempts, 3, method)
		for _, a := range oe.Attempts {
			require.Contains(t, a.Error, "connection refused")
			require.Zero(t, a.Status)
		}
		require.Contains(t, err.Error(), "connection refused")
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	for _, tc := range []struct {
		retries  int
		attempts int
	}{{-1, 1}, {1, 2}} {
		start := time.Now()
		resp, err := local(func(o *outbound.Options) { o.Retries = tc.retries }).Do(context.Background(), outbound.Request{URL: s.URL, Timeout: 100 * time.Millisecond})
		elapsed := time.Since(start)
		require.Nil(t, resp)
		require.ErrorIs(t, err, outbound.ErrTimeout)
		require.Equal(t, outbound.CodeTimeout, outbound.ErrorCode(err))
		var oe *outbound.Error
		require.ErrorAs(t, err, &oe)
		require.Len(t, oe.Attempts, tc.attempts)
		require.Less(t, elapsed, time.Duration(tc.attempts)*100*time.Millisecond+time.Second)
		require.GreaterOrEqual(t, elapsed, time.Duration(tc.attempts)*100*time.Millisecond)
	}

	// The caller's context ends the call too, between attempts or in one.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := local().Do(ctx, outbound.Request{URL: s.URL})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, outbound.CodeTimeout, outbound.ErrorCode(err))
}

func TestBodyOverLimit(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", outbound.MaxBodyBytes+1)
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"content-length", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			_, _ = io.WriteString(w, big)
		}},
		{"chunked", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush() // no Content-Length: the limit is found by reading
			_, _ = io.WriteString(w, `["`+big[:len(big)-4]+`"]`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tc.handler)
			resp, err := local().Do(context.Background(), outbound.Request{URL: s.URL})
			require.Nil(t, resp)
			require.ErrorIs(t, err, outbound.ErrBodyTooLarge)
			require.Equal(t, outbound.CodeBodyTooLarge, outbound.ErrorCode(err))
			require.Contains(t, err.Error(), "10485760 bytes")
		})
	}

	// Exactly the limit is fine.
	s := newServer(t, status(200, big[:outbound.MaxBodyBytes]))
	resp, err := local().Do(context.Background(), outbound.Request{URL: s.URL})
	require.NoError(t, err)
	require.Len(t, resp.Body, outbound.MaxBodyBytes)
}

func TestRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere?token=abcdefgh", http.StatusFound)
	}, status(200, "followed"))
	resp, err := local().Do(context.Background(), outbound.Request{URL: s.URL})
	require.ErrorIs(t, err, outbound.ErrStatus)
	require.Equal(t, http.StatusFound, resp.Status)
	require.Equal(t, "/elsewhere?token=abcdefgh", resp.Headers.Get("Location"))
	require.Equal(t, 1, s.count())
}

func TestErrorsCarryNoSecrets(t *testing.T) {
	t.Parallel()
	// A server that echoes what it was sent, as some do in their error bodies.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, "bad credentials: %q %q %s", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.URL)
	})
	headers := map[string]string{"Authorization": "Bearer secret-token-1", "X-Api-Key": "secret-key-2"}
	check := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		msg := err.Error()
		for _, a := range errorsAttempts(err) {
			msg += " " + a.Error
		}
		require.NotContains(t, msg, "secret")
		require.NotContains(t, msg, "/path-secret")
	}

	_, err := local().Do(context.Background(), outbound.Request{
		URL: s.URL + "/path-secret?key=secret-query-3", Headers: headers, Body: "secret-body-4",
	})
	require.ErrorIs(t, err, outbound.ErrStatus)
	require.Contains(t, err.Error(), "status 401")
	require.Contains(t, err.Error(), "bad credentials: \"[redacted]\" \"[redacted]\"")
	check(t, err)

	u := strings.Replace(s.URL, "http://", "http://user:secret-password-5@", 1) + "/path-secret"
	_, err = local().Do(context.Background(), outbound.Request{URL: u, Headers: headers})
	check(t, err)

	_, err = local(func(o *outbound.Options) { o.Retries = -1 }).Do(context.Background(), outbound.Request{
		URL: "http://user:secret-password-5@" + closedAddr(t) + "/path-secret?key=secret-query-3", Headers: headers,
	})
	require.Equal(t, outbound.CodeConnection, outbound.ErrorCode(err))
	check(t, err)

	_, err = outbound.NewClient(outbound.Options{}).Do(context.Background(), outbound.Request{
		URL: "http://user:secret-password-5@127.0.0.1/path-secret?key=secret-query-3", Headers: headers,
	})
	require.ErrorIs(t, err, outbound.ErrTargetNotAllowed)
	check(t, err)

	_, err = local().Do(context.Background(), outbound.Request{URL: "http://h/%zz?key=secret-query-3"})
	require.ErrorIs(t, err, outbound.ErrInvalidRequest)
	check(t, err)
}

func errorsAttempts(err error) []outbound.Attempt {
	var oe *outbound.Error
	if errors.As(err, &oe) {
		return oe.Attempts
	}
	return nil
}

func TestGuardRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	s := newServer(t, status(200, "reached"))
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	require.NoError(t, err)
	guarded := outbound.NewClient(outbound.Options{RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond})

	for _, target := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://localhost:" + port + "/", // a name: refused at connect time, on the address it resolved to
		"http://[::1]:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://10.0.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"https://[fd00::1]/",
		"http://100.64.0.1/",
		"http://0.0.0.0:" + port + "/",
		"file:///etc/passwd",
		"gopher://127.0.0.1:" + port + "/",
	} {
		for _, method := range []string{"GET", "POST"} {
			resp, err := guarded.Do(context.Background(), outbound.Request{Method: method, URL: target, RetryNonIdempotent: true})
			require.Nil(t, resp, target)
			require.ErrorIs(t, err, outbound.ErrTargetNotAllowed, target)
			require.Equal(t, outbound.CodeTargetNotAllowed, outbound.ErrorCode(err), target)
			var te *outbound.TargetError
			require.ErrorAs(t, err, &te)
			require.NotEmpty(t, te.Reason)
			require.LessOrEqual(t, len(errorsAttempts(err)), 1, "a refused target is not retried: %s", target)
		}
	}
	require.Zero(t, s.count(), "nothing reached the server")

	// localhost names its host in the error, and the address it was refused at.
	_, err = guarded.Do(context.Background(), outbound.Request{URL: "http://localhost:" + port + "/"})
	require.ErrorContains(t, err, "localhost:"+port)
	require.ErrorContains(t, err, "loopback address")
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	c := local()
	for _, r := range []outbound.Request{
		{URL: "::"},
		{URL: "http:///nohost"},
		{Method: "GE T", URL: "http://example.invalid/"},
		{Method: "POST", URL: "http://example.invalid/", Body: map[string]any{"f": func() {}}},
	} {
		_, err := c.Do(context.Background(), r)
		require.ErrorIs(t, err, outbound.ErrInvalidRequest, r)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%3 == 0 {
			w.WriteHeader(503)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]int{"ok": 1})
	})
	c := local()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, err := c.Do(context.Background(), outbound.Request{URL: s.URL})
			if err != nil || resp.Status != 200 {
				t.Errorf("resp %v err %v", resp, err)
			}
		})
	}
	wg.Wait()
}
