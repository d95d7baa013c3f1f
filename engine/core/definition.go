package core

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/jsonnum"
)

//go:embed definition.schema.json
var definitionSchemaJSON []byte

// DefinitionSchemaPath is where the hosts serve the definition's schema, and the schema's
// $id: an editor validates a workflow file that says "$schema": "https://<host>/schemas/workflow.json".
const DefinitionSchemaPath = "/schemas/workflow.json"

// definitionSchemaURL is the address the schema is compiled under: its $id, resolved.
const definitionSchemaURL = "https://svcflow.invalid" + DefinitionSchemaPath

// definitionSchema and stepSchema are compiled once; both are safe for concurrent use.
var definitionSchema, stepSchema = mustCompileSchemas()

func mustCompileSchemas() (*jsonschema.Schema, *jsonschema.Schema) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(definitionSchemaURL, bytes.NewReader(definitionSchemaJSON)); err != nil {
		panic(err)
	}
	return c.MustCompile(definitionSchemaURL), c.MustCompile(definitionSchemaURL + "#/$defs/WorkflowStep")
}

// DefinitionSchema returns the JSON Schema that workflow definitions are validated with:
// the one the hosts serve at DefinitionSchemaPath and the OpenAPI documents reference.
func DefinitionSchema() json.RawMessage { return definitionSchemaJSON }

var missingProps = regexp.MustCompile(`'([^']*)'`)

// discriminators are the members a oneOf of the schema chooses its branch by: a step's
// type, a loop's mode, a custom-table step's operation.
var discriminators = []string{"type", "mode", "operation"}

// schemaProblems flattens a jsonschema error into one problem per failing leaf, located
// under base. A missing required property is located at the property itself
// (/actions/2/properties), where a reader looks for it. A oneOf says only what is wrong
// with the branch its discriminator chose (a custom-table step's properties, not that the
// step is no matcher); an anyOf that fails is one problem, its alternatives' messages joined.
func schemaProblems(err error, base string) []Problem {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Pointer: base, Message: err.Error()}}
	}
	var out []Problem
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		switch {
		case strings.HasSuffix(v.KeywordLocation, "/oneOf") && len(v.Causes) > 0:
			// A branch whose discriminator differs is not the one meant; when every branch
			// is (an operation no branch has), the schema's own enum beside the oneOf says so.
			for _, c := range v.Causes {
				if !failsAt(c, v.InstanceLocation, discriminators) {
					walk(c)
				}
			}
			return
		case strings.HasSuffix(v.KeywordLocation, "/anyOf") && len(v.Causes) > 0:
			var msgs []string
			for _, l := range leaves(v) {
				if !slices.Contains(msgs, l.Message) {
					msgs = append(msgs, l.Message)
				}
			}
			out = append(out, Problem{Pointer: base + v.InstanceLocation, Message: strings.Join(msgs, "; or ")})
			return
		case len(v.Causes) > 0:
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		loc := base + v.InstanceLocation
		if strings.HasPrefix(v.Message, "missing properties") {
			for _, m := range missingProps.FindAllStringSubmatch(v.Message, -1) {
				out = append(out, Problem{Pointer: loc + "/" + m[1], Message: "required property is missing"})
			}
			return
		}
		out = append(out, Problem{Pointer: loc, Message: v.Message})
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return dedupe(out)
}

