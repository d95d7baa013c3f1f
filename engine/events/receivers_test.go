package events_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/events"
)

// The README's receivers, run as the programs they are: each is started on a free port and
// sent real deliveries made by Body and Headers.
var receivers = []struct {
	lang, interpreter, file, fence string
}{
	{"Python", "python3", "testdata/receiver.py", "```python"},
	{"Node", "node", "testdata/receiver.js", "```js"},
}

func TestReadmeReceiversAreTheTestedOnes(t *testing.T) {
	t.Parallel()

	readme, err := os.ReadFile("../../docs/integrations.md")
	require.NoError(t, err)
	for _, r := range receivers {
		src, err := os.ReadFile(r.file)
		require.NoError(t, err)
		require.Contains(t, string(readme), r.fence+"\n"+string(src)+"```\n",
			"docs/integrations.md must hold %s verbatim in a %s block: copy the file into it", r.file, r.fence)
	}
}

func TestReceivers(t *testing.T) {
	t.Parallel()

	for _, r := range receivers {
		t.Run(r.lang, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(r.interpreter); err != nil {
				t.Skipf("%s is not installed, so the README's %s receiver is not run: %v", r.interpreter, r.lang, err)
			}
			url, output := startReceiver(t, r.interpreter, r.file)

			b, err := events.Body("dlv_recv_1", "document.uploaded", time.Now(),
				map[string]any{"document_id": "doc_1", "name": "ünïcode <&> \"quoted\".csv", "content_type": "text/csv", "size_bytes": 12})
			require.NoError(t, err)
			now := time.Now()

			for _, tc := range []struct {
				name   string
				header http.Header
				body   []byte
				want   int
			}{
				{"signed delivery", events.Headers("dlv_recv_1", secret, b, now), b, http.StatusNoContent},
				{"tampered body", events.Headers("dlv_recv_1", secret, b, now), bytes.Replace(b, []byte("doc_1"), []byte("doc_2"), 1), http.StatusUnauthorized},
				{"6 minutes old", events.Headers("dlv_recv_1", secret, b, now.Add(-6*time.Minute)), b, http.StatusUnauthorized},
				{"6 minutes ahead", events.Headers("dlv_recv_1", secret, b, now.Add(6*time.Minute)), b, http.StatusUnauthorized},
				{"4 minutes old", events.Headers("dlv_recv_1", secret, b, now.Add(-4*time.Minute)), b, http.StatusNoContent},
				{"old one re-stamped", restamp(events.Headers("dlv_recv_1", secret, b, now.Add(-6*time.Minute)), now), b, http.StatusUnauthorized},
				{"other secret", events.Headers("dlv_recv_1", []byte("whsec_other"), b, now), b, http.StatusUnauthorized},
				{"unsigned", events.Headers("dlv_recv_1", nil, b, now), b, http.StatusUnauthorized},
			} {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(tc.body))
				require.NoError(t, err)
				req.Header = tc.header
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err, tc.name)
				resp.Body.Close()
				require.Equal(t, tc.want, resp.StatusCode, "%s: %s answered %d; its output:\n%s", tc.name, r.lang, resp.StatusCode, output())
			}
			require.Eventually(t, func() bool { return strings.Contains(output(), "dlv_recv_1 document.uploaded") },
				5*time.Second, 10*time.Millisecond, "the receiver read the delivery; its output:\n%s", output())
		})
	}
}

// restamp moves a delivery's X-Svc-Timestamp without re-signing: what a replay of a captured
// delivery would try.
func restamp(h http.Header, at time.Time) http.Header {
	h.Set("X-Svc-Timestamp", fmt.Sprint(at.Unix()))
	return h
}

// startReceiver runs a receiver program with PORT=0 and SVC_WEBHOOK_SECRET, reads the port
// it printed, and returns its URL and a function reporting everything it wrote so far.
func startReceiver(t *testing.T, interpreter, file string) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, interpreter, file)
	cmd.Env = append(os.Environ(), "PORT=0", "SVC_WEBHOOK_SECRET="+string(secret))
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; _ = cmd.Wait() })

	port := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if p, ok := strings.CutPrefix(line, "listening on "); ok {
				select {
				case port <- p:
				default:
				}
			}
			mu.Lock()
			out.WriteString(line + "\n")
			mu.Unlock()
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p + "/hooks/svcflow", output
	case <-done:
		t.Fatalf("%s %s ended before listening:\n%s", interpreter, file, output())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s %s did not say it was listening within 20 s:\n%s", interpreter, file, output())
	}
	return "", nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
