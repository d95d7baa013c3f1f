package runops_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A run whose llm action (a model behind a real OpenAI-compatible HTTP server) answered
// before a later step failed is retried: the plan lists no model call, the model server
// gets no second request, and the failed step reads the first answer.
func TestRetryDoesNotCallTheModelAgain(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, b *enginetest.Logged) {
		const org = "org-a"
		var calls atomic.Int32
		model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
				http.NotFound(w, r)
				return
			}
			n := calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-%d", "object": "chat.completion", "created": 1, "model": "m",
				"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "answer %d"}}],
				"usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}`, n, n)
		}))
		t.Cleanup(model.Close)
		for k, v := range map[string]string{engine.LLMAPIKey: "sk-retry-test", engine.LLMBaseURL: model.URL + "/v1"} {
			_, _, err := b.Eng.SetOrgConfig(b.Ctx, org, k, v)
			require.NoError(t, err)
		}
		b.CustomerTables(t, org)
		b.Action(t, org, svctype.Action{Name: "ask", Kind: svctype.ActionLLM, Template: "Why {{x}}?"})
		w := b.Workflow(t, org, "asks", `{"actions": [
			{"type": "ask", "properties": {"x": "@input.x"}, "outputKey": "why"},
			{"type": "custom-table", "properties": {"table": "later", "operation": "write", "fields": {"text": "{{why.text}}"}}}]}`)
		failed := b.Execute(t, org, w.ID, `{"x": "now"}`)
		require.Equal(t, svctype.RunFailed, failed.Status)
		require.Equal(t, int32(1), calls.Load())

		plan, err := b.Eng.RetryPlan(b.Ctx, org, failed.ID)
		require.NoError(t, err)
		require.Equal(t, []int{0}, plan.Reused)
		require.Empty(t, plan.Calls, "the model is not called again")

		_, err = b.Eng.CreateTable(b.Ctx, org, "later", map[string]string{"text": "text"})
		require.NoError(t, err)
		next, err := b.Eng.RetryRun(b.Ctx, org, failed.ID, "table made", engine.Actor{})
		require.NoError(t, err)
		work(t, b)
		doc, err := b.Eng.RunStatus(b.Ctx, org, next.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, int32(1), calls.Load(), "no second request to the model")
		later := rows(t, b, org, "later")
		require.Len(t, later, 1)
		require.Equal(t, "answer 1", later[0].Data["text"], "the first answer, reused")
	})
}
