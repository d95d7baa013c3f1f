package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
	"github.com/svcflow/svcflow/hosts/runtime"
	"github.com/svcflow/svcflow/internal/contracttest"
	"github.com/svcflow/svcflow/internal/testlog"
)

// A PbotForm step without a schema, for an organization with agent_forms and a model key:
// GET /forms/:runId/:stepId shows the form the model drafted, every expected key a field,
// and a second run of the workflow shows it again without asking the model.
func TestGeneratedFormPauseRoute(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		content, _ := json.Marshal(`{"version": "form_schema_v1", "title": "Supplier", "pages": [{"id": "main", "fields": [
			{"key": "company", "type": "text", "label": "Company name", "required": true},
			{"key": "email", "type": "email", "label": "Billing email", "required": true},
			{"key": "size", "type": "range", "label": "Employees", "min": 1, "max": 500}]}]}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": %s}}]}`, content)
	}))
	t.Cleanup(model.Close)
	st := store.OpenTest(t, "sqlite")
	eng, err := engine.New(engine.Config{Store: st, Logger: testlog.Quiet(), Keyring: testKeyring(t), AllowPrivateTargets: true})
	require.NoError(t, err)
	contracttest.WatchEvents(t, eng)
	srv := runtime.New(eng, runtime.Options{Logger: testlog.Quiet(), Version: "test"})
	b := &bundle{eng: eng, st: st, srv: srv, h: srv.Handler(), api: srv.API()}

	for key, value := range map[string]string{engine.LLMAPIKey: "sk-test-route-key", engine.LLMBaseURL: model.URL + "/v1"} {
		ok[map[string]any](t, b.do(t, http.MethodPost, "/org-config", orgA, map[string]any{"key": key, "value": value}), http.StatusCreated)
	}
	ok[map[string]any](t, b.do(t, http.MethodPut, "/org-features", orgA, map[string]any{"agent_forms": true}), http.StatusOK)
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("supplier",
		`{"actions":[{"type":"PbotForm","properties":{"expected_keys":["company","email"],"intent":"onboard a supplier"}}]}`)), http.StatusCreated)

	for range 2 {
		run := b.execute(t, orgA, w.ID, nil)
		b.work(t)
		p := ok[svctype.FormPause](t, b.do(t, http.MethodGet, "/forms/"+run.ID+"/0", orgA, nil), http.StatusOK)
		require.Equal(t, svctype.FormPauseOpen, p.Status)
		var s forms.Schema
		require.NoError(t, json.Unmarshal(p.Schema, &s))
		f, drafted := s.Field("size")
		require.True(t, drafted, "the model's field: %s", p.Schema)
		require.Equal(t, forms.TypeRange, f.Type)
		f, _ = s.Field("email")
		require.Equal(t, "Billing email", f.Label)
	}
	require.Equal(t, int32(1), calls.Load(), "the second run reuses the schema kept for the step")
}
