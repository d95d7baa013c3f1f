package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/svcflow/svcflow/agent"
)

// Errors of the scripted model, for errors.Is.
var (
	// ErrScriptExhausted: the model was asked for more turns than the script recorded.
	ErrScriptExhausted = errors.New("scripted model: no more recorded turns")
	// ErrScriptMismatch: a request's last message is not what the turn expects.
	ErrScriptMismatch = errors.New("scripted model: request does not match the script")
)

// Script is a recorded conversation: the model's side of it, turn by turn. In JSON:
//
//	{"turns": [
//	  {"expect": {"role": "user", "contains": "invoice 42"},
//	   "reply": {"tool_calls": [{"id": "call_1", "name": "lookup", "arguments": {"id": 42}}]},
//	   "usage": {"input_tokens": 120, "output_tokens": 18}},
//	  {"expect": {"role": "tool", "tool_call_id": "call_1"},
//	   "reply": {"content": "Invoice 42 is paid."}},
//	  {"error": {"kind": "rate_limited", "status": 429, "retry_after_seconds": 20}}
//	]}
type Script struct {
	Turns []Turn `json:"turns"`
}

// Turn is one model call: what the request's last message should be (optional), and the
// reply or the error to answer with.
type Turn struct {
	// Expect, when set, is checked against the request's last message.
	Expect *Expect `json:"expect,omitempty"`
	// Reply is the assistant's message: content, tool calls or both. Its role may be left
	// out.
	Reply agent.Message `json:"reply"`
	// Usage is reported as is, with TotalTokens filled in when zero.
	Usage agent.Usage `json:"usage"`
	// FinishReason defaults to tool_calls when the reply has tool calls, else stop.
	FinishReason agent.FinishReason `json:"finish_reason,omitempty"`
	// Model is the answering model's name; empty means the request's.
	Model string `json:"model,omitempty"`
	// Error, when set, makes the turn fail with a *agent.ModelError instead of replying.
	Error *TurnError `json:"error,omitempty"`
}

// Expect describes the last message of the request a turn answers. Empty fields are not
// checked.
type Expect struct {
	Role agent.Role `json:"role,omitempty"`
	// Content must equal the message's content.
	Content string `json:"content,omitempty"`
	// Contains must occur in the message's content.
	Contains string `json:"contains,omitempty"`
	// ToolCallID must be the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// TurnError is a provider failure to replay.
type TurnError struct {
	Kind              agent.ModelErrorKind `json:"kind"`
	Status            int                  `json:"status,omitempty"`
	Message           string               `json:"message,omitempty"`
	Type              string               `json:"type,omitempty"`
	Code              string               `json:"code,omitempty"`
	RetryAfterSeconds float64              `json:"retry_after_seconds,omitempty"`
}

// LoadScript reads a Script from a JSON file.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("llm: load script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return Script{}, fmt.Errorf("llm: load script %s: %w", path, err)
	}
	return s, nil
}

// ParseScript decodes a Script from JSON and checks every turn. Unknown fields are
// refused, so a misspelt "expect" does not silently check nothing.
func ParseScript(data []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("parse script: %w", err)
	}
	for i, t := range s.Turns {
		if err := t.check(); err != nil {
			return Script{}, fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	return s, nil
}

func (t Turn) check() error {
	if t.Reply.Role != "" && t.Reply.Role != agent.RoleAssistant {
		return fmt.Errorf("reply role %q: a reply is the assistant's", t.Reply.Role)
	}
	for j, c := range t.Reply.ToolCalls {
		if c.ID == "" || c.Name == "" {
			return fmt.Errorf("tool call %d needs an id and a name", j+1)
		}
		if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			return fmt.Errorf("tool call %d: arguments are not JSON", j+1)
		}
	}
	if t.Error != nil && t.Error.Kind == "" {
		return errors.New("error needs a kind")
	}
	return nil
}

// Scripted is an agent.Model that replays a Script, one turn per call, in order. It is
// safe for concurrent use, though a script only makes sense for one conversation.
type Scripted struct {
	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []agent.Request
}

var _ agent.Model = (*Scripted)(nil)

// NewScripted returns a model that answers with turns, in order.
func NewScripted(turns ...Turn) *Scripted {
	return &Scripted{turns: turns}
}

