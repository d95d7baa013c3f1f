package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/internal/retryafter"
)

// DefaultBaseURL is OpenAI's API root, used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults of Options.
const (
	DefaultMaxRetries = 2
	DefaultTimeout    = 2 * time.Minute
)

// maxErrorBody is how much of an error answer is read for its message.
const maxErrorBody = 64 << 10

// Options configure a Client. The zero value talks to OpenAI without a key.
type Options struct {
	// BaseURL is the API root that `/chat/completions` is appended to:
	// `https://api.openai.com/v1`, `https://<resource>.openai.azure.com/openai/v1`,
	// `http://localhost:11434/v1` (Ollama), `http://localhost:8000/v1` (vLLM),
	// `http://localhost:8080/v1` (llama.cpp). Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as `Authorization: Bearer <key>`; empty sends no Authorization
	// header (local servers). It is redacted from provider messages in errors.
	APIKey string
	// HTTPClient makes the requests; nil means a client of its own on
	// http.DefaultTransport. Its own Timeout, if any, applies to each attempt.
	HTTPClient *http.Client
	// MaxRetries is how many times a call is repeated after a 408, 409, 429, 5xx or a
	// connection error, waiting as Retry-After says or backing off (0.5 s doubling, at
	// most 8 s). 0 means DefaultMaxRetries; negative means none.
	MaxRetries int
	// Timeout bounds one Chat call, retries and their waits included; when it passes
	// the call fails with ErrModelTimeout. 0 means DefaultTimeout; negative means none
	// (the caller's context still applies).
	Timeout time.Duration
	// MaxCompletionTokens sends Request.MaxTokens as `max_completion_tokens` instead of
	// `max_tokens`: OpenAI's reasoning models require it, while most compatible servers
	// know only `max_tokens`.
	MaxCompletionTokens bool
}

// Client is an agent.Model over an OpenAI-compatible chat-completions API, built on the
// official SDK (github.com/openai/openai-go). It is safe for concurrent use.
type Client struct {
	chat                openai.ChatCompletionService
	apiKey              string
	hosts               []string // the base URL's host and host name, which errors do not quote
	timeout             time.Duration
	maxCompletionTokens bool
}

var _ agent.Model = (*Client)(nil)

// New returns a Client for o. It makes no request.
func New(o Options) (*Client, error) {
	base := o.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not quoted: a base URL may be a secret (an org config value), and a value that is
		// no URL at all may be a key pasted into the wrong field. The caller names it.
		return nil, errors.New("llm: base URL is not an http(s) URL")
	}
	retries := o.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	// NewChatCompletionService, unlike openai.NewClient, reads no environment variables:
	// a tenant without a key must not be served with the platform's OPENAI_API_KEY.
	opts := []option.RequestOption{
		option.WithBaseURL(u.String()),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(retries),
		option.WithMiddleware(observe),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	return &Client{
		chat:                openai.NewChatCompletionService(opts...),
		apiKey:              o.APIKey,
		hosts:               []string{u.Host, u.Hostname()},
		timeout:             timeout,
		maxCompletionTokens: o.MaxCompletionTokens,
	}, nil
}

// Chat sends req to `<BaseURL>/chat/completions` and returns the first choice.
func (c *Client) Chat(ctx context.Context, req agent.Request) (*agent.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.timeout > 0 {
		callCtx, cancel = context.WithTimeoutCause(ctx, c.timeout, errCallTimeout)
	}
	defer cancel()
	st := &callState{}
	callCtx = context.WithValue(callCtx, callStateKey{}, st)

	res, err := c.chat.New(callCtx, params)
	if err != nil {
		return nil, c.classify(ctx, callCtx, st, err)
	}
	return c.response(res)
}

