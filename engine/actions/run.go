package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/actions/dbquery"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/outbound"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Running registered actions. A step whose type is not a kind of the Environment names one
// of its organization's registered actions (LookupAction); the action's kind decides the
// step kind that runs it. http, db and llm have an IO half (io.go): the call is made outside
// any transaction, with orgconfig: references resolved only then, into the request and
// nowhere else: a resolved value never enters the step's properties, its input summary, its
// output, an event or a log. custom-table and nway_match run the primitives' code on the
// stored properties.

// Org config keys the llm action reads.
const (
	LLMAPIKey  = orgconfig.LLMAPIKey
	LLMBaseURL = orgconfig.LLMBaseURL
)

// Defaults of the llm action when the registration leaves them out.
const (
	DefaultLLMModel     = orgconfig.DefaultLLMModel
	DefaultLLMMaxTokens = 1024
)

// EventLLMKeyMissing is emitted when an llm action runs for an organization without
// api:llm_api_key.
const EventLLMKeyMissing = "llm_key_missing"

// Options configure how actions reach other systems.
type Options struct {
	// AllowPrivateTargets lets http and db actions reach loopback, private, link-local and
	// metadata addresses; off, such a call fails with target_not_allowed.
	AllowPrivateTargets bool
	// Model returns the client of the model at baseURL ("" for the provider's default) with
	// apiKey, for llm actions.
	Model func(baseURL, apiKey string) (agent.Model, error)
}

// Store is what actions calls on its store: the organizations' registered actions, one per
// (org, name). CreateAction: ErrConflict when the name is taken in the org. ReplaceAction
// replaces every field of the action named a.Name but CreatedAt (which it sets on a from the
// stored row); ErrNotFound when there is none, as for DeleteAction. ListActions pages by
// name; the cursor is opaque.
type Store interface {
	Tx
	ListActions(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Action], error)
	ReplaceAction(ctx context.Context, a *svctype.Action) error
	DeleteAction(ctx context.Context, orgID, name string) error
}

// Tx is what actions reads and writes in a transaction of another's: a step's (the action a
// step names, read on a miss of the cache) or a publication's (PutActionTx).
type Tx interface {
	GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error)
	CreateAction(ctx context.Context, a *svctype.Action) error
}

// Actions is the organization's registered actions: their validation and storage, the
// per-process cache runs read them through, and the step kinds that run them (a
// core.StepSource).
type Actions struct {
	core  *core.Core
	store Store
	cache actionCache
	http  *outbound.Client
	db    *dbquery.Pool
	model func(baseURL, apiKey string) (agent.Model, error)
}

// New returns the registered actions over st, with c's step kinds (an action may not take
// one's name, and custom-table and nway_match actions run the kinds of those names).
func New(c *core.Core, st Store, o Options) *Actions {
	return &Actions{core: c, store: st, model: o.Model,
		http: outbound.NewClient(outbound.Options{AllowPrivateTargets: o.AllowPrivateTargets}),
		db:   dbquery.NewPool(dbquery.PoolOptions{AllowPrivateTargets: o.AllowPrivateTargets})}
}

// Register makes the organizations' actions a source of step types of c.
func (e *Actions) Register(c *core.Core) {
	c.RegisterStepSource(e)
	c.RegisterCallPlanner(e.planCalls)
}

// StepKind is the kind that runs the organization's action named stepType (core.StepSource):
// read on a miss of the cache through stx (the step's transaction), or the store when stx
// is nil.
func (e *Actions) StepKind(ctx context.Context, stx storage.Tx, orgID, stepType string) (svctype.StepKind, bool, error) {
	var q Tx = e.store
	if stx != nil {
		q = stx
	}
	return e.actionKind(ctx, q, orgID, stepType)
}

// Defines reports whether the organization has an action named stepType (core.StepSource).
func (e *Actions) Defines(ctx context.Context, orgID, stepType string) bool {
	_, err := e.LookupAction(ctx, orgID, stepType)
	return err == nil
}

