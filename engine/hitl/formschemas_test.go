package hitl_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

// llmAPIKeyValue is the organizations' model key in these tests: it must appear nowhere but
// in the request to the model.
const llmAPIKeyValue = "sk-test-llm-key-4d8e2b"

// modelServer stands for the organizations' model behind the OpenAI wire format: it answers
// every chat completion with what answer gives for the caller's key (a status other than
// 200 is sent as the API's error) and records each request.
type modelServer struct {
	url    string
	answer func(key string) (status int, content string)

	mu       sync.Mutex
	requests []modelRequest
}

type modelRequest struct {
	Key      string // the bearer key
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat map[string]any `json:"response_format"`
}

func newModelServer(t *testing.T, answer func(key string) (int, string)) *modelServer {
	t.Helper()
	m := &modelServer{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req modelRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		req.Key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		m.mu.Lock()
		m.requests = append(m.requests, req)
		m.mu.Unlock()
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		status, content := m.answer(req.Key)
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, `{"error": {"message": %q, "type": "invalid_request_error"}}`, content)
			return
		}
		body, _ := json.Marshal(content)
		_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
			"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": %s}}],
			"usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}`, body)
	}))
	t.Cleanup(srv.Close)
	m.url = srv.URL + "/v1"
	return m
}

// seen returns the requests made so far.
func (m *modelServer) seen() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.requests...)
}

// regionForm is goodForm with a region where goodForm has a size.
var regionForm = strings.Replace(goodForm, `"key": "size", "type": "select", "label": "Size"`, `"key": "region", "type": "select", "label": "Region"`, 1)

// always answers every key with content.
func always(content string) func(string) (int, string) {
	return func(string) (int, string) { return http.StatusOK, content }
}

// formOrg gives org a model key (key) at m and, when agentForms, the agent_forms feature.
func formOrg(t *testing.T, b *enginetest.Logged, org, key string, m *modelServer, agentForms bool) {
	t.Helper()
	b.Config(t, org, engine.LLMAPIKey, key)
	b.Config(t, org, engine.LLMBaseURL, m.url)
	_, err := b.Eng.SetOrgFeatures(b.Ctx, org, svctype.OrgFeatures{AgentForms: agentForms})
	require.NoError(t, err)
}

// generatedFlow pauses for a supplier's company and email without an authored schema, then
// records them.
const generatedFlow = `{"actions": [
	{"type": "PbotForm", "properties": {"expected_keys": ["company", "email"], "intent": "onboard a supplier",
		"hints": {"tone": "formal"}}},
	{"type": "custom-table", "properties": {"table": "suppliers", "operation": "write", "fields": {"company": "@company", "email": "@email"}}}
]}`

func generatedSetup(t *testing.T, b *enginetest.Logged, org, def string) *svctype.Workflow {
	t.Helper()
	_, err := b.Eng.CreateTable(b.Ctx, org, "suppliers", map[string]string{"company": "text", "email": "text"})
	require.NoError(t, err)
	return b.Workflow(t, org, "supplier", def)
}

// pauseSchema runs wfID for org (with input, or {}) until it pauses and returns its pause's
// schema, as GET /forms/:runId/0 shows it, and the run's id.
func pauseSchema(t *testing.T, b *enginetest.Logged, org, wfID string, input ...string) (*forms.Schema, string) {
	t.Helper()
	in := `{}`
	if len(input) > 0 {
		in = input[0]
	}
	doc := b.Execute(t, org, wfID, in)
	require.Equal(t, svctype.RunPaused, doc.Status, doc.Reason)
	p, err := b.Eng.FormPause(b.Ctx, org, doc.ID, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"company", "email"}, p.ExpectedKeys)
	var s forms.Schema
	require.NoError(t, json.Unmarshal(p.Schema, &s))
	for _, k := range p.ExpectedKeys {
		_, ok := s.Field(k)
		require.True(t, ok, "expected key %s is a field", k)
	}
	return &s, doc.ID
}

