// Package actions is an organization's registered actions (spec: Actions): named
// configurations of the kinds http, db, llm, custom-table and nway_match that workflow steps
// name as their type. It validates and stores them, keeps the cache runs read them through,
// and supplies the run core with the step kinds that run them (core.StepSource); http, db
// and llm actions are outside calls, their org config references resolved only then. The
// clients of those calls are engine/outbound (HTTP, shared with the other features) and its
// subpackage dbquery (SQL).
package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Registered actions: an organization's named configurations of the kinds http, db, llm,
// custom-table and nway_match, stored by the engine's Store and named by workflow steps as
// their type. This file validates and stores them and keeps the executor's cache of them;
// running one is the executor's (and each kind's) business.

// Bounds of an action registration.
const (
	// MaxActionNameLen is the longest action_name: 1 to 100 letters, digits and _-.
	MaxActionNameLen = 100
	// MaxActionTimeoutSeconds bounds an http action's timeout_seconds (1 to 300).
	MaxActionTimeoutSeconds = 300
	// MaxActionTokens bounds an llm action's max_tokens (1 to 100,000).
	MaxActionTokens = 100000
	// MaxActionDescriptionLen bounds description, which agents read as the tool's purpose.
	MaxActionDescriptionLen = 2000
	// maxActionText bounds a url, a header value, a query and a model name; a template is
	// bounded by expr.CheckTemplate (64 KiB).
	maxActionText = 64 << 10
)

// HTTP methods an http action may use; POST when absent.
var actionMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

var actionNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// actionFields are the kind-specific fields of each kind, by their JSON names.
var actionFields = map[svctype.ActionKind][]string{
	svctype.ActionHTTP:        {"url", "http_method", "headers", "passthrough", "retry_non_idempotent", "timeout_seconds"},
	svctype.ActionDB:          {"datasource", "query"},
	svctype.ActionLLM:         {"template", "model", "max_tokens"},
	svctype.ActionCustomTable: {"properties"},
	svctype.ActionNWayMatch:   {"properties"},
}