// actionKind returns the step kind that runs the organization's action name; false when
// the organization has no such action.
func (e *Actions) actionKind(ctx context.Context, q Tx, orgID, name string) (svctype.StepKind, bool, error) {
	a, err := e.lookupActionIn(ctx, q, orgID, name)
	if errors.Is(err, core.ErrNotFound) {
		return svctype.StepKind{}, false, nil
	}
	if err != nil {
		return svctype.StepKind{}, false, err
	}
	switch a.Kind {
	case svctype.ActionHTTP:
		return svctype.StepKind{IO: e.httpAction(a), Run: recordRequest}, true, nil
	case svctype.ActionDB:
		return svctype.StepKind{IO: e.dbAction(a)}, true, nil
	case svctype.ActionLLM:
		return svctype.StepKind{IO: e.llmAction(a)}, true, nil
	case svctype.ActionCustomTable, svctype.ActionNWayMatch:
		// The step kind of that name says how an action of its kind runs (its Action form).
		prim, ok := e.core.Environment().Lookup(string(a.Kind))
		if !ok || prim.Action == nil {
			return svctype.StepKind{}, false, fmt.Errorf("action %q: this engine has no %s kind", name, a.Kind)
		}
		k, err := prim.Action(a.Name, a.Properties)
		if err != nil {
			return svctype.StepKind{}, false, fmt.Errorf("action %q: %w", name, err)
		}
		return k, true, nil
	}
	return svctype.StepKind{}, false, fmt.Errorf("action %q has kind %q, which this build does not run", name, a.Kind)
}

// requestDone is what an http action's IO half hands to its Run half: the output, and the
// request's evidence (method, host, status, attempts; never a header or a body).
type requestDone struct {
	output   any
	evidence map[string]any
}

// recordRequest is the Run half of an http action: it records the request's evidence with
// the step's commit and returns the response as the output.
func recordRequest(_ context.Context, call *svctype.StepCall) (any, error) {
	done, ok := call.IOResult.(*requestDone)
	if !ok {
		return call.IOResult, nil
	}
	call.AddEffect(svctype.Effect{Kind: "http_request", Target: call.Type, Detail: done.evidence})
	return done.output, nil
}

// secretValue resolves an action field: a value that is an orgconfig:<key> reference is the
// key's value; a value with one after a space ("Bearer orgconfig:api:crm") has it replaced.
// secret is the org config value it holds ("" when none), which errors must not show.
func secretValue(ctx context.Context, call *svctype.StepCall, v string) (resolved, secret string, err error) {
	before, ref, ok := headerRef(v)
	if !ok {
		return v, "", nil
	}
	s, err := call.Secret(ctx, strings.TrimPrefix(ref, orgconfig.Prefix))
	if err != nil {
		return "", "", err
	}
	return before + s, s, nil
}

// bodyProperties are the properties an action sends: without the engine's own (__*).
func bodyProperties(props map[string]any) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		if !strings.HasPrefix(k, "__") {
			out[k] = v
		}
	}
	return out
}

// templateScope is what {{ }} in an action field sees: the run's scope with the step's
// properties over it.
func templateScope(call *svctype.StepCall) map[string]any {
	vars := make(map[string]any, len(call.Vars)+len(call.Properties))
	maps.Copy(vars, call.Vars)
	maps.Copy(vars, call.Properties)
	return vars
}

func (e *Actions) httpAction(a *svctype.Action) svctype.IOFunc {
	return func(ctx context.Context, call *svctype.StepCall) (any, error) {
		// secrets are the org config values the request carries: redacted, whatever their
		// length, from anything the target answers that an error or the evidence keeps.
		var secrets []string
		target, urlName := a.URL, ""
		if strings.HasPrefix(target, orgconfig.Prefix) {
			s, err := call.Secret(ctx, strings.TrimPrefix(target, orgconfig.Prefix))
			if err != nil {
				return nil, err
			}
			// The URL is a secret: errors and evidence name the reference, never the value.
			target, urlName = s, a.URL
			secrets = append(secrets, s)
		} else {
			v, err := call.Resolve(ctx, target, templateScope(call))
			if err != nil {
				return nil, fmt.Errorf("url: %w", err)
			}
			target = fmt.Sprint(v)
		}
		headers := make(map[string]string, len(a.Headers))
		for name, v := range a.Headers {
			s, secret, err := secretValue(ctx, call, v)
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", name, err)
			}
			headers[name] = s
			if secret != "" {
				secrets = append(secrets, secret)
			}
		}
		method := a.HTTPMethod
		if method == "" {
			method = http.MethodPost
		}
		// passthrough sends the step's properties as written in the definition; otherwise
		// the body is the properties with @paths and {{templates}} resolved.
		props := call.Properties
		if a.Passthrough {
			props = call.Raw
		}
		req := outbound.Request{Method: method, URL: target, Headers: headers, IdempotencyKey: call.IdempotencyKey,
			RetryNonIdempotent: a.RetryNonIdempotent, Secrets: secrets, URLName: urlName}
		if a.TimeoutSeconds > 0 {
			req.Timeout = time.Duration(a.TimeoutSeconds) * time.Second
		}
		body := bodyProperties(props)
		if method == http.MethodGet || method == http.MethodDelete {
			var err error
			if req.URL, err = withQuery(req.URL, body); err != nil {
				if urlName != "" {
					return nil, fmt.Errorf("url %s: %w", urlName, err)
				}
				return nil, err
			}
		} else {
			req.Body = body
		}
		resp, err := e.http.Do(ctx, req)
		if err != nil {
			return nil, actionError(err)
		}
		evidence := map[string]any{"method": method, "status": resp.Status, "attempts": len(resp.Attempts)}
		if urlName != "" {
			evidence["host"] = urlName // the URL is a secret: its reference stands for it
		} else if u, perr := url.Parse(req.URL); perr == nil {
			evidence["host"] = u.Host
		}
		out := resp.Body
		if text, isText := out.(string); isText || out == nil {
			// A JSON object or array sent without a JSON content type is still JSON.
			var parsed any
			if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &parsed) == nil {
				out = parsed
			} else {
				out = map[string]any{"status": resp.Status, "text": resp.Body}
			}
		}
		return &requestDone{output: out, evidence: evidence}, nil
	}
}

