package svctype

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/svcflow/svcflow/internal/jsonnum"
	"log/slog"
)

// Sentinel errors shared by the engine, its store and step kinds; package engine re-exports
// them (engine.ErrNotFound is svctype.ErrNotFound).
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrLeaseLost = errors.New("job lease lost")
)

// Definition is a workflow's specification.
type Definition struct {
	Condition any       `json:"condition,omitempty"`
	Actions   []Step    `json:"actions"`
	Schedule  *Schedule `json:"schedule,omitempty"`
	// SearchKeys are paths into the input (@input.invoice_id) whose values find the
	// workflow's runs (GET /runs?key=).
	SearchKeys []string `json:"search_keys,omitempty"`
}

// Schedule makes the worker start runs on its own: every <n><unit> (m, h, d, w), at HH:MM,
// in timezone (IANA, default UTC).
type Schedule struct {
	Every    string `json:"every,omitempty"`
	At       string `json:"at,omitempty"`
	Timezone string `json:"timezone,omitempty"`
}

// Step is one entry of definition.actions (or of a loop's steps, or an onFalse).
type Step struct {
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
	Filter     *StepFilter    `json:"filter,omitempty"`
	OnFalse    *Step          `json:"onFalse,omitempty"`
	OutputKey  string         `json:"outputKey,omitempty"`
}

// StepFilter gates a step.
type StepFilter struct {
	Condition any `json:"condition"`
}

// ParseDefinition decodes a definition; structural validation is the engine's. Numbers in
// its properties and conditions are json.Number, kept as written (read a setting with
// Float).
func ParseDefinition(raw json.RawMessage) (*Definition, error) {
	var d Definition
	if err := jsonnum.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Float reads a number from a definition's properties or a decoded JSON value: numbers
// are json.Number there (kept as written, docs/decisions.md "Numbers kept exactly"); a
// float64 that a Go caller put in is one too. For a setting (a count, a number of
// seconds), not for data: data compares exactly, as its text.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	}
	return 0, false
}

// JSONType names the JSON type of a decoded value for messages: null, array, object,
// string, number, boolean; a value of another Go type is named by its type.
func JSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// StepFunc runs one step kind. It returns the step's output (stored under outputKey) or an
// error that fails the run with its message. It runs inside the step's transaction: what it
// writes through call.Tables commits with the step's output and events, or not at all.
type StepFunc func(ctx context.Context, call *StepCall) (any, error)

// IOFunc is the half of a step kind that reaches the outside world (an HTTP call, a query
// of another database, a model call). It runs outside any transaction, with call.Tables
// nil, in the engine's I/O pool rather than in a step slot, and must not write the store.
// call.IdempotencyKey is the same on every try of the same call (run id, step index, loop
// position): a call repeated after a crash carries it again, so the receiver can tell.
// Whatever it returns is handed to the kind's Run (as call.IOResult) inside the step's
// transaction, or, when the kind has no Run, is the step's output.
type IOFunc func(ctx context.Context, call *StepCall) (any, error)

// StepCall is what a step kind gets to work with.
type StepCall struct {
	OrgID      string
	RunID      string
	WorkflowID string
	// Index is the top-level step index (inside a foreach, the loop's index).
	Index int
	Type  string
	// Properties are the step's properties with @paths and {{templates}} resolved.
	Properties map[string]any
	// Raw are the properties as written, for kinds that evaluate parts later themselves
	// (nway_match rules, evaluated per group).
	Raw map[string]any
	// Vars is the evaluation scope the properties were resolved in.
	Vars map[string]any
	// Tables writes and reads custom tables inside the step's transaction.
	Tables TableStore
	// Resolve evaluates a value (@paths, {{templates}}, doc: references) in vars with the
	// engine's evaluator, for kinds that resolve stored configuration themselves.
	Resolve func(ctx context.Context, value any, vars map[string]any) (any, error)
	// Logger logs for the step, with the run and step attached.
	Logger *slog.Logger

	// IdempotencyKey names this call of the step: "<run id>/<step index>", and inside a
	// foreach "<run id>/<step index>/<element>/<sub-step>" (nested loops add pairs). It is
	// the same on every try, so an outbound request carries it as Idempotency-Key.
	IdempotencyKey string
	// Try counts the tries of this call across claims: 1, or more when an earlier worker
	// made the call and stopped before committing its result.
	Try int
	// IOResult is what the kind's IO half returned, for its Run half (nil otherwise).
	IOResult any
	// Secret returns the plaintext of one of the organization's config keys (orgconfig:),
	// for the IO half to put into a request. The value must never be returned as output,
	// logged, or put into an error: the error for a missing key names the key only.
	Secret func(ctx context.Context, key string) (string, error)

	emit   func(event string, payload map[string]any)
	effect func(Effect)
}

// NewStepCall wires the emit and effect sinks; the engine calls it.
func NewStepCall(emit func(string, map[string]any), effect func(Effect)) *StepCall {
	return &StepCall{emit: emit, effect: effect}
}

// Emit writes an event to the outbox in the step's transaction. run_id and step_index are
// added to the payload when absent and the event's catalogue entry (engine/events) lists
// them; an event outside the catalogue gets both.
func (c *StepCall) Emit(event string, payload map[string]any) {
	if c.emit != nil {
		c.emit(event, payload)
	}
}

// AddEffect records a durable change the step made, for the run's evidence.
func (c *StepCall) AddEffect(e Effect) {
	if c.effect != nil {
		c.effect(e)
	}
}

