package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine"
)

// The workflow definition's JSON Schema (engine.DefinitionSchema, the one the engine
// validates with) is part of the contract twice: its definitions are the OpenAPI
// documents' components (WorkflowDefinition, WorkflowStep, CustomTableProperties, ...),
// which the workflow routes' bodies reference; and the document itself is served at
// engine.DefinitionSchemaPath, so that an editor validates a workflow file that names it
// in "$schema".

// WorkflowDefinition is a workflow's definition carried as its raw bytes. Its schema is the
// WorkflowDefinition component; Huma checks only that it is an object (definitionRegistry):
// the engine validates it against the same schema and says where it is wrong, with
// pointers such as /definition/actions/2/properties/operation.
type WorkflowDefinition JSONObject

// MarshalJSON writes the bytes as they are (null when empty).
func (d WorkflowDefinition) MarshalJSON() ([]byte, error) { return JSONObject(d).MarshalJSON() }

// UnmarshalJSON keeps a copy of the bytes.
func (d *WorkflowDefinition) UnmarshalJSON(b []byte) error { return (*JSONObject)(d).UnmarshalJSON(b) }

// Schema is a reference to the WorkflowDefinition component, which it registers with the
// schema's other definitions.
func (WorkflowDefinition) Schema(r huma.Registry) *huma.Schema {
	registerDefinitionSchemas(r)
	return &huma.Schema{Ref: definitionRef}
}

// WorkflowDSL is the dsl of a compose body, carried as its raw bytes: the engine checks it
// whole, its problems pointing into it (/dsl/svc_workflow_definition/actions/0/...).
type WorkflowDSL JSONObject

// MarshalJSON writes the bytes as they are (null when empty).
func (d WorkflowDSL) MarshalJSON() ([]byte, error) { return JSONObject(d).MarshalJSON() }

// UnmarshalJSON keeps a copy of the bytes.
func (d *WorkflowDSL) UnmarshalJSON(b []byte) error { return (*JSONObject)(d).UnmarshalJSON(b) }

// Schema documents the dsl's members, svc_workflow_definition a WorkflowDefinition. It has
// no type of its own, so Huma checks none of it (the engine does, in its own words).
func (WorkflowDSL) Schema(r huma.Registry) *huma.Schema {
	registerDefinitionSchemas(r)
	array := func(doc string) *huma.Schema {
		return &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeObject, AdditionalProperties: true}, Description: doc}
	}
	return &huma.Schema{Properties: map[string]*huma.Schema{
		"svc_workflow_definition": {Ref: definitionRef},
		"actions_to_register":     array("Action registrations, as POST /actions takes them."),
		"custom_tables_to_create": array("Custom tables, as POST /custom-tables takes them: {name, fields}."),
		"workflow_description":    {Type: huma.TypeString},
	}}
}

// typeBundleDSL declares a bundle's dsl (svctype.Bundle carries its bytes, which Huma
// declares as any value) as the compose body's dsl: the bundle was composed from it.
func typeBundleDSL(o *huma.OpenAPI) {
	reg := o.Components.Schemas
	b := reg.Map()["Bundle"]
	if b == nil || b.Properties["dsl"] == nil {
		panic("runtime: the Bundle component has no dsl property")
	}
	dsl := WorkflowDSL{}.Schema(reg)
	dsl.Description = "The DSL document the bundle was composed from: " +
		"svc_workflow_definition a WorkflowDefinition, actions_to_register and custom_tables_to_create as POST /actions and POST /custom-tables take them."
	b.Properties["dsl"] = dsl
}

const (
	componentsPrefix = "#/components/schemas/"
	definitionName   = "WorkflowDefinition"
	definitionRef    = componentsPrefix + definitionName
	agentToolRef     = componentsPrefix + "AgentToolDeclaration"
)

