package runtime_test

import (
	"net/http"
	"testing"
)

// BenchmarkStatus is one GET /runs/{runId}/status of a completed one-step run, through the
// whole handler: what every poll of a client costs the server.
func BenchmarkStatus(b *testing.B) {
	t := b
	bb := setup(t)
	wf := bb.createWorkflow(t, orgA, "status")
	run := bb.execute(t, orgA, wf.ID, map[string]any{"email": "a@x", "name": "A"})
	bb.work(t)
	b.ResetTimer()
	for b.Loop() {
		rec := bb.do(t, http.MethodGet, "/runs/"+run.ID+"/status", orgA, nil)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
	}
}