func leaves(v *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(v.Causes) == 0 {
		return []*jsonschema.ValidationError{v}
	}
	var out []*jsonschema.ValidationError
	for _, c := range v.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// failsAt reports whether v fails on one of the members names of the instance at.
func failsAt(v *jsonschema.ValidationError, at string, names []string) bool {
	for _, l := range leaves(v) {
		for _, n := range names {
			if l.InstanceLocation == at+"/"+n {
				return true
			}
		}
	}
	return false
}

// inStepProperties matches a pointer (relative to a definition, or to a foreach's nested
// step) into a step's properties, below the properties object itself.
var (
	inStepProperties       = regexp.MustCompile(`^/actions/\d+(/onFalse)*/properties/.`)
	inNestedStepProperties = regexp.MustCompile(`^(/onFalse)*/properties/.`)
)

// onlyIn reports whether every problem's pointer, less prefix, matches re.
func onlyIn(ps []Problem, prefix string, re *regexp.Regexp) bool {
	for _, p := range ps {
		if !re.MatchString(strings.TrimPrefix(p.Pointer, prefix)) {
			return false
		}
	}
	return true
}

// withSchemaProblems adds to checks (the Go checks' problems) the schema's problems at
// pointers the checks did not flag: where both flag a property the check's words are kept
// (they say more: "upsert needs at least one key column").
func withSchemaProblems(checks, schema []Problem) []Problem {
	flagged := map[string]bool{}
	for _, p := range checks {
		flagged[p.Pointer] = true
	}
	for _, p := range schema {
		if !flagged[p.Pointer] {
			checks = append(checks, p)
		}
	}
	return checks
}

func dedupe(ps []Problem) []Problem {
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// checked is a definition that passed validation.
type checked struct {
	def      *svctype.Definition
	warnings []string
	// registered reports whether the organization has an action of that name.
	registered func(name string) bool
}

// checkWorkflow validates a create/update body. Pointers are relative to the body
// ({name, definition}), so a step's missing properties is /definition/actions/2/properties.
func (e *Core) checkWorkflow(ctx context.Context, orgID string, in WorkflowInput, known func(string) bool) (*checked, error) {
	var problems []Problem
	if strings.TrimSpace(in.Name) == "" {
		problems = append(problems, Problem{Pointer: "/name", Message: "required: a non-empty name"})
	} else if len(in.Name) > 200 {
		problems = append(problems, Problem{Pointer: "/name", Message: "at most 200 characters"})
	}
	if len(bytes.TrimSpace(in.Definition)) == 0 || bytes.Equal(bytes.TrimSpace(in.Definition), []byte("null")) {
		problems = append(problems, Problem{Pointer: "/definition", Message: "required: an object with actions"})
		return nil, &ValidationError{Problems: problems}
	}
	var doc any
	if err := json.Unmarshal(in.Definition, &doc); err != nil {
		// The reason matters most for JSON that only nests too deep for encoding/json
		// (10,000 levels): "exceeded max depth".
		problems = append(problems, Problem{Pointer: "/definition", Message: "is not valid JSON: " + err.Error()})
		return nil, &ValidationError{Problems: problems}
	}
	// A definition the schema refuses in its structure stops here; one it refuses only
	// inside steps' properties goes on to the steps' own checks, which say more.
	var fromSchema []Problem
	if err := definitionSchema.Validate(doc); err != nil {
		fromSchema = schemaProblems(err, "/definition")
		if !onlyIn(fromSchema, "/definition", inStepProperties) {
			return nil, &ValidationError{Problems: append(problems, fromSchema...)}
		}
	}
	def, err := svctype.ParseDefinition(in.Definition)
	if err != nil {
		problems = append(problems, Problem{Pointer: "/definition", Message: err.Error()})
		return nil, &ValidationError{Problems: problems}
	}
	c := &checked{def: def, registered: func(name string) bool {
		if known != nil && known(name) {
			return true
		}
		for _, src := range e.sources() {
			if src.Defines(ctx, orgID, name) {
				return true
			}
		}
		return false
	}}
	if def.Condition != nil {
		problems = append(problems, checkCondition(def.Condition, "/definition/condition")...)
	}
	if def.Schedule != nil && def.Schedule.Timezone != "" {
		if _, err := time.LoadLocation(def.Schedule.Timezone); err != nil {
			problems = append(problems, Problem{Pointer: "/definition/schedule/timezone", Message: fmt.Sprintf("unknown IANA time zone %q", def.Schedule.Timezone)})
		}
	}
	keyProblems := checkSearchKeys(def.SearchKeys)
	problems = append(problems, keyProblems...)
	for i := range def.Actions {
		problems = append(problems, e.checkStep(&def.Actions[i], fmt.Sprintf("/definition/actions/%d", i), c)...)
	}
	problems = withSchemaProblems(problems, fromSchema)
	if len(problems) > 0 {
		ve := &ValidationError{Problems: problems}
		if len(keyProblems) == len(problems) {
			ve.Code = CodeInvalidSearchKey
		}
		return nil, ve
	}
	return c, nil
}

func checkCondition(cond any, at string) []Problem {
	if _, err := expr.Compile(cond); err != nil {
		return []Problem{{Pointer: at, Message: err.Error()}}
	}
	return TemplateProblems(cond, at)
}

// TemplateProblems bounds every string of v (conditions and properties), located under at.
func TemplateProblems(v any, at string) []Problem {
	var out []Problem
	switch x := v.(type) {
	case string:
		if err := expr.CheckTemplate(x); err != nil {
			out = append(out, Problem{Pointer: at, Message: err.Error()})
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, TemplateProblems(x[k], at+"/"+EscapePointer(k))...)
		}
	case []any:
		for i, el := range x {
			out = append(out, TemplateProblems(el, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return out
}

// EscapePointer escapes s as one token of a JSON pointer (RFC 6901).
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (e *Core) checkStep(s *svctype.Step, at string, c *checked) []Problem {
	var out []Problem
	if s.Filter != nil {
		out = append(out, checkCondition(s.Filter.Condition, at+"/filter/condition")...)
	}
	if s.OnFalse != nil {
		out = append(out, e.checkStep(s.OnFalse, at+"/onFalse", c)...)
	}
	out = append(out, TemplateProblems(s.Properties, at+"/properties")...)
	if s.Type == LoopStep {
		return append(out, e.checkLoop(s, at, c)...)
	}
	if k, ok := e.pauseKind(s.Type); ok {
		if k.Check == nil {
			return out
		}
		return append(out, k.Check(s.Properties, at+"/properties")...)
	}
	kind, ok := e.env.Lookup(s.Type)
	if !ok && c.registered(s.Type) {
		return out
	}
	if !ok {
		c.warnings = append(c.warnings, fmt.Sprintf("%s/type: step type %q is neither a built-in primitive nor a registered action; a run fails at this step", at, s.Type))
		return out
	}
	if kind.Validate != nil {
		for _, p := range kind.Validate(s.Properties) {
			out = append(out, Problem{Pointer: at + "/properties" + p.Pointer, Message: p.Message})
		}
	}
	return out
}

// loopForeach is the loop mode the core runs itself; the others are registered
// (RegisterLoopMode).
const loopForeach = "foreach"

// DefaultMaxIterations caps a foreach's elements when max_iterations is absent;
// MaxIterations is the most max_iterations may say. A foreach commits each element on its
// own (about a millisecond each), but its end gathers every element's output in one
// transaction into one context value: 100,000 keeps that within what one commit and one
// value should carry (docs/decisions.md).
const (
	DefaultMaxIterations = 10000
	MaxIterations        = 100000
)

func (e *Core) checkLoop(s *svctype.Step, at string, c *checked) []Problem {
	var out []Problem
	p := s.Properties
	mode, _ := p["mode"].(string)
	if m, ok := p["max_iterations"]; ok {
		if n, isNum := svctype.Float(m); !isNum || n < 1 || n != math.Trunc(n) || n > MaxIterations {
			out = append(out, Problem{Pointer: at + "/properties/max_iterations", Message: fmt.Sprintf("must be an integer from 1 to %d (default %d)", MaxIterations, DefaultMaxIterations)})
		}
	}
	if mode != loopForeach {
		k, ok := e.pauseKind(LoopMode(mode))
		if !ok {
			return append(out, Problem{Pointer: at + "/properties/mode", Message: "must be " + strings.Join(e.LoopModes(), " or ")})
		}
		if k.Check != nil {
			out = append(out, k.Check(p, at+"/properties")...)
		}
		return out
	}
	switch items := p["items"].(type) {
	case string:
		if !strings.HasPrefix(items, "@") && !strings.Contains(items, ":") {
			out = append(out, Problem{Pointer: at + "/properties/items", Message: "must be an @path to an array, or an array"})
		}
	case []any:
	default:
		out = append(out, Problem{Pointer: at + "/properties/items", Message: "required: an @path to an array, or an array"})
	}
	if rk, ok := p["result_key"]; ok {
		if s, isStr := rk.(string); !isStr || s == "" {
			out = append(out, Problem{Pointer: at + "/properties/result_key", Message: "must be a context key"})
		}
	}
	raw, ok := p["steps"].([]any)
	if !ok || len(raw) == 0 {
		return append(out, Problem{Pointer: at + "/properties/steps", Message: "required: a non-empty array of steps"})
	}
	for i, el := range raw {
		sub := fmt.Sprintf("%s/properties/steps/%d", at, i)
		var fromSchema []Problem
		if err := stepSchema.Validate(el); err != nil {
			fromSchema = schemaProblems(err, sub)
			if !onlyIn(fromSchema, sub, inNestedStepProperties) {
				out = append(out, fromSchema...)
				continue
			}
		}
		var st svctype.Step
		b, _ := json.Marshal(el)
		if err := jsonnum.Unmarshal(b, &st); err != nil {
			out = append(out, Problem{Pointer: sub, Message: err.Error()})
			continue
		}
		out = append(out, withSchemaProblems(e.checkStep(&st, sub, c), fromSchema)...)
	}
	return out
}

// loopSteps decodes a foreach's nested steps (validated at create time).
func loopSteps(p map[string]any) ([]svctype.Step, error) {
	b, err := json.Marshal(p["steps"])
	if err != nil {
		return nil, err
	}
	var out []svctype.Step
	if err := jsonnum.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("loop steps: %w", err)
	}
	return out, nil
}
