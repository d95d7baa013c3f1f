package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeOpenAI speaks the chat-completions wire. Its reply depends only on how many tool
// results the conversation holds, so a run replayed after a crash gets the same replies;
// the killAt-th model request (1-based; 0: none) is held until its caller goes away, and
// reported on arrived. /lookup is the agent's tool, counting its calls by idempotency key.
type fakeOpenAI struct {
	srv     *httptest.Server
	killAt  int
	arrived chan struct{}

	script []modelTurn
	draft  string // the reply to a request offering no tools (a workflow draft), when set

	mu       sync.Mutex
	requests int
	lookups  map[string]int
}

// modelTurn is one reply of the fake model: a thought (the message's text, "step N" when
// empty) and the tool it calls with its arguments.
type modelTurn struct{ name, args, thought string }

// agentScript is a reconciliation agent: it looks the customer up, reconciles with the
// stored nway_match action, claims a clean match (refused: there is a variance), asks a
// person, and completes with the discrepancy.
var agentScript = []modelTurn{
	{"lookup", `{"id": "1"}`, ""},
	{"recon", `{"bank": [{"inv": "A", "amount": 10}, {"inv": "B", "amount": 20}], "erp": [{"inv": "A", "amount": 10}, {"inv": "B", "amount": 21.5}]}`, ""},
	{"__complete__", `{"answer": "the books match", "confidence": 0.9, "match_claim": "clean"}`, ""},
	{"__pause_for_human__", `{"question": "Invoice B differs by 1.50: write it off?", "options": ["write off", "chase"]}`, ""},
	{"__complete__", `{"answer": "ACME Ltd: invoice B differs by 1.50, written off", "confidence": 0.8, "match_claim": "discrepancies"}`, ""},
}

func newFakeOpenAI(t *testing.T, killAt int) *fakeOpenAI {
	return newScriptedOpenAI(t, killAt, agentScript)
}

// newScriptedOpenAI is a fakeOpenAI replying with script's turns.
func newScriptedOpenAI(t *testing.T, killAt int, script []modelTurn) *fakeOpenAI {
	f := &fakeOpenAI{killAt: killAt, arrived: make(chan struct{}), lookups: map[string]int{}, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/lookup" {
			f.mu.Lock()
			f.lookups[r.Header.Get("Idempotency-Key")]++
			f.mu.Unlock()
			names := map[string]string{"1": "ACME Ltd", "2": "Globex"}
			_, _ = fmt.Fprintf(w, `{"customer": %q, "terms": "net 30"}`, names[r.URL.Query().Get("id")])
			return
		}
		var body struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
			Tools []json.RawMessage `json:"tools"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.requests++
		n := f.requests
		f.mu.Unlock()
		if n == f.killAt {
			close(f.arrived)
			<-r.Context().Done() // the caller is killed with the request in flight
			return
		}
		if f.draft != "" && len(body.Tools) == 0 {
			_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-%d", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-mini",
  "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": %q}}],
  "usage": {"prompt_tokens": 300, "completion_tokens": 120, "total_tokens": 420}}`, n, f.draft)
			return
		}
		pos := 0
		for _, m := range body.Messages {
			if m.Role == "tool" {
				pos++
			}
		}
		step := f.script[min(pos, len(f.script)-1)]
		thought := step.thought
		if thought == "" {
			thought = fmt.Sprintf("step %d", pos)
		}
		_, _ = fmt.Fprintf(w, `{"id": "chatcmpl-%d", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-mini",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": %q,
    "tool_calls": [{"id": "call_%d", "type": "function", "function": {"name": %q, "arguments": %q}}]}}],
  "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}`, n, thought, pos, step.name, step.args)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// TestAgentSurvivesSIGKILLAtEveryIteration runs a reconciliation agent in the real binary
