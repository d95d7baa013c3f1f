package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/oauthtools"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Tool declarations (spec "Tool declarations (agent tools)"): typed objects
// ({type: action, name}, {type: workflow, id}), legacy strings (an action's name) and legacy
// inline objects ({name, action, description, parameters}), mixed in one array.

// Declaration is one tool declaration, parsed.
type Declaration struct {
	// Name is what the model calls the tool; Action the registered action (or built-in
	// OAuth tool) it runs.
	Name   string
	Action string
	// Workflow is the workflow a {type: workflow, id} declaration runs (Name is then its
	// name, known once resolved).
	Workflow string
	// Description and Parameters (a JSON Schema object) of a legacy inline declaration;
	// a typed or string declaration takes the action's.
	Description string
	Parameters  json.RawMessage
}

var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// parameterTypes are the types a legacy inline parameter may declare.
var parameterTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}

// ParseTools reads a tools array; problems point under at (/tools).
func ParseTools(raw []json.RawMessage, at string) ([]Declaration, []core.Problem) {
	var out []Declaration
	var ps []core.Problem
	seen := map[string]bool{}
	for i, r := range raw {
		p := fmt.Sprintf("%s/%d", at, i)
		d, problem := parseTool(r, p)
		if problem != nil {
			ps = append(ps, *problem)
			continue
		}
		if seen[d.Name] {
			ps = append(ps, core.Problem{Pointer: p, Message: fmt.Sprintf("tool %q is declared twice", d.Name)})
			continue
		}
		seen[d.Name] = true
		out = append(out, d)
	}
	return out, ps
}

func parseTool(raw json.RawMessage, at string) (Declaration, *core.Problem) {
	bad := func(ptr, msg string) (Declaration, *core.Problem) {
		return Declaration{}, &core.Problem{Pointer: ptr, Message: msg}
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if !toolNamePattern.MatchString(name) {
			return bad(at, "an action name: 1-64 letters, digits, '_', '-' or '.'")
		}
		return Declaration{Name: name, Action: name}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return bad(at, "a tool declaration: an action name, {type: action, name}, {type: workflow, id}, or {name, action, description, parameters}")
	}
	str := func(k string) (string, bool) {
		var s string
		v, ok := obj[k]
		return s, ok && json.Unmarshal(v, &s) == nil
	}
	if _, typed := obj["type"]; typed {
		typ, _ := str("type")
		switch typ {
		case "action":
			n, ok := str("name")
			if !ok || !toolNamePattern.MatchString(n) {
				return bad(at+"/name", "required: the action's name (1-64 letters, digits, '_', '-' or '.')")
			}
			return Declaration{Name: n, Action: n}, nil
		case "workflow":
			id, ok := str("id")
			if !ok || id == "" || len(id) > 128 {
				return bad(at+"/id", "required: the workflow's id")
			}
			return Declaration{Name: "workflow:" + id, Workflow: id}, nil
		default:
			return bad(at+"/type", "action or workflow")
		}
	}
	// A legacy inline object: all four fields required.
	var missing []string
	for _, k := range []string{"name", "action", "description", "parameters"} {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return bad(at, "not a tool declaration of a known form: a legacy inline tool needs name, action, description and parameters (missing: "+strings.Join(missing, ", ")+")")
	}
	d := Declaration{}
	var ok bool
	if d.Name, ok = str("name"); !ok || !toolNamePattern.MatchString(d.Name) {
		return bad(at+"/name", "1-64 letters, digits, '_', '-' or '.'")
	}
	if d.Action, ok = str("action"); !ok || !toolNamePattern.MatchString(d.Action) {
		return bad(at+"/action", "the name of the action the tool runs")
	}
	if d.Description, ok = str("description"); !ok || len(d.Description) > 2000 {
		return bad(at+"/description", "a string of at most 2,000 characters")
	}
	var params map[string]struct {
		Type        string `json:"type"`
		Required    bool   `json:"required"`
		Description string `json:"description"`
		Enum        []any  `json:"enum"`
	}
	if err := json.Unmarshal(obj["parameters"], &params); err != nil || params == nil {
		return bad(at+"/parameters", "an object: name -> {type, required, description, enum}")
	}
	schema := map[string]any{"type": "object"}
	props := map[string]any{}
	required := []string{}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := params[n]
		if !parameterTypes[p.Type] {
			return bad(at+"/parameters/"+core.EscapePointer(n)+"/type", "string, number, integer, boolean, array or object")
		}
		prop := map[string]any{"type": p.Type}
		if p.Description != "" {
			prop["description"] = p.Description
		}
		if len(p.Enum) > 0 {
			prop["enum"] = p.Enum
		}
		props[n] = prop
		if p.Required {
			required = append(required, n)
		}
	}
	schema["properties"] = props
	if len(required) > 0 {
		schema["required"] = required
	}
	d.Parameters, _ = json.Marshal(schema)
	return d, nil
}

