package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
	"github.com/svcflow/svcflow/hosts/worker"
)

const supplierForm = `{"version": "form_schema_v1", "title": "Supplier", "pages": [{"id": "main", "fields": [
	{"key": "company", "type": "text", "label": "Company", "required": true},
	{"key": "email", "type": "email", "label": "Email", "required": true},
	{"key": "size", "type": "select", "label": "Size", "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}]}]}]}`

// The model drafting a PbotForm step's schema answers only once a fast run elsewhere has
// committed: were the draft made inside the step's transaction, the SQLite writer would be
// held and the fast run could not commit; were it made holding its step slot, the one slot
// of this worker would keep the fast run from being claimed. Either way the model would
// give up, and the pause would show the fallback instead of its form.
func TestFormDraftHoldsNeitherATransactionNorASlot(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key, err := secrets.GenerateKey()
			require.NoError(t, err)
			kr, err := secrets.NewKeyring(key)
			require.NoError(t, err)
			eng := newEngine(t, engine.Config{Store: openStore(t, sharedDSN(t, d)), Keyring: kr, AllowPrivateTargets: true})
			fastWF := ledgerSetup(t, eng)
			fastRun := make(chan string, 1) // the fast run's id, once it is started
			received := make(chan struct{}, 1)
			model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				received <- struct{}{}
				w.Header().Set("Content-Type", "application/json")
				if fastRunEnds(r.Context(), eng, fastRun) {
					content, _ := json.Marshal(supplierForm)
					_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
						"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": %s}}]}`, content)
					return
				}
				w.WriteHeader(http.StatusBadRequest) // not retried: the pause falls back
				_, _ = fmt.Fprint(w, `{"error": {"message": "the fast run did not finish while this call was in flight"}}`)
			}))
			defer model.Close()
			ctx := context.Background()
			for k, v := range map[string]string{engine.LLMAPIKey: "sk-test-form-draft", engine.LLMBaseURL: model.URL + "/v1"} {
				_, _, err := eng.SetOrgConfig(ctx, org, k, v)
				require.NoError(t, err)
			}
			_, err = eng.SetOrgFeatures(ctx, org, svctype.OrgFeatures{AgentForms: true})
			require.NoError(t, err)
			formWF := createWorkflow(t, eng, "supplier", `{"actions": [
				{"type": "PbotForm", "properties": {"expected_keys": ["company", "email"], "intent": "onboard a supplier"}}]}`)
			startWorker(t, eng, worker.Options{Concurrency: 1, Poll: 10 * time.Millisecond})

			slow := execute(t, eng, formWF, json.RawMessage(`{}`))
			<-received
			fastRun <- execute(t, eng, fastWF, ledgerInput(1))
			waitFor(t, 15*time.Second, 10*time.Millisecond, "the form run pauses", func() bool {
				run, err := eng.GetRun(ctx, org, slow)
				require.NoError(t, err)
				return run.Status != svctype.RunRunning
			})
			p, err := eng.FormPause(ctx, org, slow, 0)
			require.NoError(t, err)
			var s forms.Schema
			require.NoError(t, json.Unmarshal(p.Schema, &s))
			_, drafted := s.Field("size")
			require.True(t, drafted, "the model's form, answered after the fast run committed: %s", p.Schema)
		})
	}
}
