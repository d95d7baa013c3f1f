package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/hosts/worker"
	"github.com/svcflow/svcflow/internal/testlog"
)

// TestCatchAllAddressIsNeverQuoted: an org config webhook_url that is no usable URL (the
// text before its first ':' would be read as a scheme), names another scheme's host, or
// names a host that does not resolve fails its deliveries with errors that name the key
// and quote nothing of the value.
func TestCatchAllAddressIsNeverQuoted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value  string
		hidden []string
		named  bool
	}{
		{"secrettoken123:xyz", []string{"secrettoken123", "xyz"}, true},
		{"ftp://internal-host.example/x", []string{"internal-host", "ftp"}, true},
		{"http://secret-hook-host.invalid/x", []string{"secret-hook-host"}, false},
	}
	for _, c := range cases {
		for _, h := range c.hidden {
			if len(h) >= 8 {
				testlog.Secret(h)
			}
		}
	}
	eng := deliveryEngine(t, "sqlite", engine.Config{})
	wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
	execute(t, eng, wf, json.RawMessage(`{}`))
	seen := 0
	for i, c := range cases {
		if i > 0 { // one value at a time: a delivery reads the catch-all when it is sent
			execute(t, eng, wf, json.RawMessage(`{}`))
		}
		setCatchAll(t, eng, org, c.value)
		stop := startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
		var docs []any
		waitFor(t, 10*time.Second, 20*time.Millisecond, "the run's deliveries each have an attempt", func() bool {
			docs = docs[:0]
			for _, d := range deliveriesOf(t, eng, org) {
				doc, err := eng.GetDelivery(context.Background(), org, d.ID)
				require.NoError(t, err)
				if len(doc.AttemptList) == 0 {
					return false
				}
				docs = append(docs, doc)
			}
			return len(docs) > seen
		})
		seen = len(docs)
		require.NoError(t, stop())
		text, err := json.Marshal(docs)
		require.NoError(t, err)
		for _, h := range c.hidden {
			require.NotContains(t, string(text), h, c.value)
		}
		if c.named {
			require.Contains(t, string(text), "org config webhook_url", c.value)
		}
	}
}