func (c *Client) params(req agent.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	for _, m := range req.Messages {
		switch m.Role {
		case agent.RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case agent.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case agent.RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case agent.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: argumentsText(tc.Arguments),
						},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			if err := json.Unmarshal(t.Parameters, &fn.Parameters); err != nil {
				return p, &agent.ModelError{Kind: agent.ModelErrorBadRequest,
					Message: fmt.Sprintf("tool %q: parameters: %v", t.Name, err)}
			}
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if c.maxCompletionTokens {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.JSON {
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	return p, nil
}

func (c *Client) response(res *openai.ChatCompletion) (*agent.Response, error) {
	if len(res.Choices) == 0 {
		return nil, &agent.ModelError{Kind: agent.ModelErrorOther, Status: http.StatusOK,
			Message: "the answer has no choices"}
	}
	choice := res.Choices[0]
	msg := agent.Message{Role: agent.RoleAssistant, Content: choice.Message.Content}
	if msg.Content == "" && choice.Message.Refusal != "" {
		msg.Content = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		call := agent.ToolCall{ID: tc.ID}
		switch tc.Type {
		case "custom":
			call.Name = tc.Custom.Name
			call.Arguments, _ = json.Marshal(tc.Custom.Input)
		default: // "function"; some servers leave the type out
			call.Name = tc.Function.Name
			args := tc.Function.Arguments
			// Some compatible servers send the arguments as an object, not a string.
			if raw := strings.TrimSpace(tc.Function.JSON.Arguments.Raw()); strings.HasPrefix(raw, "{") {
				args = raw
			}
			call.Arguments = argumentsJSON(args)
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	u := agent.Usage{
		InputTokens:  int(res.Usage.PromptTokens),
		OutputTokens: int(res.Usage.CompletionTokens),
		TotalTokens:  int(res.Usage.TotalTokens),
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return &agent.Response{
		Message:      msg,
		Usage:        u,
		FinishReason: agent.FinishReason(choice.FinishReason),
		Model:        res.Model,
	}, nil
}

// argumentsJSON keeps what the model wrote as JSON: as is when valid, `{}` when empty,
// else as a JSON string holding the text.
func argumentsJSON(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	q, _ := json.Marshal(s)
	return q
}

// argumentsText is argumentsJSON's inverse, for sending a conversation back.
func argumentsText(a json.RawMessage) string {
	t := bytes.TrimSpace(a)
	if len(t) == 0 {
		return "{}"
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}

var errCallTimeout = errors.New("llm: call timeout")

// classify turns what the SDK returned into the error Chat returns. ctx is the caller's,
// callCtx the call's (with Timeout); st holds the last answer the middleware saw.
func (c *Client) classify(ctx, callCtx context.Context, st *callState, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("model call abandoned: %w", ctx.Err())
	}
	if context.Cause(callCtx) == errCallTimeout {
		return &agent.ModelError{Kind: agent.ModelErrorTimeout,
			Message: fmt.Sprintf("no answer within %s", c.timeout), Err: context.DeadlineExceeded}
	}
	if st.status >= 400 {
		e := &agent.ModelError{
			Kind:       agent.ModelErrorKindForStatus(st.status),
			Status:     st.status,
			RetryAfter: st.retryAfter,
		}
		e.Message, e.Type, e.Code = errorBody(st.body)
		if e.Message == "" {
			e.Message = http.StatusText(st.status)
		}
		e.Message, e.Type, e.Code = c.redact(e.Message), c.redact(e.Type), c.redact(e.Code)
		return e
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &agent.ModelError{Kind: agent.ModelErrorTimeout, Err: c.unquoted(err)}
	}
	var ue *url.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return &agent.ModelError{Kind: agent.ModelErrorUnavailable, Err: c.unquoted(err)}
	}
	return &agent.ModelError{Kind: agent.ModelErrorOther, Status: st.status,
		Message: c.redact(err.Error())}
}

// redact removes the API key from text the provider wrote (a proxy may echo it).
// Keys shorter than 4 characters are placeholders local servers ignore; replacing them
// would only garble the message.
func (c *Client) redact(s string) string {
	if len(c.apiKey) < 4 {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, "[redacted]")
}

// errorBody reads the provider's message, type and code from an error answer:
// OpenAI's `{"error": {"message", "type", "code"}}`, `{"error": "text"}`, vLLM's
// top-level `{"message", "type", "code"}`, or plain text.
func errorBody(body []byte) (message, typ, code string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &v) != nil {
		text := strings.TrimSpace(string(body))
		if len(text) > 500 {
			text = text[:500] + "..."
		}
		return text, "", ""
	}
	var s string
	if len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil {
		return s, "", ""
	}
	if len(v.Error) > 0 && v.Error[0] == '{' {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			return inner.Message, inner.Type, rawCode(inner.Code)
		}
	}
	return v.Message, v.Type, rawCode(v.Code)
}

func rawCode(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	if t := string(bytes.TrimSpace(r)); t != "null" {
		return t
	}
	return ""
}

// callState records the last answer of a call's attempts, so an error is classified from
// its status, headers and body whatever shape the body has (the SDK's error type keeps
// the status only when the body is OpenAI's shape).
type callState struct {
	status     int
	retryAfter time.Duration
	body       []byte
}

type callStateKey struct{}

// observe is the SDK middleware that fills callState. It also stops the SDK from
// retrying when the wait the provider asks for would outlast the call's deadline: the
// caller then gets the rate limit with its RetryAfter at once, instead of a timeout
// after waiting in vain.
func observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	st, _ := req.Context().Value(callStateKey{}).(*callState)
	if st == nil {
		return res, err
	}
	*st = callState{}
	if res == nil {
		return res, err
	}
	st.status = res.StatusCode
	if res.StatusCode < 400 {
		return res, err
	}
	st.retryAfter = retryAfter(res.Header, time.Now())
	if res.Body != nil {
		st.body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		res.Body = readCloser{io.MultiReader(bytes.NewReader(st.body), res.Body), res.Body}
	}
	if deadline, ok := req.Context().Deadline(); ok && st.retryAfter > 0 &&
		time.Now().Add(st.retryAfter).After(deadline) {
		res.Header.Set("X-Should-Retry", "false")
	}
	return res, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// retryAfter reads the wait a provider asks for: `Retry-After-Ms` (OpenAI's, in
// milliseconds, fractions allowed), then `Retry-After` by the one rule of internal/retryafter
// (seconds or an HTTP date). Both are capped at retryafter.Max. 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return min(time.Duration(ms*float64(time.Millisecond)), retryafter.Max)
		}
	}
	d, _ := retryafter.Parse(h.Get("Retry-After"), now)
	return d
}

// unquoted is a transport error without the request's URL (net/http's url.Error quotes
// it) and with the base URL's host left out of the rest (a lookup names the host): the
// base URL may be a secret. The chain is kept for errors.Is and errors.As.
func (c *Client) unquoted(err error) error {
	text := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		text = ue.Err.Error()
	}
	for _, h := range c.hosts {
		if h != "" {
			text = strings.ReplaceAll(text, h, "(the base URL's host)")
		}
	}
	return &transportError{text: text, err: err}
}

type transportError struct {
	text string
	err  error
}

func (e *transportError) Error() string { return e.text }
func (e *transportError) Unwrap() error { return e.err }
