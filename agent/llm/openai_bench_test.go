package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
)

// BenchmarkChatRetryWaits measures how long a call that is retried waits, which
// TestChatErrorsAndRetries asserts only the attempts of: a 429 with Retry-After: 1 then a
// 200 (about 1 s), a 500 then a 200 (the backoff: 0.5 s less up to 25 % jitter).
func BenchmarkChatRetryWaits(b *testing.B) {
	for _, bc := range []struct {
		name  string
		first reply
	}{
		{"retry-after-1s", respond(429, openaiError("Rate limit reached.", "requests", "rate_limit_exceeded"), "Retry-After", "1")},
		{"backoff-after-500", respond(500, openaiError("The server had an error.", "server_error", ""))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				p := newProvider(b, "/v1", bc.first, respond(200, textReply))
				c := p.client(b, llm.Options{})
				start := time.Now()
				_, err := c.Chat(context.Background(), agent.Request{Model: "m",
					Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
				took += time.Since(start)
				require.NoError(b, err)
				require.Len(b, p.requests(), 2)
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "call-ms")
		})
	}
}
