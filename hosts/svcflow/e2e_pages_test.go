package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seedConsolePages gives the console's workflows, tables, documents, webhooks, agents and
// forms pages something to show (e2e/console-pages.mjs drives them): a workflow of two
// versions with a filter, a loop and a pause; a table of 60 rows with an index; a document
// of two versions; an agent run that used a tool and completed. It answers their ids.
func seedConsolePages(t *testing.T, gw, live, site string, call func(method, path, auth, body string) map[string]any,
	waitStatus func(run, status string)) map[string]any {
	t.Helper()
	call("POST", "/custom-tables", live, `{"name": "payments", "fields": {"ref": "text", "payee": "text", "amount": "number", "status": "text"},
		"indexes": [["status"], ["payee"]]}`)
	v1 := `{"actions": [
		{"type": "loop", "properties": {"mode": "foreach", "items": "@input.payments", "steps": [
			{"type": "custom-table", "properties": {"table": "payments", "operation": "write",
				"fields": {"ref": "@item.ref", "payee": "@item.payee", "amount": "@item.amount", "status": "@item.status"}}}]}},
		{"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "Release the payments?"},
			"filter": {"condition": {"greaterThan": ["@input.total", 1000]}}}]}`
	wf := call("POST", "/workflows", live, `{"name": "pay-suppliers", "definition": `+v1+`}`)["id"].(string)
	v2 := strings.Replace(v1, `1000]`, `5000]`, 1)
	v2 = strings.Replace(v2, `"comment": "Release the payments?"}`, `"comment": "Release these payments over 5,000?"}, "outputKey": "release"`, 1)
	call("PUT", "/workflows/"+wf, live, `{"name": "pay-suppliers", "definition": `+v2+`}`)
	var payments []map[string]any
	for i := 1; i <= 60; i++ {
		status := []string{"paid", "open", "held"}[i%3]
		payments = append(payments, map[string]any{"ref": fmt.Sprintf("P-%03d", i), "payee": []string{"Acme GmbH", "Bolt Ltd", "Cora SA", "Dune BV"}[i%4],
			"amount": 100 + i*7, "status": status})
	}
	in, _ := json.Marshal(map[string]any{"input": map[string]any{"payments": payments, "total": 900}})
	run := call("POST", "/workflows/"+wf+"/execute", live, string(in))["id"].(string)
	waitStatus(run, "completed")

	doc := upload(t, gw, live, "/documents", "rates.csv", "currency,rate\nUSD,1.08\n")
	upload(t, gw, live, "/documents/"+doc+"/versions", "rates.csv", "currency,rate\nUSD,1.09\nGBP,0.86\n")

	// An agent run: the model (llmReply) calls the rates tool, then completes.
	call("POST", "/org-config", live, `{"key": "api:llm_base_url", "value": "`+site+`/llm"}`)
	call("POST", "/org-config", live, `{"key": "api:llm_api_key", "value": "sk-e2e-0123456789"}`)
	call("POST", "/actions", live, `{"action_name": "rates", "kind": "http", "http_method": "GET", "url": "`+site+`/rates", "description": "Today's exchange rates."}`)
	ag := call("POST", "/agents/execute?async=true", live, `{"objective": "What is the EUR/USD rate today?", "tools": [{"type": "action", "name": "rates"}],
		"config": {"max_iterations": 5}}`)["agent_run_id"].(string)
	require.Eventually(t, func() bool {
		_, m := gatewayCall(t, gw, "GET", "/agents/"+ag+"/status", live, "")
		return m["status"] == "completed"
	}, 20*time.Second, 50*time.Millisecond, "the agent run never completed")
	return map[string]any{"workflow": wf, "table": "payments", "document": doc, "agent": ag, "runs": 60}
}

// upload posts a file as multipart (POST /documents, POST /documents/{id}/versions) and
// answers the document's id.
func upload(t *testing.T, gw, live, path, name, content string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	require.NoError(t, err)
	_, _ = io.WriteString(fw, content)
	require.NoError(t, mw.WriteField("tags", "finance"))
	require.NoError(t, mw.Close())
	req, err := http.NewRequest("POST", gw+path, &body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+live)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s: %s", path, raw)
	var d struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &d))
	return d.ID
}

// llmReply is an OpenAI-compatible chat completion: before any tool has answered, a
// thought and a call of the rates tool; after, a thought and __complete__.
func llmReply(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	observed := false
	for _, m := range req.Messages {
		observed = observed || m.Role == "tool"
	}
	thought, name, args := "I need today's rates: I will ask the rates tool.", "rates", `{}`
	if observed {
		thought, name, args = "The tool says EUR/USD is 1.08: that answers the question.", "__complete__", `{"answer": "EUR/USD is 1.08 today.", "confidence": 0.9}`
	}
	a, _ := json.Marshal(args)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-e2e", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-mini",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": %q,
			"tool_calls": [{"id": "call-%d", "type": "function", "function": {"name": %q, "arguments": %s}}]}}],
		"usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}}`, thought, len(req.Messages), name, a)
}