// withQuery adds the scalar properties of a GET or DELETE to the url's query.
func withQuery(raw string, props map[string]any) (string, error) {
	if len(props) == 0 {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL, which may be a secret: say what, not where.
		return "", errors.New("url: malformed URL")
	}
	q := u.Query()
	for k, v := range props {
		switch x := v.(type) {
		case map[string]any, []any:
			b, _ := json.Marshal(x)
			q.Set(k, string(b))
		case nil:
		default:
			q.Set(k, fmt.Sprint(x))
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// actionError prefixes an outbound failure with its code (target_not_allowed, http_status,
// timeout, ...), which callers match on.
func actionError(err error) error {
	if code := outbound.ErrorCode(err); code != "" && !strings.HasPrefix(err.Error(), code) {
		return fmt.Errorf("%s: %w", code, err)
	}
	return err
}

func (e *Actions) dbAction(a *svctype.Action) svctype.IOFunc {
	return func(ctx context.Context, call *svctype.StepCall) (any, error) {
		key, _ := strings.CutPrefix(a.Datasource, orgconfig.Prefix)
		dsn, err := call.Secret(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("datasource: %w", err)
		}
		var params []any
		switch p := call.Properties["params"].(type) {
		case nil:
		case []any:
			params = p
		default:
			return nil, fmt.Errorf("params must be an array (got %s)", core.TypeName(p))
		}
		rows, err := e.db.Query(ctx, dsn, a.Query, params, dbquery.Options{})
		if err != nil {
			return nil, fmt.Errorf("datasource %s: %w", a.Datasource, err)
		}
		out := make([]any, len(rows))
		for i, r := range rows {
			out[i] = r
		}
		return out, nil
	}
}

func (e *Actions) llmAction(a *svctype.Action) svctype.IOFunc {
	return func(ctx context.Context, call *svctype.StepCall) (any, error) {
		key, err := call.Secret(ctx, LLMAPIKey)
		if errors.Is(err, core.ErrNotFound) {
			msg := fmt.Sprintf("the organization has no org config key %s: the llm action %q cannot call a model", LLMAPIKey, a.Name)
			return nil, svctype.FailWithEvent(errors.New("llm_key_missing: "+msg), EventLLMKeyMissing,
				map[string]any{"event": call.Type, "message": msg})
		}
		if err != nil {
			return nil, err
		}
		baseURL, err := call.Secret(ctx, LLMBaseURL)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return nil, err
		}
		prompt, err := call.Resolve(ctx, a.Template, templateScope(call))
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		model, err := e.model(baseURL, key)
		if err != nil {
			return nil, err
		}
		req := agent.Request{Model: a.Model, MaxTokens: a.MaxTokens,
			Messages: []agent.Message{{Role: agent.RoleUser, Content: fmt.Sprint(prompt)}}}
		if req.Model == "" {
			req.Model = DefaultLLMModel
		}
		if req.MaxTokens <= 0 {
			req.MaxTokens = DefaultLLMMaxTokens
		}
		resp, err := model.Chat(ctx, req)
		if err != nil {
			return nil, err
		}
		out := map[string]any{
			"text":  resp.Message.Content,
			"model": resp.Model,
			"usage": map[string]any{"input_tokens": resp.Usage.InputTokens, "output_tokens": resp.Usage.OutputTokens,
				"total_tokens": resp.Usage.TotalTokens},
			"finish_reason": string(resp.FinishReason),
		}
		var parsed any
		if t := strings.TrimSpace(resp.Message.Content); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) &&
			json.Unmarshal([]byte(t), &parsed) == nil {
			out["json"] = parsed
		}
		return out, nil
	}
}