// Chat answers with the next turn. It fails with ErrScriptExhausted when every turn is
// spent and with ErrScriptMismatch when the request's last message is not what the turn
// expects (the turn is then not spent); a request that fails agent.Request.Validate fails
// as it would against a provider.
func (s *Scripted) Chat(ctx context.Context, req agent.Request) (*agent.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("model call abandoned: %w", err)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	last := req.Messages[len(req.Messages)-1]

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.turns) {
		return nil, fmt.Errorf("%w: asked for turn %d of %d; last message %s",
			ErrScriptExhausted, s.next+1, len(s.turns), describe(last))
	}
	t := s.turns[s.next]
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("scripted model: turn %d: %w", s.next+1, err)
	}
	if t.Expect != nil {
		if err := t.Expect.match(last); err != nil {
			return nil, fmt.Errorf("%w: turn %d: %v", ErrScriptMismatch, s.next+1, err)
		}
	}
	s.next++
	s.requests = append(s.requests, cloneRequest(req))

	if t.Error != nil {
		return nil, &agent.ModelError{
			Kind:       t.Error.Kind,
			Status:     t.Error.Status,
			Message:    t.Error.Message,
			Type:       t.Error.Type,
			Code:       t.Error.Code,
			RetryAfter: time.Duration(t.Error.RetryAfterSeconds * float64(time.Second)),
		}
	}
	msg := cloneMessage(t.Reply)
	msg.Role = agent.RoleAssistant
	for i := range msg.ToolCalls {
		if len(msg.ToolCalls[i].Arguments) == 0 {
			msg.ToolCalls[i].Arguments = json.RawMessage("{}")
		}
	}
	finish := t.FinishReason
	if finish == "" {
		finish = agent.FinishStop
		if len(msg.ToolCalls) > 0 {
			finish = agent.FinishToolCalls
		}
	}
	usage := t.Usage
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	model := t.Model
	if model == "" {
		model = req.Model
	}
	return &agent.Response{Message: msg, Usage: usage, FinishReason: finish, Model: model}, nil
}

// Remaining is the number of turns not yet played; a test ends with it at 0.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

// Requests returns copies of the requests answered so far, for tests to inspect.
func (s *Scripted) Requests() []agent.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]agent.Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = cloneRequest(r)
	}
	return out
}

func (e Expect) match(m agent.Message) error {
	switch {
	case e.Role != "" && m.Role != e.Role:
		return fmt.Errorf("expected the last message from %s, got %s", e.Role, describe(m))
	case e.ToolCallID != "" && m.ToolCallID != e.ToolCallID:
		return fmt.Errorf("expected a result of tool call %q, got %s", e.ToolCallID, describe(m))
	case e.Content != "" && m.Content != e.Content:
		return fmt.Errorf("expected content %q, got %s", clip(e.Content), describe(m))
	case e.Contains != "" && !strings.Contains(m.Content, e.Contains):
		return fmt.Errorf("expected content containing %q, got %s", clip(e.Contains), describe(m))
	}
	return nil
}

func describe(m agent.Message) string {
	s := fmt.Sprintf("%s %q", m.Role, clip(m.Content))
	if m.ToolCallID != "" {
		s += " answering " + m.ToolCallID
	}
	return s
}

func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "..."
	}
	return s
}

// Recorder is an agent.Model that passes each call to another Model and records the
// exchange as a Script turn: run a conversation against a real provider once, save
// Script() as JSON, replay it with Scripted.
type Recorder struct {
	model agent.Model
	mu    sync.Mutex
	turns []Turn
}

var _ agent.Model = (*Recorder)(nil)

// NewRecorder records the calls made through it to m.
func NewRecorder(m agent.Model) *Recorder { return &Recorder{model: m} }

// Chat calls the wrapped model and records the request's last message as the turn's
// expectation (role, exact content, tool call id) and the reply or the model error.
func (r *Recorder) Chat(ctx context.Context, req agent.Request) (*agent.Response, error) {
	res, err := r.model.Chat(ctx, req)
	var me *agent.ModelError
	if err != nil && !errors.As(err, &me) {
		return res, err // cancellations and the like are not the model's answer
	}
	t := Turn{}
	if n := len(req.Messages); n > 0 {
		last := req.Messages[n-1]
		t.Expect = &Expect{Role: last.Role, Content: last.Content, ToolCallID: last.ToolCallID}
	}
	if me != nil {
		t.Error = &TurnError{Kind: me.Kind, Status: me.Status, Message: me.Message,
			Type: me.Type, Code: me.Code, RetryAfterSeconds: me.RetryAfter.Seconds()}
	} else {
		t.Reply, t.Usage, t.FinishReason, t.Model = cloneMessage(res.Message), res.Usage, res.FinishReason, res.Model
	}
	r.mu.Lock()
	r.turns = append(r.turns, t)
	r.mu.Unlock()
	return res, err
}

// Script returns what was recorded so far.
func (r *Recorder) Script() Script {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Script{Turns: append([]Turn(nil), r.turns...)}
}

func cloneMessage(m agent.Message) agent.Message {
	if m.ToolCalls != nil {
		calls := make([]agent.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Arguments = bytes.Clone(c.Arguments)
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	return m
}

func cloneRequest(r agent.Request) agent.Request {
	msgs := make([]agent.Message, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = cloneMessage(m)
	}
	r.Messages = msgs
	if r.Tools != nil {
		tools := make([]agent.Tool, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = bytes.Clone(t.Parameters)
			tools[i] = t
		}
		r.Tools = tools
	}
	if r.Temperature != nil {
		v := *r.Temperature
		r.Temperature = &v
	}
	return r
}