// setActionFields lists the kind-specific fields a has set (not zero), in a fixed order.
func setActionFields(a *svctype.Action) []string {
	set := []struct {
		name string
		on   bool
	}{
		{"url", a.URL != ""},
		{"http_method", a.HTTPMethod != ""},
		{"headers", a.Headers != nil},
		{"passthrough", a.Passthrough},
		{"retry_non_idempotent", a.RetryNonIdempotent},
		{"timeout_seconds", a.TimeoutSeconds != 0},
		{"datasource", a.Datasource != ""},
		{"query", a.Query != ""},
		{"template", a.Template != ""},
		{"model", a.Model != ""},
		{"max_tokens", a.MaxTokens != 0},
		{"properties", a.Properties != nil},
	}
	var out []string
	for _, f := range set {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// checkAction validates a registration and returns it as it will be stored (defaults
// filled), or a ValidationError whose pointers are relative to the registration body
// (/url, /properties/table).
func (e *Actions) checkAction(in svctype.Action) (*svctype.Action, error) {
	a := in
	var ps []core.Problem
	add := func(pointer, format string, args ...any) {
		ps = append(ps, core.Problem{Pointer: pointer, Message: fmt.Sprintf(format, args...)})
	}
	ps = append(ps, e.checkActionName(a.Name)...)
	if utf8.RuneCountInString(a.Description) > MaxActionDescriptionLen {
		add("/description", "at most %d characters", MaxActionDescriptionLen)
	}
	fields, known := actionFields[a.Kind]
	if !known {
		if a.Kind == "" {
			add("/kind", "required: one of %s", kindList())
		} else {
			add("/kind", "unknown action kind %q: one of %s", a.Kind, kindList())
		}
		return nil, &core.ValidationError{Problems: ps}
	}
	// A field of another kind is refused rather than ignored: it is a typo or a
	// misunderstanding, and a stored action that silently drops part of what was sent
	// does something other than what its author reads in the request.
	for _, f := range setActionFields(&a) {
		if !slices.Contains(fields, f) {
			add("/"+f, "is not a field of %s actions (their fields: %s)", a.Kind, strings.Join(fields, ", "))
		}
	}
	switch a.Kind {
	case svctype.ActionHTTP:
		if a.HTTPMethod == "" {
			a.HTTPMethod = "POST"
		}
		ps = append(ps, checkHTTPAction(&a)...)
	case svctype.ActionDB:
		ps = append(ps, checkDBAction(&a)...)
	case svctype.ActionLLM:
		ps = append(ps, checkLLMAction(&a)...)
	case svctype.ActionCustomTable, svctype.ActionNWayMatch:
		ps = append(ps, e.checkPropertiesAction(&a)...)
	}
	if len(ps) > 0 {
		return nil, &core.ValidationError{Problems: ps}
	}
	return &a, nil
}

func kindList() string {
	names := make([]string, len(svctype.ActionKinds))
	for i, k := range svctype.ActionKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// checkActionName: 1-100 of [A-Za-z0-9_.-], and not the name of a step type: a workflow
// step names an action by its type, and a primitive, a pause kind or a kind the Environment
// runs would win. The run core's registry knows them all (core.IsStepType): what the
// features registered, and the built-in primitives whatever the Environment holds.
func (e *Actions) checkActionName(name string) []core.Problem {
	switch {
	case name == "":
		return []core.Problem{{Pointer: "/action_name", Message: "required: 1-100 letters, digits, '_', '-' or '.'"}}
	case len(name) > MaxActionNameLen:
		return []core.Problem{{Pointer: "/action_name", Message: fmt.Sprintf("at most %d characters", MaxActionNameLen)}}
	case !actionNamePattern.MatchString(name):
		return []core.Problem{{Pointer: "/action_name", Message: "only letters, digits, '_', '-' and '.'"}}
	}
	if e.core.IsStepType(name) {
		return []core.Problem{{Pointer: "/action_name", Message: fmt.Sprintf("%q is a built-in step type; an action may not take its name", name)}}
	}
	return nil
}

// orgConfigRef reports whether s is an orgconfig:<key> reference with a non-empty key.
func orgConfigRef(s string) bool {
	key, ok := strings.CutPrefix(s, "orgconfig:")
	return ok && key != "" && !strings.ContainsAny(key, " \t\r\n")
}

// headerRef finds the orgconfig: reference of a header value, the one way both the check
// and the run (secretValue) read it: the whole value ("orgconfig:api:crm"), or the rest
// of the value after its first " orgconfig:" ("Bearer orgconfig:api:crm"), before being
// the text kept in front of the secret.
func headerRef(v string) (before, ref string, ok bool) {
	if strings.HasPrefix(v, "orgconfig:") {
		return "", v, true
	}
	if i := strings.Index(v, " orgconfig:"); i >= 0 {
		return v[:i+1], v[i+1:], true
	}
	return "", "", false
}

func checkHTTPAction(a *svctype.Action) []core.Problem {
	var ps []core.Problem
	switch {
	case a.URL == "":
		ps = append(ps, core.Problem{Pointer: "/url", Message: "required: an http(s) URL or an orgconfig:<key> reference"})
	case len(a.URL) > maxActionText:
		ps = append(ps, core.Problem{Pointer: "/url", Message: fmt.Sprintf("at most %d bytes", maxActionText)})
	case strings.HasPrefix(a.URL, "orgconfig:"):
		if !orgConfigRef(a.URL) {
			ps = append(ps, core.Problem{Pointer: "/url", Message: "an orgconfig: reference names a key: orgconfig:<key>"})
		}
	default:
		u, err := url.Parse(a.URL)
		switch {
		case err != nil:
			msg := err.Error()
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				msg = ue.Err.Error()
			}
			ps = append(ps, core.Problem{Pointer: "/url", Message: "is not a URL: " + msg})
		case u.Scheme != "http" && u.Scheme != "https":
			ps = append(ps, core.Problem{Pointer: "/url", Message: "must be an http:// or https:// URL, or an orgconfig:<key> reference"})
		case u.Host == "":
			ps = append(ps, core.Problem{Pointer: "/url", Message: "has no host"})
		default:
			if err := expr.CheckTemplate(a.URL); err != nil {
				ps = append(ps, core.Problem{Pointer: "/url", Message: err.Error()})
			}
		}
	}
	if !slices.Contains(actionMethods, a.HTTPMethod) {
		ps = append(ps, core.Problem{Pointer: "/http_method", Message: fmt.Sprintf("must be one of %s (default POST)", strings.Join(actionMethods, ", "))})
	}
	names := make([]string, 0, len(a.Headers))
	for name := range a.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		at := "/headers/" + core.EscapePointer(name)
		v := a.Headers[name]
		before, ref, isRef := headerRef(v)
		switch {
		case !validHeaderName(name):
			ps = append(ps, core.Problem{Pointer: at, Message: "is not a valid HTTP header name"})
		case len(v) > maxActionText:
			ps = append(ps, core.Problem{Pointer: at, Message: fmt.Sprintf("at most %d bytes", maxActionText)})
		case isRef && !orgConfigRef(ref):
			ps = append(ps, core.Problem{Pointer: at, Message: "an orgconfig: reference names a key and ends the value: orgconfig:<key>, or after a space (Bearer orgconfig:<key>)"})
		case isRef && before == "":
			// the whole value is the secret's
		case !validHeaderValue(v):
			ps = append(ps, core.Problem{Pointer: at, Message: "holds a control character (CR, LF, NUL, ...): not a valid header value"})
		default:
			if err := expr.CheckTemplate(v); err != nil {
				ps = append(ps, core.Problem{Pointer: at, Message: err.Error()})
			}
		}
	}
	if a.TimeoutSeconds != 0 && (a.TimeoutSeconds < 1 || a.TimeoutSeconds > MaxActionTimeoutSeconds) {
		ps = append(ps, core.Problem{Pointer: "/timeout_seconds", Message: fmt.Sprintf("must be from 1 to %d seconds", MaxActionTimeoutSeconds)})
	}
	return ps
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue: no control characters but horizontal tab (a CR or LF would let a value
// write headers of its own).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func checkDBAction(a *svctype.Action) []core.Problem {
	var ps []core.Problem
	name, ok := strings.CutPrefix(a.Datasource, "orgconfig:db:")
	switch {
	case a.Datasource == "":
		ps = append(ps, core.Problem{Pointer: "/datasource", Message: "required: an orgconfig:db:<name> reference"})
	case !ok || name == "" || strings.ContainsAny(name, " \t\r\n"):
		ps = append(ps, core.Problem{Pointer: "/datasource", Message: "must be an orgconfig:db:<name> reference: a connection string is a secret and lives in org config"})
	}
	switch {
	case strings.TrimSpace(a.Query) == "":
		ps = append(ps, core.Problem{Pointer: "/query", Message: "required: a query with positional parameters ($1, $2, ...)"})
	case len(a.Query) > maxActionText:
		ps = append(ps, core.Problem{Pointer: "/query", Message: fmt.Sprintf("at most %d bytes", maxActionText)})
	}
	return ps
}

func checkLLMAction(a *svctype.Action) []core.Problem {
	var ps []core.Problem
	if strings.TrimSpace(a.Template) == "" {
		ps = append(ps, core.Problem{Pointer: "/template", Message: "required: a prompt with {{var}} placeholders"})
	} else if err := expr.CheckTemplate(a.Template); err != nil {
		ps = append(ps, core.Problem{Pointer: "/template", Message: err.Error()})
	}
	if len(a.Model) > 200 {
		ps = append(ps, core.Problem{Pointer: "/model", Message: "at most 200 characters"})
	}
	if a.MaxTokens != 0 && (a.MaxTokens < 1 || a.MaxTokens > MaxActionTokens) {
		ps = append(ps, core.Problem{Pointer: "/max_tokens", Message: fmt.Sprintf("must be from 1 to %d", MaxActionTokens)})
	}
	return ps
}

// checkPropertiesAction validates a custom-table or nway_match configuration with the
// create-time checks of the step kind of that name in the engine's Environment: a stored
// action runs the same code as the primitive, so it is held to the same rules.
func (e *Actions) checkPropertiesAction(a *svctype.Action) []core.Problem {
	if a.Properties == nil {
		return []core.Problem{{Pointer: "/properties", Message: fmt.Sprintf("required: the %s configuration (an object)", a.Kind)}}
	}
	kind, ok := e.core.Environment().Lookup(string(a.Kind))
	if !ok {
		return []core.Problem{{Pointer: "/kind", Message: fmt.Sprintf("action kind %q needs the %s step kind, which this engine does not run", a.Kind, a.Kind)}}
	}
	ps := core.TemplateProblems(a.Properties, "/properties")
	if kind.Validate != nil {
		for _, p := range kind.Validate(a.Properties) {
			ps = append(ps, core.Problem{Pointer: "/properties" + p.Pointer, Message: p.Message})
		}
	}
	return ps
}

// CreateAction validates and stores a new registered action for the organization:
// ErrConflict when the organization has one of that name, a *ValidationError naming each
// field that is wrong. in.OrgID, CreatedAt and UpdatedAt are the engine's to set.
func (e *Actions) CreateAction(ctx context.Context, orgID string, in svctype.Action) (*svctype.Action, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	a, err := e.checkAction(in)
	if err != nil {
		return nil, err
	}
	now := e.core.Now().UTC()
	a.OrgID, a.CreatedAt, a.UpdatedAt = orgID, now, now
	if err := e.store.CreateAction(ctx, a); err != nil {
		return nil, err
	}
	e.cache.forget(orgID, a.Name)
	return a, nil
}

// CheckAction validates an action registration as CreateAction does, without storing it.
func (e *Actions) CheckAction(in svctype.Action) (*svctype.Action, error) { return e.checkAction(in) }

// PutActionTx registers a (checked) action inside the caller's transaction: a new one is
// created; an existing one of the same name is kept when it is the same registration and
// is core.ErrConflict otherwise (another workflow may use it as it is).
func (e *Actions) PutActionTx(ctx context.Context, tx Tx, orgID string, a *svctype.Action) (created bool, err error) {
	cur, err := tx.GetAction(ctx, orgID, a.Name)
	switch {
	case err == nil:
		if !sameAction(cur, a) {
			return false, fmt.Errorf("%w: action %q exists with another configuration", core.ErrConflict, a.Name)
		}
		return false, nil
	case !errors.Is(err, core.ErrNotFound):
		return false, err
	}
	now := e.core.Now().UTC()
	b := *a
	b.OrgID, b.CreatedAt, b.UpdatedAt = orgID, now, now
	if err := tx.CreateAction(ctx, &b); err != nil {
		return false, err
	}
	e.cache.forget(orgID, a.Name)
	return true, nil
}

// sameAction reports whether two registrations configure the same thing.
func sameAction(a, b *svctype.Action) bool {
	x, y := *a, *b
	x.OrgID, y.OrgID = "", ""
	x.CreatedAt, y.CreatedAt = time.Time{}, time.Time{}
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// GetAction returns a registered action as stored (not from the cache).
func (e *Actions) GetAction(ctx context.Context, orgID, name string) (*svctype.Action, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetAction(ctx, orgID, name)
}

// ListActions pages an organization's registered actions by name.
func (e *Actions) ListActions(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.Action], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Action]{}, err
	}
	return e.store.ListActions(ctx, orgID, opts)
}

