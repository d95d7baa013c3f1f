package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
)

const testKey = "sk-test-0123456789abcdef"

// provider is an httptest server speaking the OpenAI chat-completions wire format. Each
// attempt gets the next reply; the last one repeats.
type provider struct {
	t       *testing.T
	srv     *httptest.Server
	prefix  string
	replies []reply

	mu       sync.Mutex
	received []received
}

// received is one request as the server saw it.
type received struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

type reply func(w http.ResponseWriter, r *http.Request)

func newProvider(t *testing.T, prefix string, replies ...reply) *provider {
	t.Helper()
	p := &provider{t: t, prefix: prefix, replies: replies}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		p.t.Errorf("read request: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		p.t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	p.mu.Lock()
	n := len(p.received)
	p.received = append(p.received, received{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	p.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != p.prefix+"/chat/completions" {
		p.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	p.replies[min(n, len(p.replies)-1)](w, r)
}

// baseURL is the URL a client is configured with: the server plus the path prefix.
func (p *provider) baseURL() string { return p.srv.URL + p.prefix }

func (p *provider) requests() []received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]received(nil), p.received...)
}

func (p *provider) client(t *testing.T, o llm.Options) *llm.Client {
	t.Helper()
	o.BaseURL = p.baseURL()
	if o.APIKey == "" {
		o.APIKey = testKey
	}
	c, err := llm.New(o)
	require.NoError(t, err)
	return c
}

func respond(status int, body string, header ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hang answers only when the client goes away or the test ends.
func hang(t *testing.T) reply {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // runs before the server's Close, registered earlier
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// completion is a chat.completion object with one choice.
func completion(message, finish string) string {
	return `{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [{"index": 0, "message": ` + message + `, "logprobs": null, "finish_reason": "` + finish + `"}],
  "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}},
  "service_tier": "default"
}`
}

var textReply = completion(`{"role": "assistant", "content": "Hello there.", "refusal": null, "annotations": []}`, "stop")

func openaiError(message, typ, code string) string {
	return fmt.Sprintf(`{"error": {"message": %q, "type": %q, "param": null, "code": %q}}`, message, typ, code)
}

func ptr[T any](v T) *T { return &v }

func TestChatText(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "/v1", respond(200, textReply))
	c := p.client(t, llm.Options{})

	res, err := c.Chat(context.Background(), agent.Request{
		Model: "gpt-4o-mini",
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "Answer in JSON."},
			{Role: agent.RoleUser, Content: "Say hello."},
		},
		MaxTokens:   64,
		Temperature: ptr(0.2),
		JSON:        true,
	})
	require.NoError(t, err)
	require.Equal(t, &agent.Response{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: "Hello there."},
		Usage:        agent.Usage{InputTokens: 19, OutputTokens: 10, TotalTokens: 29},
		FinishReason: agent.FinishStop,
		Model:        "gpt-4o-mini-2024-07-18",
	}, res)

	reqs := p.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "Bearer "+testKey, reqs[0].Header.Get("Authorization"))
	require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
	body := reqs[0].Body
	require.Equal(t, "gpt-4o-mini", body["model"])
	require.Equal(t, []any{
		map[string]any{"role": "system", "content": "Answer in JSON."},
		map[string]any{"role": "user", "content": "Say hello."},
	}, body["messages"])
	require.EqualValues(t, 64, body["max_tokens"])
	require.NotContains(t, body, "max_completion_tokens")
	require.InDelta(t, 0.2, body["temperature"], 1e-9)
	require.Equal(t, map[string]any{"type": "json_object"}, body["response_format"])
	require.NotContains(t, body, "tools")
}