// schemaSource is the pause step's form_schema decision.
func schemaSource(t *testing.T, b *enginetest.Logged, org, runID string) string {
	t.Helper()
	ev, err := b.Eng.Evidence(b.Ctx, org, runID)
	require.NoError(t, err)
	for _, d := range ev.Steps[0].Decisions {
		if d.Kind == "form_schema" {
			return fmt.Sprint(d.Result)
		}
	}
	t.Fatalf("no form_schema decision in %+v", ev.Steps[0].Decisions)
	return ""
}

func fieldKeys(s *forms.Schema) []string {
	var keys []string
	for _, p := range s.Pages {
		for _, f := range p.Fields {
			keys = append(keys, f.Key)
		}
	}
	return keys
}

// The model's form is the pause's schema; a second run of the same workflow version reuses
// it without a model call; a new version drafts again.
func TestFormPauseGeneratedSchemaIsKeptPerWorkflowVersion(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := enginetest.SetupLogged(t, d, true)
			m := newModelServer(t, always(goodForm))
			formOrg(t, b, "o", llmAPIKeyValue, m, true)
			w := generatedSetup(t, b, "o", generatedFlow)

			s, first := pauseSchema(t, b, "o", w.ID)
			require.Equal(t, []string{"company", "email", "size"}, fieldKeys(s), "the model's fields")
			require.Equal(t, "Supplier", s.Title)
			require.Equal(t, engine.FormSchemaGenerated, schemaSource(t, b, "o", first))
			reqs := m.seen()
			require.Len(t, reqs, 1)
			require.Equal(t, llmAPIKeyValue, reqs[0].Key)
			asked := reqs[0].Messages[len(reqs[0].Messages)-1].Content
			require.Contains(t, asked, "Intent: onboard a supplier")
			require.Contains(t, asked, "company, email")
			require.Contains(t, asked, `"tone":"formal"`)
			require.Equal(t, "json_object", reqs[0].ResponseFormat["type"])
			calls := enginetest.CallEffects(t, b.Bundle, "o", first)
			require.Len(t, calls, 1, "the model call is the step's I/O call, with its evidence")
			require.Equal(t, first+"/0", calls[0].Detail["idempotency_key"])
			require.NotContains(t, b.Everything(t, "o", first), llmAPIKeyValue)

			s2, second := pauseSchema(t, b, "o", w.ID)
			require.Equal(t, fieldKeys(s), fieldKeys(s2))
			require.Equal(t, engine.FormSchemaCached, schemaSource(t, b, "o", second))
			require.Len(t, m.seen(), 1, "the same workflow version: no model call")
			require.Empty(t, enginetest.CallEffects(t, b.Bundle, "o", second))

			// The generated form is submitted like any other.
			_, err := b.Eng.SubmitForm(b.Ctx, "o", first, 0, engine.FormSubmission{Data: map[string]any{
				"company": "ACME", "email": "ap@acme.example", "size": "l"}})
			require.NoError(t, err)
			_, err = b.Eng.Work(b.Ctx)
			require.NoError(t, err)
			doc, err := b.Eng.RunStatus(b.Ctx, "o", first)
			require.NoError(t, err)
			require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
			require.Equal(t, "l", doc.Context["size"])

			_, err = b.Eng.UpdateWorkflow(b.Ctx, "o", w.ID, engine.WorkflowInput{Name: "supplier", Definition: json.RawMessage(generatedFlow)})
			require.NoError(t, err)
			_, third := pauseSchema(t, b, "o", w.ID)
			require.Equal(t, engine.FormSchemaGenerated, schemaSource(t, b, "o", third))
			require.Len(t, m.seen(), 2, "a new workflow version drafts its own")
			_, fourth := pauseSchema(t, b, "o", w.ID)
			require.Equal(t, engine.FormSchemaCached, schemaSource(t, b, "o", fourth))
			require.Len(t, m.seen(), 2)
		})
	}
}