// ReplaceAction replaces the whole registration of the action called name (PUT): fields
// absent from in are absent afterwards, and created_at is kept. in.Name may be empty (name
// is used); when set it must equal name, since a rename would leave every workflow step that
// names the action without one (rename by creating the new name and deleting the old).
// core.ErrNotFound when the organization has no such action.
func (e *Actions) ReplaceAction(ctx context.Context, orgID, name string, in svctype.Action) (*svctype.Action, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if in.Name == "" {
		in.Name = name
	} else if in.Name != name {
		return nil, core.Invalid("/action_name", "is %q but the path names %q: an action is not renamed by replacing it", in.Name, name)
	}
	a, err := e.checkAction(in)
	if err != nil {
		return nil, err
	}
	a.OrgID, a.UpdatedAt = orgID, e.core.Now().UTC()
	if err := e.store.ReplaceAction(ctx, a); err != nil {
		return nil, err
	}
	e.cache.forget(orgID, a.Name)
	return a, nil
}

// DeleteAction removes a registered action; core.ErrNotFound when there is none. A workflow whose
// steps name it fails at that step from then on, as for any unknown step type.
func (e *Actions) DeleteAction(ctx context.Context, orgID, name string) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	if err := e.store.DeleteAction(ctx, orgID, name); err != nil {
		return err
	}
	e.cache.forget(orgID, name)
	return nil
}