// registerDefinitionSchemas puts the definition schema's root and its $defs among r's
// components, once: $ref "#/$defs/X" becomes "#/components/schemas/X".
func registerDefinitionSchemas(r huma.Registry) {
	m := r.Map()
	if _, done := m[definitionName]; done {
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(engine.DefinitionSchema(), &doc); err != nil {
		panic(fmt.Sprintf("runtime: the definition schema: %v", err))
	}
	defs, _ := doc["$defs"].(map[string]any)
	for _, k := range []string{"$schema", "$id", "$defs"} {
		delete(doc, k)
	}
	for name := range defs {
		if _, taken := m[name]; taken {
			panic(fmt.Sprintf("runtime: the definition schema's %s is already a component", name))
		}
	}
	m[definitionName] = hSchema(doc)
	for name, d := range defs {
		m[name] = hSchema(d.(map[string]any))
	}
}

// hSchema converts one JSON Schema object of the definition schema into Huma's type. It
// knows the keywords the schema uses, all of which OpenAPI 3.0 has too (a "type" list is
// one type and "null", which 3.0 says as nullable); any other is a mistake in the schema,
// and building the document panics (every runtime test and `make openapi` build it).
func hSchema(m map[string]any) *huma.Schema {
	s := &huma.Schema{}
	num := func(v any) *float64 { f := v.(float64); return &f }
	count := func(v any) *int { n := int(v.(float64)); return &n }
	list := func(v any) []*huma.Schema {
		var out []*huma.Schema
		for _, e := range v.([]any) {
			out = append(out, hSchema(e.(map[string]any)))
		}
		return out
	}
	for k, v := range m {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				s.Type = t
			case []any:
				for _, e := range t {
					if e == "null" {
						s.Nullable = true
					} else {
						s.Type = e.(string)
					}
				}
			}
		case "title":
			s.Title = v.(string)
		case "description":
			s.Description = v.(string)
		case "$ref":
			s.Ref = componentsPrefix + strings.TrimPrefix(v.(string), "#/$defs/")
		case "properties":
			s.Properties = map[string]*huma.Schema{}
			for name, p := range v.(map[string]any) {
				s.Properties[name] = hSchema(p.(map[string]any))
			}
		case "required":
			for _, e := range v.([]any) {
				s.Required = append(s.Required, e.(string))
			}
			slices.Sort(s.Required)
		case "items":
			s.Items = hSchema(v.(map[string]any))
		case "additionalProperties":
			if b, isBool := v.(bool); isBool {
				s.AdditionalProperties = b
			} else {
				s.AdditionalProperties = hSchema(v.(map[string]any))
			}
		case "enum":
			s.Enum = v.([]any)
		case "minimum":
			s.Minimum = num(v)
		case "maximum":
			s.Maximum = num(v)
		case "exclusiveMinimum":
			s.ExclusiveMinimum = num(v)
		case "minLength":
			s.MinLength = count(v)
		case "maxLength":
			s.MaxLength = count(v)
		case "pattern":
			s.Pattern = v.(string)
		case "minItems":
			s.MinItems = count(v)
		case "maxItems":
			s.MaxItems = count(v)
		case "uniqueItems":
			s.UniqueItems = v.(bool)
		case "minProperties":
			s.MinProperties = count(v)
		case "maxProperties":
			s.MaxProperties = count(v)
		case "oneOf":
			s.OneOf = list(v)
		case "anyOf":
			s.AnyOf = list(v)
		case "not":
			s.Not = hSchema(v.(map[string]any))
		default:
			panic(fmt.Sprintf("runtime: the definition schema uses %q, which the OpenAPI components do not carry", k))
		}
	}
	return s
}

// definitionRegistry is the API's registry of schemas as Huma's request validation reads
// it: the WorkflowDefinition component is any object there, AgentToolDeclaration (an agent's
// tools, POST /agents/execute) any value. The document shows the typed
// schema; the engine validates a definition against it and answers problems located inside
// the definition, which Huma's check of a oneOf would not (it says only that no branch
// matched, at the step).
type definitionRegistry struct{ huma.Registry }

var anyObject = func() *huma.Schema {
	s := &huma.Schema{Type: huma.TypeObject, AdditionalProperties: &huma.Schema{}}
	s.PrecomputeMessages()
	return s
}()

