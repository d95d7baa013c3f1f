package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
)

// A scripted model replays a conversation turn by turn: here the model asks for a tool,
// gets its result, and answers. Tests and the offline demo use it instead of a provider.
func ExampleScripted() {
	m := llm.NewScripted(
		llm.Turn{
			Expect: &llm.Expect{Role: agent.RoleUser, Contains: "INV-42"},
			Reply: agent.Message{ToolCalls: []agent.ToolCall{
				{ID: "call_1", Name: "lookup_invoice", Arguments: json.RawMessage(`{"number":"INV-42"}`)},
			}},
			Usage: agent.Usage{InputTokens: 120, OutputTokens: 18},
		},
		llm.Turn{
			Expect: &llm.Expect{Role: agent.RoleTool, ToolCallID: "call_1"},
			Reply:  agent.Message{Content: "INV-42 is paid."},
			Usage:  agent.Usage{InputTokens: 150, OutputTokens: 6},
		},
	)
	ctx := context.Background()
	req := agent.Request{Model: "demo", Messages: []agent.Message{{Role: agent.RoleUser, Content: "Is INV-42 paid?"}}}
	var used agent.Usage
	for {
		res, err := m.Chat(ctx, req)
		if err != nil {
			fmt.Println(err)
			return
		}
		used = used.Add(res.Usage)
		req.Messages = append(req.Messages, res.Message)
		if len(res.Message.ToolCalls) == 0 {
			fmt.Println("answer:", res.Message.Content)
			break
		}
		for _, call := range res.Message.ToolCalls {
			fmt.Printf("tool %s(%s)\n", call.Name, call.Arguments)
			req.Messages = append(req.Messages, agent.Message{Role: agent.RoleTool, ToolCallID: call.ID, Content: `{"status":"paid"}`})
		}
	}
	fmt.Printf("tokens: %d in, %d out\n", used.InputTokens, used.OutputTokens)

	_, err := m.Chat(ctx, req)
	fmt.Println(errors.Is(err, llm.ErrScriptExhausted))
	// Output:
	// tool lookup_invoice({"number":"INV-42"})
	// answer: INV-42 is paid.
	// tokens: 270 in, 24 out
	// true
}

// New talks to any OpenAI-compatible server; the base URL is its API root. Here an
// httptest server stands in for one.
func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		fmt.Println(r.Method, r.URL.Path, req.Model, r.Header.Get("Authorization") != "")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952,
  "model": "llama3.1:8b", "choices": [{"index": 0, "finish_reason": "stop",
  "message": {"role": "assistant", "content": "Hello!"}}],
  "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}}`)
	}))
	defer srv.Close()

	m, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := m.Chat(context.Background(), agent.Request{
		Model:    "llama3.1:8b",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "Say hello."}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Message.Content, res.FinishReason, res.Usage.TotalTokens)
	// Output:
	// POST /v1/chat/completions llama3.1:8b true
	// Hello! stop 11
}