// LookupAction returns the organization's registered action called name for a run to
// execute, core.ErrNotFound when there is none. It is served from a per-process cache: a write
// through this engine is seen at once; a write by another process within ActionCacheTTL. The
// value is shared with other callers: read it, never modify it.
func (e *Actions) LookupAction(ctx context.Context, orgID, name string) (*svctype.Action, error) {
	return e.lookupActionIn(ctx, e.store, orgID, name)
}

// lookupActionIn is LookupAction read through q (the store, or a step's transaction) on a
// cache miss: a step inside its transaction must not ask the pool for a second connection.
func (e *Actions) lookupActionIn(ctx context.Context, q Tx, orgID, name string) (*svctype.Action, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if a, ok := e.cache.get(orgID, name); ok {
		return a, nil
	}
	gen := e.cache.generation()
	a, err := q.GetAction(ctx, orgID, name)
	if err != nil {
		return nil, err
	}
	if a.OrgID == "" {
		a.OrgID = orgID
	}
	e.cache.put(gen, a)
	return a, nil
}

// ActionCacheTTL is how long LookupAction serves an action read from the store before
// reading it again. Writes through this engine clear their entry at once; the bound is for
// the other processes sharing a PostgreSQL database, whose writes this one cannot see: a
// replaced or deleted action is used by a run at most this long after the change. A lookup
// costs one primary-key read when the entry has expired.
const ActionCacheTTL = 5 * time.Second