var anyValue = func() *huma.Schema {
	s := &huma.Schema{}
	s.PrecomputeMessages()
	return s
}()

// MarshalJSON and MarshalYAML write the components as the registry wrapped does.
func (r definitionRegistry) MarshalJSON() ([]byte, error) { return json.Marshal(r.Registry) }
func (r definitionRegistry) MarshalYAML() (any, error)    { return r.Map(), nil }

func (r definitionRegistry) SchemaFromRef(ref string) *huma.Schema {
	switch ref {
	case definitionRef:
		return anyObject
	case agentToolRef:
		return anyValue
	}
	return r.Registry.SchemaFromRef(ref)
}

// DefinitionSchemaPath is where the runtime and the gateway serve the definition's schema.
const DefinitionSchemaPath = engine.DefinitionSchemaPath

// SchemaContentType is the media type of a JSON Schema document.
const SchemaContentType = "application/schema+json"

// definitionSchemaETag is the served schema's entity tag: it changes with the release
// that changes the schema, and only then.
var definitionSchemaETag = func() string {
	sum := sha256.Sum256(engine.DefinitionSchema())
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}()

type schemaDocInput struct {
	IfNoneMatch string `header:"If-None-Match" doc:"The ETag of a copy the client holds: 304 when it is still the schema."`
}

type schemaDocOutput struct {
	Status       int
	ContentType  string `header:"Content-Type"`
	CacheControl string `header:"Cache-Control"`
	ETag         string `header:"ETag"`
	Body         []byte
}

// RegisterDefinitionSchema registers GET /schemas/workflow.json on api as the operation
// prefix+"get-workflow-schema": the definition's JSON Schema, to anyone (no credential,
// no X-Org-Id), as application/schema+json with an ETag and a day's caching.
func RegisterDefinitionSchema(api huma.API, prefix string) {
	o := huma.Operation{
		OperationID: prefix + "get-workflow-schema", Method: http.MethodGet, Path: engine.DefinitionSchemaPath,
		Tags:    []string{"Workflows"},
		Summary: "The workflow definition's JSON Schema (no credential)",
		Description: "The JSON Schema (2020-12) a definition is validated with, whose $id is this path. " +
			"A workflow file that starts with `\"$schema\": \"https://<host>" + engine.DefinitionSchemaPath + "\"` is validated and completed by an editor (VS Code reads it); " +
			"the engine ignores the $schema member. Cached for a day; If-None-Match with its ETag answers 304.",
		Responses: map[string]*huma.Response{
			"200": {
				Description: "The schema.",
				Headers:     schemaHeaders(),
				Content:     map[string]*huma.MediaType{SchemaContentType: {Schema: &huma.Schema{Type: huma.TypeObject, Description: "A JSON Schema document."}}},
			},
			"304": {Description: "Not Modified: the copy whose ETag was sent is the schema.", Headers: schemaHeaders()},
		},
	}
	huma.Register(api, o, func(_ context.Context, in *schemaDocInput) (*schemaDocOutput, error) {
		out := &schemaDocOutput{Status: http.StatusOK, ContentType: SchemaContentType, CacheControl: "public, max-age=86400", ETag: definitionSchemaETag}
		if etagMatches(in.IfNoneMatch, definitionSchemaETag) {
			out.Status = http.StatusNotModified
			return out, nil
		}
		out.Body = engine.DefinitionSchema()
		return out, nil
	})
	// Huma declares the output's headers itself, Content-Type among them (which OpenAPI
	// says to leave out) and without their words.
	if item := api.OpenAPI().Paths[engine.DefinitionSchemaPath]; item != nil && item.Get != nil {
		item.Get.Responses["200"].Headers = schemaHeaders()
	}
}

func schemaHeaders() map[string]*huma.Param {
	return map[string]*huma.Param{
		"Cache-Control": {Schema: &huma.Schema{Type: huma.TypeString}, Description: "public, max-age=86400"},
		"ETag":          {Schema: &huma.Schema{Type: huma.TypeString}, Description: "The schema's entity tag."},
	}
}

// etagMatches reports whether an If-None-Match header names etag (or is *).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