// Without agent_forms, or with a schema authored for the step, the model is never asked.
func TestFormPauseGeneratesOnlyWithTheFeatureAndNoAuthoredSchema(t *testing.T) {
	t.Parallel()
	authored := `{"actions": [{"type": "PbotForm", "properties": {"expected_keys": ["company", "email"], "intent": "onboard a supplier",
		"schema": {"version": "form_schema_v1", "pages": [{"id": "p", "fields": [{"key": "email", "type": "email", "label": "Work email"}]}]}}}]}`
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := enginetest.SetupLogged(t, d, true)
			m := newModelServer(t, always(goodForm))

			formOrg(t, b, "plain", llmAPIKeyValue, m, false)
			w := generatedSetup(t, b, "plain", generatedFlow)
			for range 2 {
				s, run := pauseSchema(t, b, "plain", w.ID)
				require.Equal(t, []string{"company", "email"}, fieldKeys(s))
				for _, k := range fieldKeys(s) {
					f, _ := s.Field(k)
					require.Equal(t, forms.TypeText, f.Type, "one text field per expected key")
				}
				require.Equal(t, engine.FormSchemaTextFields, schemaSource(t, b, "plain", run))
				require.Empty(t, enginetest.CallEffects(t, b.Bundle, "plain", run))
			}

			formOrg(t, b, "authors", llmAPIKeyValue, m, true)
			w = generatedSetup(t, b, "authors", authored)
			s, run := pauseSchema(t, b, "authors", w.ID)
			require.Equal(t, []string{"email", "company"}, fieldKeys(s), "the authored form, the missing key added")
			f, _ := s.Field("email")
			require.Equal(t, "Work email", f.Label)
			require.Equal(t, engine.FormSchemaAuthored, schemaSource(t, b, "authors", run))

			require.Empty(t, m.seen(), "no model call")
		})
	}
}

// A model that fails, or answers no valid form, gives one text field per expected key for
// that pause; nothing is kept, so the next run asks again and keeps a good answer.
func TestFormPauseFallbackIsNotKept(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := enginetest.SetupLogged(t, d, true)
			var mu sync.Mutex
			status, content := http.StatusBadRequest, "the model is unavailable"
			m := newModelServer(t, func(string) (int, string) {
				mu.Lock()
				defer mu.Unlock()
				return status, content
			})
			answer := func(s int, c string) {
				mu.Lock()
				defer mu.Unlock()
				status, content = s, c
			}
			formOrg(t, b, "o", llmAPIKeyValue, m, true)
			w := generatedSetup(t, b, "o", generatedFlow)

			s, run := pauseSchema(t, b, "o", w.ID)
			require.Equal(t, []string{"company", "email"}, fieldKeys(s), "the fallback")
			require.Equal(t, engine.FormSchemaFallback, schemaSource(t, b, "o", run))
			require.Len(t, m.seen(), 1, "a model error is not retried by the form")

			answer(http.StatusOK, `{"version": "form_schema_v1", "pages": [{"id": "main", "fields": [{"key": "company", "type": "file", "label": "Company"}]}]}`)
			s, run = pauseSchema(t, b, "o", w.ID)
			require.Equal(t, []string{"company", "email"}, fieldKeys(s))
			require.Equal(t, engine.FormSchemaFallback, schemaSource(t, b, "o", run))
			require.Len(t, m.seen(), 3, "the fallback was not kept: asked again, and once more with the problems")

			answer(http.StatusOK, goodForm)
			s, run = pauseSchema(t, b, "o", w.ID)
			require.Equal(t, []string{"company", "email", "size"}, fieldKeys(s))
			require.Equal(t, engine.FormSchemaGenerated, schemaSource(t, b, "o", run))
			require.Len(t, m.seen(), 4)
			_, run = pauseSchema(t, b, "o", w.ID)
			require.Equal(t, engine.FormSchemaCached, schemaSource(t, b, "o", run))
			require.Len(t, m.seen(), 4)
		})
	}
}