// StepKind is a registered step type: Run executes it; Validate, when set, checks a step's
// properties at workflow create time and returns problems located by JSON pointers relative
// to the properties object ("/table").
type StepKind struct {
	// Run executes the step inside its transaction. A kind with IO may leave it nil.
	Run StepFunc
	// IO, when set, does the step's outside-world work first, outside any transaction
	// (see IOFunc).
	IO IOFunc
	// ReadOnly, when set, reports whether a step with these properties (as written, before
	// they are resolved) only reads through call.Tables. The executor may then run Run for a
	// top-level step before the step's transaction, on committed data (on SQLite the read
	// pool, without the one writer), and commit its output and the events it emitted in the
	// transaction after (a matcher's). Such a call's effects are dropped: a read makes none.
	ReadOnly func(props map[string]any) bool
	// DocRows, when set, is the most rows a doc: reference among this kind's properties may
	// extract, instead of the limit every other doc: reference has (10,000): for kinds that
	// read a document whole by design and keep only their results (the matchers' legs).
	DocRows int
	// RawProperties names properties this kind also takes as RawJSON: when one is written
	// as a plain path into a large value the engine holds as bytes ("@input.bank"), the
	// step gets that array's bytes instead of its decoded elements (the matchers' legs).
	// A doc: reference there may also be given as its document's records read from the
	// document's bytes (SourceRecords: a plain CSV file, documents.CSVRecords).
	RawProperties []string
	Validate      func(props map[string]any) []PropertyProblem
	// FailedEvent, when set, is emitted whenever a step of this kind fails, also when its
	// properties do not resolve (a missing doc: reference) before Run is called.
	FailedEvent string
	// Action, when set, lets an action be of this kind, its configuration being properties
	// of the kind (an organization's, through the /actions routes, or one an embedding
	// program declares with Environment.RegisterAction): it returns the step kind that runs
	// the action called name with the properties it stores, checked first. How the stored
	// properties meet a step's is the kind's to say.
	Action func(name string, properties map[string]any) (StepKind, error)
}

// PropertyProblem is one thing wrong with a step's properties.
type PropertyProblem struct {
	Pointer string
	Message string
}

type orgKey struct{}

type docRowsKey struct{}

type rawJSONKey struct{}

// WithRawJSON returns ctx asking a prefix resolver (doc:) for the value as RawJSON when it
// can give it so: a property of StepKind.RawProperties is resolved with it.
func WithRawJSON(ctx context.Context) context.Context {
	return context.WithValue(ctx, rawJSONKey{}, true)
}

// RawJSONWanted reports whether WithRawJSON was put on ctx.
func RawJSONWanted(ctx context.Context) bool {
	b, _ := ctx.Value(rawJSONKey{}).(bool)
	return b
}

// WithDocRows returns ctx carrying the row limit of the doc: references resolved in it
// (StepKind.DocRows); DocRows reads it, 0 when none is set.
func WithDocRows(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, docRowsKey{}, n)
}

// DocRows is the row limit WithDocRows put on ctx, or 0.
func DocRows(ctx context.Context) int {
	n, _ := ctx.Value(docRowsKey{}).(int)
	return n
}

// WithOrg returns ctx carrying the organization a piece of work belongs to. The executor sets
// it before resolving a step's properties, so prefix resolvers (doc:, orgconfig:) read the
// right organization's data.
func WithOrg(ctx context.Context, orgID string) context.Context {
	return context.WithValue(ctx, orgKey{}, orgID)
}

// OrgFrom returns the organization WithOrg put in ctx, or "".
func OrgFrom(ctx context.Context) string {
	s, _ := ctx.Value(orgKey{}).(string)
	return s
}

// RawJSON is a property's value as JSON bytes, not decoded (StepKind.RawProperties): an
// array of a large value, the records a matcher reads without a map per record. It encodes
// as the bytes it holds.
type RawJSON []byte

// MarshalJSON writes the bytes held.
func (r RawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// SourceRecords is an array of records a prefix resolver gives for a property of
// StepKind.RawProperties, read from its document's own bytes rather than made into JSON
// (documents.CSVRecords); the kind reads it through its concrete type. The engine
// summarises it by its length and size, and never encodes it.
type SourceRecords interface {
	Len() int
	Size() int
}

// EncodedArray is a step output that is a JSON array already encoded, element by element
// (a matcher's pairs written from its records' bytes): the engine stores it part by part
// as it is, and decodes it only if a later step reads into it.
type EncodedArray interface {
	// Len is the number of elements.
	Len() int
	// AppendArray appends the JSON array of elements from to to-1.
	AppendArray(dst []byte, from, to int) ([]byte, error)
}

// ContextOutputs is a step output that names its own context keys (the matcher's
// outputMatched/outputUnmatched*, nway_match's fixed keys): each entry is stored under its
// key. A step's outputKey, when set, receives the whole map as well.
type ContextOutputs map[string]any

// StepFailedError is a step failure that carries an event to emit with the run's failure
// (matcher.failed, nway_matcher.failed): the step's own transaction is rolled back, so the
// event is written in the failure's transaction instead.
type StepFailedError struct {
	Err     error
	Event   string
	Payload map[string]any
}

func (e *StepFailedError) Error() string { return e.Err.Error() }
func (e *StepFailedError) Unwrap() error { return e.Err }

// FailWithEvent fails the step with err and has the engine emit event with the failure:
// run_id, step_index and `error` (the failure's message) are added to payload when absent
// and the event's catalogue entry (engine/events) lists them; an event outside the
// catalogue gets all three.
func FailWithEvent(err error, event string, payload map[string]any) error {
	return &StepFailedError{Err: err, Event: event, Payload: payload}
}

// Detached returns a copy of c whose Emit and AddEffect do nothing: an IO half runs after
// its unit's transaction rolled back, so what it emitted would belong to no commit. It
// hands what the commit should record to the kind's Run half through its result.
func (c *StepCall) Detached() *StepCall {
	d := *c
	d.emit, d.effect = nil, nil
	return &d
}
