package outbound

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a [redacted] b", excerpt([]byte("a\n  tok-123456\tb"), []string{"tok-123456"}))
	long := excerpt([]byte(string(make([]byte, 300))+"é"), nil)
	require.LessOrEqual(t, len(long), excerptLen+len("…"))
}