// Two organizations with the same workflow: each pause shows its own organization's form,
// drafted with its own key; a schema kept under another organization for the very same
// workflow id and version is never read.
func TestFormPauseGeneratedSchemaIsPerOrganization(t *testing.T) {
	t.Parallel()
	for _, d := range enginetest.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := enginetest.SetupLogged(t, d, true)
			m := newModelServer(t, func(key string) (int, string) {
				if key == "sk-org-b" {
					return http.StatusOK, regionForm
				}
				return http.StatusOK, goodForm
			})
			formOrg(t, b, "org-a", "sk-org-a", m, true)
			formOrg(t, b, "org-b", "sk-org-b", m, true)
			wa := generatedSetup(t, b, "org-a", generatedFlow)
			wb := generatedSetup(t, b, "org-b", generatedFlow)

			// Org B has a schema kept for org A's workflow id and version (as if ids met).
			_, err := b.St.KeepGeneratedFormSchema(b.Ctx, &svctype.GeneratedFormSchema{
				FormSchemaKey: svctype.FormSchemaKey{OrgID: "org-b", WorkflowID: wa.ID, WorkflowVersion: 1, StepIndex: 0},
				Schema:        json.RawMessage(regionForm), Attempts: 1})
			require.NoError(t, err)

			s, run := pauseSchema(t, b, "org-a", wa.ID)
			require.Equal(t, []string{"company", "email", "size"}, fieldKeys(s), "org A's own model's form")
			require.Equal(t, engine.FormSchemaGenerated, schemaSource(t, b, "org-a", run))
			s, run = pauseSchema(t, b, "org-b", wb.ID)
			require.Equal(t, []string{"company", "email", "region"}, fieldKeys(s))
			require.Equal(t, engine.FormSchemaGenerated, schemaSource(t, b, "org-b", run))
			for _, org := range []string{"org-a", "org-b"} {
				wf := map[string]string{"org-a": wa.ID, "org-b": wb.ID}[org]
				_, run := pauseSchema(t, b, org, wf)
				require.Equal(t, engine.FormSchemaCached, schemaSource(t, b, org, run))
			}
			var keys []string
			for _, r := range m.seen() {
				keys = append(keys, r.Key)
			}
			require.Equal(t, []string{"sk-org-a", "sk-org-b"}, keys, "each organization's model asked once, with its own key")
		})
	}
}

// A filtered PbotForm and its onFalse PbotForm sit at one step index but are two forms:
// each has its own generated schema.
func TestFormPauseOnFalseHasItsOwnGeneratedSchema(t *testing.T) {
	t.Parallel()
	b := enginetest.SetupLogged(t, "sqlite", true)
	m := newModelServer(t, nil)
	m.answer = func(string) (int, string) {
		reqs := m.seen() // this request is recorded before it is answered
		if strings.Contains(reqs[len(reqs)-1].Messages[1].Content, "refund") {
			return http.StatusOK, regionForm
		}
		return http.StatusOK, goodForm
	}
	formOrg(t, b, "o", llmAPIKeyValue, m, true)
	w := generatedSetup(t, b, "o", `{"actions": [
		{"type": "PbotForm", "filter": {"condition": {"equal": ["@input.kind", "supplier"]}},
		 "properties": {"expected_keys": ["company", "email"], "intent": "onboard a supplier"},
		 "onFalse": {"type": "PbotForm", "properties": {"expected_keys": ["company", "email"], "intent": "refund a customer"}}}]}`)
	for i, tt := range []struct {
		kind, field, source string
	}{
		{"supplier", "size", engine.FormSchemaGenerated},
		{"customer", "region", engine.FormSchemaGenerated},
		{"supplier", "size", engine.FormSchemaCached},
		{"customer", "region", engine.FormSchemaCached},
	} {
		s, run := pauseSchema(t, b, "o", w.ID, `{"kind": "`+tt.kind+`"}`)
		_, ok := s.Field(tt.field)
		require.True(t, ok, "run %d (%s): %v", i, tt.kind, fieldKeys(s))
		require.Equal(t, tt.source, schemaSource(t, b, "o", run))
	}
	require.Len(t, m.seen(), 2)
}
