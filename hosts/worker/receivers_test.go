package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/hosts/worker"
)

// The README's receivers (engine/events/testdata: Python and Node, standard library only)
// as the targets of real deliveries from the worker: each verifies the timestamped
// signature over the raw bytes and the 5-minute window, answers 204 (401 otherwise), and
// prints the delivery id it handled.
func TestReadmeReceiversAcceptRealDeliveries(t *testing.T) {
	t.Parallel()
	for _, rcv := range []struct{ interpreter, file string }{{"python3", "receiver.py"}, {"node", "receiver.js"}} {
		t.Run(rcv.interpreter, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(rcv.interpreter); err != nil {
				t.Skipf("%s is not installed: the README's %s receiver is not tried", rcv.interpreter, rcv.file)
			}
			const secret = "whsec-readme-receiver-71c2"
			url, printed := runReceiverProgram(t, rcv.interpreter, filepath.Join("..", "..", "engine", "events", "testdata", rcv.file), secret)
			eng := deliveryEngine(t, "sqlite", engine.Config{})
			ctx := context.Background()
			_, err := eng.CreateWebhook(ctx, org, engine.WebhookInput{Event: "workflow.completed", URL: url, Secret: secret})
			require.NoError(t, err)
			_, err = eng.CreateWebhook(ctx, org, engine.WebhookInput{Event: "workflow.started", URL: url, Secret: "not-the-receivers-secret"})
			require.NoError(t, err)
			wf := createWorkflow(t, eng, "empty", `{"actions": []}`)
			execute(t, eng, wf, json.RawMessage(`{}`))
			startWorker(t, eng, worker.Options{Concurrency: 2, Poll: 10 * time.Millisecond})
			waitFor(t, 20*time.Second, 20*time.Millisecond, "both deliveries end", func() bool {
				ds := deliveriesOf(t, eng, org)
				return len(ds) == 2 && ds[0].Status != svctype.DeliveryPending && ds[1].Status != svctype.DeliveryPending
			})
			for _, d := range deliveriesOf(t, eng, org) {
				switch d.Event {
				case "workflow_run_completed":
					require.Equal(t, svctype.DeliverySucceeded, d.Status)
					require.Equal(t, []string{"204 succeeded"}, deliveryOutcomes(t, eng, org, d.ID))
					require.Contains(t, printed(), d.ID+" workflow_run_completed")
				case "workflow_run_started": // signed with another secret: refused
					require.Equal(t, svctype.DeliveryFailed, d.Status)
					require.Equal(t, []string{"401 failed"}, deliveryOutcomes(t, eng, org, d.ID))
				}
			}
		})
	}
}

// runReceiverProgram starts a receiver program with PORT=0 and its secret, and returns the
// URL it listens on and what it has printed so far.
func runReceiverProgram(t *testing.T, interpreter, file, secret string) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, interpreter, file)
	cmd.Env = append(os.Environ(), "PORT=0", "SVC_WEBHOOK_SECRET="+secret)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var mu sync.Mutex
	var out strings.Builder
	done := make(chan struct{})
	port := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				port <- p
			}
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = cmd.Wait() })
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p + "/hooks/svcflow", func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	case <-time.After(20 * time.Second):
		t.Fatalf("%s %s did not start listening", interpreter, file)
	}
	return "", nil
}