// toolbox is an agent run's declared tools resolved for one claim: each declaration's
// action read once (one query for them all), its step kind made on use.
type toolbox struct {
	a         *Agents
	run       *turn
	decls     []Declaration
	actions   map[string]*svctype.Action   // by action name; missing: not registered
	builtin   map[string]bool              // action names that are the environment's kinds (OAuth tools)
	workflows map[string]*svctype.Workflow // by id; missing: not the organization's
	account   string                       // __oauth_account__ of the run, for the OAuth tools
}

// resolveTools reads the actions the declarations name in one query.
func (a *Agents) resolveTools(ctx context.Context, t *turn, decls []Declaration) (*toolbox, error) {
	tb := &toolbox{a: a, run: t, decls: slices.Clone(decls), actions: map[string]*svctype.Action{}, builtin: map[string]bool{},
		workflows: map[string]*svctype.Workflow{}}
	var names, ids []string
	for _, d := range decls {
		if d.Workflow != "" {
			ids = append(ids, d.Workflow)
			continue
		}
		if _, ok := a.core.Environment().Lookup(d.Action); ok {
			tb.builtin[d.Action] = true
			continue
		}
		names = append(names, d.Action)
	}
	if len(names) > 0 {
		as, err := a.store.GetActions(ctx, t.run.OrgID, names)
		if err != nil {
			return nil, err
		}
		for i := range as {
			tb.actions[as[i].Name] = &as[i]
		}
	}
	if len(ids) > 0 {
		ws, err := a.store.GetWorkflows(ctx, t.run.OrgID, ids)
		if err != nil {
			return nil, err
		}
		for i := range ws {
			tb.workflows[ws[i].ID] = &ws[i]
		}
	}
	// A workflow tool is presented by its workflow's name (made a tool name, unique).
	taken := map[string]bool{}
	for _, d := range tb.decls {
		taken[d.Name] = true
	}
	for i, d := range tb.decls {
		if d.Workflow == "" {
			continue
		}
		name := "workflow_" + clip(d.Workflow, 40)
		if w := tb.workflows[d.Workflow]; w != nil {
			name = toolName(w.Name)
		}
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s_%d", clip(name, 60), n)
		}
		delete(taken, d.Name)
		taken[name] = true
		tb.decls[i].Name = name
	}
	return tb, nil
}

var notToolChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// toolName makes a workflow's name a tool name: 1-64 of [A-Za-z0-9_.-].
func toolName(s string) string {
	s = strings.Trim(notToolChars.ReplaceAllString(s, "_"), "_")
	if s == "" {
		s = "workflow"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// Tools lists the declared tools as the model sees them.
func (tb *toolbox) Tools() []agent.Tool {
	out := make([]agent.Tool, 0, len(tb.decls))
	for _, d := range tb.decls {
		t := agent.Tool{Name: d.Name, Description: d.Description, Parameters: d.Parameters}
		if d.Workflow != "" {
			t.Description = "Runs the workflow " + d.Workflow + " with your arguments as its input; answers its status and outputs."
			if w := tb.workflows[d.Workflow]; w != nil {
				t.Description = workflowDescription(w)
			}
		}
		if a := tb.actions[d.Action]; a != nil && t.Description == "" {
			t.Description = a.Description
		}
		if t.Description == "" {
			t.Description = "Runs the action " + d.Action + "."
		}
		if a := tb.actions[d.Action]; a != nil && len(t.Parameters) == 0 && a.Kind == svctype.ActionNWayMatch {
			t.Parameters = nwayParameters(a)
		}
		if len(t.Parameters) == 0 {
			t.Parameters = json.RawMessage(`{"type": "object"}`)
		}
		out = append(out, t)
	}
	return out
}

// Call runs a tool call: the action's call outside any transaction (with the call's
// idempotency key and intent), then, for kinds that write, its commit half in a
// transaction of its own.
func (tb *toolbox) Call(ctx context.Context, call agent.ToolCall) (*agent.ToolResult, error) {
	var decl *Declaration
	for i := range tb.decls {
		if tb.decls[i].Name == call.Name {
			decl = &tb.decls[i]
		}
	}
	if decl == nil {
		return nil, fmt.Errorf("%w: %s is not declared", agent.ErrUnknownTool, call.Name)
	}
	if decl.Workflow != "" {
		return tb.runWorkflow(ctx, decl, call)
	}
	if tb.actions[decl.Action] == nil && !tb.builtin[decl.Action] {
		return nil, fmt.Errorf("%w: the action %q is not registered in this organization", agent.ErrUnknownTool, decl.Action)
	}
	orgID := tb.run.run.OrgID
	kind, ok, err := tb.a.core.StepKindOf(ctx, nil, orgID, decl.Action)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the action %q is not registered in this organization", agent.ErrUnknownTool, decl.Action)
	}
	var args map[string]any
	_ = json.Unmarshal(call.Arguments, &args)
	props := args
	if a := tb.actions[decl.Action]; a != nil && a.Kind == svctype.ActionNWayMatch {
		// The stored configuration is authoritative: the model's arguments reach it only as
		// @input; anything else it sent (its own sets, tolerances) is dropped, and logged.
		props = map[string]any{}
		want := inputNames(a.Properties)
		for k, v := range args {
			if want[k] {
				props[k] = v
				continue
			}
			tb.a.core.Logger().Warn("agent tool: argument not used by the stored nway_match configuration, discarded",
				"agent_run_id", tb.run.run.ID, "tool", call.Name, "argument", k)
		}
	}
	if tb.builtin[decl.Action] && tb.account != "" {
		if _, set := props[oauthtools.AccountProperty]; !set {
			props = maps.Clone(props)
			if props == nil {
				props = map[string]any{}
			}
			props[oauthtools.AccountProperty] = tb.account // the step's account, for the OAuth tools
		}
	}
	key := tb.run.key("tool")
	sc := svctype.NewStepCall(nil, nil)
	sc.OrgID, sc.RunID, sc.Type, sc.Properties, sc.Raw = orgID, tb.run.run.ID, decl.Action, props, props
	sc.Vars = map[string]any{"input": args}
	sc.IdempotencyKey, sc.Try = key, 1
	sc.Resolve = func(ctx context.Context, v any, vars map[string]any) (any, error) {
		return tb.a.core.Evaluator().Resolve(svctype.WithOrg(ctx, orgID), v, vars)
	}
	sc.Secret = func(ctx context.Context, k string) (string, error) { return tb.a.core.Secret(ctx, orgID, k) }
	sc.Logger = tb.a.core.Logger().With("org_id", orgID, "agent_run_id", tb.run.run.ID, "tool", call.Name)
	var out any
	if kind.IO != nil {
		var ioErr error
		if err := tb.run.outside(ctx, key, func(ctx context.Context) { out, ioErr = kind.IO(ctx, sc.Detached()) }); err != nil {
			return nil, err
		}
		if ioErr != nil {
			return nil, ioErr
		}
		sc.IOResult = out
	}
	if kind.Run != nil {
		err := tb.a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
			tb.a.core.BindStepCall(stx, sc)
			var err error
			out, err = kind.Run(ctx, sc)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	res := &agent.ToolResult{Output: out}
	res.Match = matchCounts(out)
	return res, nil
}

// matchCounts finds the counts of a reconciliation in a tool's output: nway_match's
// matchGroupCounts, or the matcher's matched and unmatched arrays.
func matchCounts(out any) *agent.MatchCounts {
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	var v struct {
		Counts *agent.MatchCounts `json:"matchGroupCounts"`
		// matcher (2-way, one-to-one): every pair is a full group, every unmatched record
		// an orphan.
		Matched        *[]json.RawMessage `json:"matched"`
		UnmatchedLeft  []json.RawMessage  `json:"unmatchedLeft"`
		UnmatchedRight []json.RawMessage  `json:"unmatchedRight"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	if v.Counts != nil {
		return v.Counts
	}
	if v.Matched != nil {
		n := len(*v.Matched)
		return &agent.MatchCounts{Groups: n, Full: n, Orphan: len(v.UnmatchedLeft) + len(v.UnmatchedRight)}
	}
	return nil
}

var inputRef = regexp.MustCompile(`^@input\.([A-Za-z0-9_]+)$`)

// inputNames are the names v refers to as @input.<name> (an nway_match action's legs).
func inputNames(v any) map[string]bool {
	out := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if m := inputRef.FindStringSubmatch(x); m != nil {
				out[m[1]] = true
			}
		case map[string]any:
			for _, el := range x {
				walk(el)
			}
		case []any:
			for _, el := range x {
				walk(el)
			}
		}
	}
	walk(v)
	return out
}

// nwayParameters are an nway_match action's tool parameters: each @input.<name> of its
// configuration, required, an array of records or a doc: reference.
func nwayParameters(a *svctype.Action) json.RawMessage {
	names := make([]string, 0)
	for n := range inputNames(a.Properties) {
		names = append(names, n)
	}
	sort.Strings(names)
	props := map[string]any{}
	for _, n := range names {
		props[n] = map[string]any{"type": []string{"array", "string"},
			"description": "the records of this leg: an array of objects, or a doc:doc_<id> reference"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": names})
	return b
}

// workflowDescription presents a workflow tool: its definition's description when it has
// one, else its name.
func workflowDescription(w *svctype.Workflow) string {
	var d struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(w.Definition, &d)
	if d.Description != "" {
		return clip(d.Description, 2000)
	}
	return "Runs the workflow " + w.Name + " with your arguments as its input; answers its status and outputs."
}

// runWorkflow runs a workflow tool: the workflow as a run of its own with the call's
// arguments as input, its idempotency key the call's (a call made again after a crash
// finds the same run), waited for outside any transaction and step slot; the observation
// is its status and outputs.
func (tb *toolbox) runWorkflow(ctx context.Context, decl *Declaration, call agent.ToolCall) (*agent.ToolResult, error) {
	if tb.workflows[decl.Workflow] == nil {
		return nil, fmt.Errorf("%w: the organization has no workflow %s", agent.ErrUnknownTool, decl.Workflow)
	}
	orgID, key := tb.run.run.OrgID, tb.run.key("tool")
	var out map[string]any
	var runErr error
	err := tb.run.outside(ctx, key, func(ctx context.Context) {
		c := tb.a.core
		run, err := c.Execute(ctx, orgID, decl.Workflow, call.Arguments, core.ExecuteOptions{IdempotencyKey: key})
		if err != nil {
			runErr = err
			return
		}
		status := run.Status
		for status == svctype.RunRunning && ctx.Err() == nil {
			if status, err = c.WaitRun(ctx, orgID, run.ID, svctype.RunRunning, core.MaxWait); err != nil {
				runErr = err
				return
			}
		}
		doc, err := c.RunStatus(ctx, orgID, run.ID)
		if err != nil {
			runErr = err
			return
		}
		outputs := map[string]any{}
		for k, v := range doc.Context {
			if k != "input" && !strings.HasPrefix(k, "__") {
				outputs[k] = v
			}
		}
		out = map[string]any{"run_id": doc.ID, "status": doc.Status, "outputs": outputs}
		if doc.Reason != "" {
			out["reason"] = doc.Reason
		}
	})
	if err != nil {
		return nil, err
	}
	if runErr != nil {
		return nil, runErr
	}
	return &agent.ToolResult{Output: out, Match: matchCounts(out["outputs"])}, nil
}