// maxCachedActions bounds the cache; past it the cache is dropped whole (as tableCache).
const maxCachedActions = 4096

// actionCache keeps the actions runs looked up, per organization, each for at most ttl.
// The zero value is ready to use.
type actionCache struct {
	mu sync.Mutex
	// gen counts the entries forgotten; a lookup that read the store before a write
	// forgot its entry does not put its (older) value back.
	gen  uint64
	orgs map[string]map[string]cachedAction
	n    int
	// ttl and now default to ActionCacheTTL and time.Now; tests set them.
	ttl time.Duration
	now func() time.Time
}

type cachedAction struct {
	a       *svctype.Action
	expires time.Time
}

func (c *actionCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *actionCache) get(orgID, name string) (*svctype.Action, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ent, ok := c.orgs[orgID][name]
	if !ok || !c.clock().Before(ent.expires) {
		return nil, false
	}
	return ent.a, true
}

func (c *actionCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *actionCache) put(gen uint64, a *svctype.Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.orgs == nil || c.n >= maxCachedActions {
		c.orgs, c.n = map[string]map[string]cachedAction{}, 0
	}
	org := c.orgs[a.OrgID]
	if org == nil {
		org = map[string]cachedAction{}
		c.orgs[a.OrgID] = org
	}
	if _, ok := org[a.Name]; !ok {
		c.n++
	}
	ttl := c.ttl
	if ttl <= 0 {
		ttl = ActionCacheTTL
	}
	org[a.Name] = cachedAction{a: a, expires: c.clock().Add(ttl)}
}

func (c *actionCache) forget(orgID, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if org, ok := c.orgs[orgID]; ok {
		if _, had := org[name]; had {
			delete(org, name)
			c.n--
		}
		if len(org) == 0 {
			delete(c.orgs, orgID)
		}
	}
}
