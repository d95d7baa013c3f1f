package outbound

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"0":                              0,
		"7":                              7 * time.Second,
		" 120 ":                          2 * time.Minute,
		"99999999999999999999":           24 * time.Hour,
		"Mon, 23 Nov 2026 10:00:30 GMT":  30 * time.Second, // IMF-fixdate
		"Monday, 23-Nov-26 10:01:00 GMT": time.Minute,      // RFC 850
		"Mon Nov 23 10:00:05 2026":       5 * time.Second,  // asctime
		"Mon, 23 Nov 2026 09:00:00 GMT":  0,                // in the past
	} {
		got, ok := retryAfter(http.Header{"Retry-After": {v}}, now)
		require.True(t, ok, v)
		require.Equal(t, want, got, v)
	}
	for _, v := range []string{"", "-1", "soon", "1.5"} {
		_, ok := retryAfter(http.Header{"Retry-After": {v}}, now)
		require.False(t, ok, v)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	c := NewClient(Options{})
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		for range 20 {
			got := c.backoff(100, 1000, n, nil)
			require.LessOrEqual(t, got, want)
			require.GreaterOrEqual(t, got, want/2)
		}
	}
	got := c.backoff(100, 1000, 1000, nil) // no overflow past the cap
	require.True(t, got >= 500 && got <= 1000, got)
	asked := &http.Response{Header: http.Header{"Retry-After": {"1"}}}
	require.Equal(t, time.Second, c.backoff(time.Millisecond, 5*time.Millisecond, 0, asked), "Retry-After, not the backoff")
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a [redacted] b", excerpt([]byte("a\n  tok-123456\tb"), []string{"tok-123456"}))
	long := excerpt([]byte(string(make([]byte, 300))+"é"), nil)
	require.LessOrEqual(t, len(long), excerptLen+len("…"))
}