// (it runs nway_match as a tool, is refused a false clean-match claim, pauses for a person,
// is resumed and completes) and kills the process (SIGKILL) with each of its model calls in
// flight in turn, then starts another on the same database: every run ends with the trace
// of a run that was never killed, and no tool call is sent with a new key.
func TestAgentSurvivesSIGKILLAtEveryIteration(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	run := func(t *testing.T, killAt int) (string, *fakeOpenAI) {
		f := newFakeOpenAI(t, killAt)
		dir := t.TempDir()
		dsn := "sqlite:" + dir + "/svcflow.db"
		start := func() *process {
			return startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", dsn, "--runtime-addr", "127.0.0.1:0",
				"--allow-private-targets", "--lease", "1s")
		}
		p := start()
		call := func(method, path, body string) (int, map[string]any, string) {
			t.Helper()
			req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("X-Org-Id", "acme")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			return resp.StatusCode, m, string(b)
		}
		for _, kv := range [][2]string{{"api:llm_api_key", "sk-kill-test"}, {"api:llm_base_url", f.srv.URL + "/v1"}} {
			code, _, body := call("POST", "/org-config", fmt.Sprintf(`{"key": %q, "value": %q}`, kv[0], kv[1]))
			require.Less(t, code, 300, body)
		}
		code, _, body := call("POST", "/actions", `{"action_name": "lookup", "kind": "http", "http_method": "GET", "url": "`+f.srv.URL+`/lookup"}`)
		require.Equal(t, http.StatusCreated, code, body)
		code, _, body = call("POST", "/actions", `{"action_name": "recon", "kind": "nway_match", "description": "Reconcile bank against ERP.",
			"properties": {"sets": [{"key": "bank", "records": "@input.bank"}, {"key": "erp", "records": "@input.erp"}],
			"matchOn": ["inv"], "tolerances": {"amount": {"type": "abs", "value": 0}}}}`)
		require.Equal(t, http.StatusCreated, code, body)
		code, started, body := call("POST", "/agents/execute?async=true", `{"objective": "Reconcile ACME's bank statement against the ERP",
			"tools": ["lookup", {"type": "action", "name": "recon"}], "config": {"on_stuck": {"iterations": 0, "action": "escalate"}}}`)
		require.Equal(t, http.StatusAccepted, code, body)
		id := started["agent_run_id"].(string)
		killed, resumed := killAt == 0, false
		deadline := time.Now().Add(60 * time.Second)
		for {
			require.True(t, time.Now().Before(deadline), "agent %s never completed", id)
			if !killed {
				select {
				case <-f.arrived:
					p.kill()
					p = start()
					killed = true
				default:
				}
			}
			_, doc, _ := call("GET", "/agents/"+id+"/status", "")
			if doc["status"] == "paused" && !resumed {
				code, _, body := call("POST", "/agents/"+id+"/resume", `{"human_input": "write it off", "approved": true}`)
				require.Equal(t, http.StatusAccepted, code, body)
				resumed = true
			}
			if doc["status"] == "completed" && killed {
				break
			}
			// Polls the other process: its agent's status is not pushed across the process
			// boundary. It waits for a change, never to show that none comes.
			time.Sleep(20 * time.Millisecond)
		}
		code, _, trace := call("GET", "/agents/"+id+"/trace", "")
		require.Equal(t, http.StatusOK, code)
		return strings.ReplaceAll(trace, id, "<agent>"), f
	}

	want, clean := run(t, 0)
	require.Contains(t, want, "invoice B differs by 1.50, written off")
	require.Contains(t, want, "clean match was refused")
	require.Contains(t, want, `"human_input":"write it off"`)
	require.Len(t, clean.lookups, 1)
	for killAt := 1; killAt <= len(agentScript); killAt++ {
		t.Run(fmt.Sprint("killed during model call ", killAt), func(t *testing.T) {
			t.Parallel()
			got, f := run(t, killAt)
			require.JSONEq(t, want, got, "the same trace as a run never killed")
			f.mu.Lock()
			defer f.mu.Unlock()
			require.Len(t, f.lookups, 1, "the lookup has one idempotency key, whatever was replayed")
			for key := range f.lookups {
				require.Regexp(t, `^agent-[0-9a-f-]+/\d+/tool$`, key)
			}
		})
	}
}