func TestChatLeavesOutWhatIsUnset(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "/v1", respond(200, textReply))
	c, err := llm.New(llm.Options{BaseURL: p.baseURL(), MaxCompletionTokens: true})
	require.NoError(t, err)

	_, err = c.Chat(context.Background(), agent.Request{Model: "o3-mini", MaxTokens: 500,
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	require.NoError(t, err)

	got := p.requests()[0]
	require.Empty(t, got.Header.Get("Authorization"), "no key, no Authorization header")
	require.EqualValues(t, 500, got.Body["max_completion_tokens"])
	for _, k := range []string{"max_tokens", "temperature", "response_format", "tools"} {
		require.NotContains(t, got.Body, k)
	}
}

func TestChatToolCalls(t *testing.T) {
	t.Parallel()
	toolCallReply := completion(`{"role": "assistant", "content": null, "refusal": null, "annotations": [],
  "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "lookup_invoice", "arguments": "{\"number\": \"INV-42\"}"}},
    {"id": "call_2", "type": "function", "function": {"name": "__log_progress__", "arguments": "{}"}}
  ]}`, "tool_calls")
	p := newProvider(t, "/v1", respond(200, toolCallReply), respond(200, textReply))
	c := p.client(t, llm.Options{})
	tools := []agent.Tool{{
		Name:        "lookup_invoice",
		Description: "Reads one invoice by number.",
		Parameters:  json.RawMessage(`{"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]}`),
	}, {Name: "__log_progress__"}}
	conv := []agent.Message{{Role: agent.RoleUser, Content: "Is INV-42 paid?"}}

	// Turn 1: the model asks for tools.
	res, err := c.Chat(context.Background(), agent.Request{Model: "gpt-4o", Messages: conv, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, agent.FinishToolCalls, res.FinishReason)
	require.Equal(t, agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "call_1", Name: "lookup_invoice", Arguments: json.RawMessage(`{"number": "INV-42"}`)},
		{ID: "call_2", Name: "__log_progress__", Arguments: json.RawMessage(`{}`)},
	}}, res.Message)
	require.Equal(t, agent.Usage{InputTokens: 19, OutputTokens: 10, TotalTokens: 29}, res.Usage)

	// Turn 2: the results go back with the assistant's message.
	conv = append(conv, res.Message,
		agent.Message{Role: agent.RoleTool, ToolCallID: "call_1", Content: `{"status": "paid"}`},
		agent.Message{Role: agent.RoleTool, ToolCallID: "call_2", Content: "logged"})
	res, err = c.Chat(context.Background(), agent.Request{Model: "gpt-4o", Messages: conv, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, "Hello there.", res.Message.Content)

	reqs := p.requests()
	require.Len(t, reqs, 2)
	wantTools := []any{
		map[string]any{"type": "function", "function": map[string]any{
			"name":        "lookup_invoice",
			"description": "Reads one invoice by number.",
			"parameters": map[string]any{"type": "object",
				"properties": map[string]any{"number": map[string]any{"type": "string"}},
				"required":   []any{"number"}},
		}},
		map[string]any{"type": "function", "function": map[string]any{"name": "__log_progress__"}},
	}
	require.Equal(t, wantTools, reqs[0].Body["tools"])
	require.Equal(t, wantTools, reqs[1].Body["tools"])
	require.Equal(t, []any{
		map[string]any{"role": "user", "content": "Is INV-42 paid?"},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "lookup_invoice", "arguments": `{"number": "INV-42"}`}},
			map[string]any{"id": "call_2", "type": "function",
				"function": map[string]any{"name": "__log_progress__", "arguments": `{}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"status": "paid"}`},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "logged"},
	}, reqs[1].Body["messages"])
}

func TestChatToolCallArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wire string // the function object's "arguments" member as sent
		want string // agent.ToolCall.Arguments
		back string // "arguments" sent when the conversation goes back
	}{
		{name: "object in a string", wire: `"{\"a\": 1}"`, want: `{"a": 1}`, back: `{"a": 1}`},
		{name: "empty string", wire: `""`, want: `{}`, back: `{}`},
		{name: "invalid JSON kept as a string", wire: `"{\"a\": 1"`, want: `"{\"a\": 1"`, back: `{"a": 1`},
		{name: "an object, not a string (some compatible servers)", wire: `{"a": 1}`, want: `{"a": 1}`, back: `{"a": 1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, "/v1", respond(200, completion(`{"role": "assistant", "content": "",
  "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": `+tt.wire+`}}]}`,
				"tool_calls")))
			c := p.client(t, llm.Options{})
			conv := []agent.Message{{Role: agent.RoleUser, Content: "go"}}
			res, err := c.Chat(context.Background(), agent.Request{Model: "m", Messages: conv})
			require.NoError(t, err)
			require.Len(t, res.Message.ToolCalls, 1)
			require.Equal(t, tt.want, string(res.Message.ToolCalls[0].Arguments))
			_, err = json.Marshal(res.Message)
			require.NoError(t, err, "a Message always encodes")

			conv = append(conv, res.Message, agent.Message{Role: agent.RoleTool, ToolCallID: "c1", Content: "ok"})
			_, err = c.Chat(context.Background(), agent.Request{Model: "m", Messages: conv})
			require.NoError(t, err)
			sent := p.requests()[1].Body["messages"].([]any)[1].(map[string]any)
			fn := sent["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
			require.Equal(t, tt.back, fn["arguments"])
		})
	}
}

func TestChatErrorsAndRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replies []reply
		opts    llm.Options

		wantErr      error // nil: the call succeeds
		want         agent.ModelError
		wantAttempts int
		minElapsed   time.Duration
		maxElapsed   time.Duration
	}{
		{
			name: "401 is unauthorized, not retried, key redacted",
			replies: []reply{respond(401, openaiError("Incorrect API key provided: "+testKey+
				". You can find your API key at https://platform.openai.com/account/api-keys.",
				"invalid_request_error", "invalid_api_key"))},
			wantErr: agent.ErrModelUnauthorized,
			want: agent.ModelError{Kind: agent.ModelErrorUnauthorized, Status: 401,
				Message: "Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys.",
				Type:    "invalid_request_error", Code: "invalid_api_key"},
			wantAttempts: 1,
		},
		{
			name: "400 is a bad request, not retried",
			replies: []reply{respond(400, openaiError("This model's maximum context length is 128000 tokens.",
				"invalid_request_error", "context_length_exceeded"))},
			wantErr: agent.ErrModelBadRequest,
			want: agent.ModelError{Kind: agent.ModelErrorBadRequest, Status: 400,
				Message: "This model's maximum context length is 128000 tokens.",
				Type:    "invalid_request_error", Code: "context_length_exceeded"},
			wantAttempts: 1,
		},
		{
			name: "429 with Retry-After is retried after the wait, then succeeds",
			replies: []reply{
				respond(429, openaiError("Rate limit reached for gpt-4o-mini.", "requests", "rate_limit_exceeded"),
					"Retry-After", "1"),
				respond(200, textReply),
			},
			wantAttempts: 2,
			minElapsed:   950 * time.Millisecond,
		},
		{
			name:         "500 is retried with backoff, then succeeds",
			replies:      []reply{respond(500, openaiError("The server had an error.", "server_error", "")), respond(200, textReply)},
			wantAttempts: 2,
			minElapsed:   300 * time.Millisecond, // 0.5 s less up to 25 % jitter
		},
		{
			name:    "503 every time is unavailable after the retries",
			replies: []reply{respond(503, openaiError("The engine is currently overloaded.", "server_error", ""))},
			opts:    llm.Options{MaxRetries: 2},
			wantErr: agent.ErrModelUnavailable,
			want: agent.ModelError{Kind: agent.ModelErrorUnavailable, Status: 503,
				Message: "The engine is currently overloaded.", Type: "server_error"},
			wantAttempts: 3,
		},
		{
			name:    "a Retry-After beyond the call's timeout is returned at once",
			replies: []reply{respond(429, openaiError("Slow down.", "requests", "rate_limit_exceeded"), "Retry-After", "30")},
			opts:    llm.Options{Timeout: 5 * time.Second},
			wantErr: agent.ErrModelRateLimited,
			want: agent.ModelError{Kind: agent.ModelErrorRateLimited, Status: 429, Message: "Slow down.",
				Type: "requests", Code: "rate_limit_exceeded", RetryAfter: 30 * time.Second},
			wantAttempts: 1,
			maxElapsed:   2 * time.Second,
		},
		{
			name:    "Retry-After-Ms is read too",
			replies: []reply{respond(429, openaiError("Slow down.", "requests", ""), "Retry-After-Ms", "20")},
			opts:    llm.Options{MaxRetries: -1},
			wantErr: agent.ErrModelRateLimited,
			want: agent.ModelError{Kind: agent.ModelErrorRateLimited, Status: 429, Message: "Slow down.",
				Type: "requests", RetryAfter: 20 * time.Millisecond},
			wantAttempts: 1,
		},
		{
			name:    "a Retry-After over an hour is read as an hour (internal/retryafter's cap)",
			replies: []reply{respond(429, openaiError("Slow down.", "requests", ""), "Retry-After", "86400")},
			opts:    llm.Options{MaxRetries: -1},
			wantErr: agent.ErrModelRateLimited,
			want: agent.ModelError{Kind: agent.ModelErrorRateLimited, Status: 429, Message: "Slow down.",
				Type: "requests", RetryAfter: time.Hour},
			wantAttempts: 1,
		},
		{
			name:    "a fractional Retry-After is not one (the one rule: digits or a date)",
			replies: []reply{respond(429, openaiError("Slow down.", "requests", ""), "Retry-After", "1.5")},
			opts:    llm.Options{MaxRetries: -1},
			wantErr: agent.ErrModelRateLimited,
			want: agent.ModelError{Kind: agent.ModelErrorRateLimited, Status: 429, Message: "Slow down.",
				Type: "requests"},
			wantAttempts: 1,
		},
		{
			name:    "a proxy's plain-text 502",
			replies: []reply{respond(502, "Bad Gateway")},
			opts:    llm.Options{MaxRetries: -1},
			wantErr: agent.ErrModelUnavailable,
			want:    agent.ModelError{Kind: agent.ModelErrorUnavailable, Status: 502, Message: "Bad Gateway"},
			// no retries: one attempt
			wantAttempts: 1,
		},
		{
			name:         "an error that is a string",
			replies:      []reply{respond(404, `{"error": "model \"llama3:70b\" not found, try pulling it first"}`)},
			wantErr:      agent.ErrModelBadRequest,
			want:         agent.ModelError{Kind: agent.ModelErrorBadRequest, Status: 404, Message: `model "llama3:70b" not found, try pulling it first`},
			wantAttempts: 1,
		},
		{
			name: "vLLM's top-level error",
			replies: []reply{respond(400, `{"object": "error", "message": "max_tokens must be at least 1",
  "type": "BadRequestError", "param": null, "code": 400}`)},
			wantErr: agent.ErrModelBadRequest,
			want: agent.ModelError{Kind: agent.ModelErrorBadRequest, Status: 400,
				Message: "max_tokens must be at least 1", Type: "BadRequestError", Code: "400"},
			wantAttempts: 1,
		},
		{
			name:    "an answer without choices",
			replies: []reply{respond(200, `{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}`)},
			want: agent.ModelError{Kind: agent.ModelErrorOther, Status: 200,
				Message: "the answer has no choices"},
			wantErr:      &agent.ModelError{},
			wantAttempts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, "/v1", tt.replies...)
			c := p.client(t, tt.opts)

			start := time.Now()
			res, err := c.Chat(context.Background(), agent.Request{Model: "gpt-4o-mini",
				Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			elapsed := time.Since(start)

			require.Len(t, p.requests(), tt.wantAttempts)
			require.GreaterOrEqual(t, elapsed, tt.minElapsed)
			if tt.maxElapsed > 0 {
				require.Less(t, elapsed, tt.maxElapsed)
			}
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, "Hello there.", res.Message.Content)
				return
			}
			require.Nil(t, res)
			var me *agent.ModelError
			require.ErrorAs(t, err, &me)
			require.Equal(t, tt.want, *me)
			if !errors.As(tt.wantErr, new(*agent.ModelError)) {
				require.ErrorIs(t, err, tt.wantErr)
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				require.NotContains(t, s, testKey)
			}
		})
	}
}

func TestChatRetryAttemptsAreCounted(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "/v1",
		respond(429, openaiError("Slow down.", "requests", ""), "Retry-After", "0"),
		respond(429, openaiError("Slow down.", "requests", ""), "Retry-After", "0"),
		respond(200, textReply))
	c := p.client(t, llm.Options{MaxRetries: 2})

	_, err := c.Chat(context.Background(), agent.Request{Model: "m",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	var counts []string
	for _, r := range p.requests() {
		counts = append(counts, r.Header.Get("X-Stainless-Retry-Count"))
		require.Equal(t, "Bearer "+testKey, r.Header.Get("Authorization"), "every attempt is authorized")
	}
	require.Equal(t, []string{"0", "1", "2"}, counts)
}

func TestChatTimeoutAndCancellation(t *testing.T) {
	t.Parallel()
	t.Run("a server that hangs times out", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, "/v1", hang(t))
		c := p.client(t, llm.Options{Timeout: 200 * time.Millisecond})

		start := time.Now()
		_, err := c.Chat(context.Background(), agent.Request{Model: "m",
			Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		require.Less(t, time.Since(start), 2*time.Second)
		require.ErrorIs(t, err, agent.ErrModelTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "model timeout: no answer within 200ms")
		require.Len(t, p.requests(), 1, "a timeout is not retried: the budget is spent")
	})
	t.Run("cancelling the context returns promptly", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, "/v1", hang(t))
		c := p.client(t, llm.Options{Timeout: -1})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)

		start := time.Now()
		_, err := c.Chat(ctx, agent.Request{Model: "m",
			Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		require.Less(t, time.Since(start), 2*time.Second)
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorAs(t, err, new(*agent.ModelError), "the caller gave up; the model did not fail")
	})
	t.Run("cancelling during a Retry-After wait returns promptly", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, "/v1", respond(429, openaiError("Slow down.", "requests", ""), "Retry-After", "60"))
		c := p.client(t, llm.Options{Timeout: -1})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)

		start := time.Now()
		_, err := c.Chat(ctx, agent.Request{Model: "m",
			Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		require.Less(t, time.Since(start), 2*time.Second)
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, p.requests(), 1)
	})
	t.Run("the caller's deadline is the caller's", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t, "/v1", hang(t))
		c := p.client(t, llm.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()

		_, err := c.Chat(ctx, agent.Request{Model: "m",
			Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, agent.ErrModelTimeout)
	})
}

func TestChatConnectionRefusedIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := llm.New(llm.Options{BaseURL: url + "/v1", APIKey: testKey, MaxRetries: -1})
	require.NoError(t, err)

	_, err = c.Chat(context.Background(), agent.Request{Model: "m",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	require.ErrorIs(t, err, agent.ErrModelUnavailable)
	require.NotContains(t, err.Error(), testKey)
	host := strings.TrimPrefix(url, "http://")
	require.NotContains(t, err.Error(), host, "a base URL may be a secret: its host is not quoted")
	require.NotContains(t, err.Error(), "/v1", "nor the URL")
}

// TestChatUnknownHostNotQuoted: a base URL whose host does not resolve fails unavailable,
// without the host (a lookup error names it) or the URL.
func TestChatUnknownHostNotQuoted(t *testing.T) {
	t.Parallel()
	c, err := llm.New(llm.Options{BaseURL: "http://secret-llm-gateway.invalid/acct-77/v1", APIKey: testKey, MaxRetries: -1})
	require.NoError(t, err)
	_, err = c.Chat(context.Background(), agent.Request{Model: "m",
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	require.ErrorIs(t, err, agent.ErrModelUnavailable)
	require.NotContains(t, err.Error(), "secret-llm-gateway")
	require.NotContains(t, err.Error(), "acct-77")
}

func TestBaseURLWithPathPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prefix, base string
	}{
		{name: "OpenAI, vLLM, Ollama, llama.cpp", prefix: "/v1", base: "/v1"},
		{name: "trailing slash", prefix: "/v1", base: "/v1/"},
		{name: "Azure OpenAI v1", prefix: "/openai/v1", base: "/openai/v1"},
		{name: "a proxy at the root", prefix: "", base: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, tt.prefix, respond(200, textReply))
			c, err := llm.New(llm.Options{BaseURL: p.srv.URL + tt.base, APIKey: testKey})
			require.NoError(t, err)
			res, err := c.Chat(context.Background(), agent.Request{Model: "m",
				Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
			require.NoError(t, err)
			require.Equal(t, "Hello there.", res.Message.Content)
			require.Equal(t, tt.prefix+"/chat/completions", p.requests()[0].Path)
		})
	}
}

func TestNewRefusesBadBaseURLs(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"ftp://user:hunter2@example.com/v1", "localhost:11434/v1", "http://", "://x"} {
		_, err := llm.New(llm.Options{BaseURL: base})
		require.Error(t, err, base)
		require.NotContains(t, err.Error(), "hunter2")
	}
	// A value that is no URL (a key pasted into the base URL's field) is not quoted either.
	_, err := llm.New(llm.Options{BaseURL: "secrettoken123:xyz"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secrettoken123")
}

func TestChatRefusesInvalidRequestsBeforeSending(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "/v1", respond(200, textReply))
	c := p.client(t, llm.Options{})

	_, err := c.Chat(context.Background(), agent.Request{Model: "m",
		Messages: []agent.Message{{Role: agent.RoleTool, Content: "orphan result"}}})
	require.ErrorIs(t, err, agent.ErrModelBadRequest)
	require.True(t, strings.Contains(err.Error(), "tool call id"), err.Error())
	require.Empty(t, p.requests())
}
