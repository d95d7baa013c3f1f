package runtime_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
)

// servedSchema GETs the definition's schema as an editor would (no X-Org-Id) and compiles
// it with a validator of its own (jsonschema v6, not the engine's v5).
func servedSchema(t *testing.T, b *bundle) *jsonschema.Schema {
	t.Helper()
	rec := b.do(t, http.MethodGet, "/schemas/workflow.json", "", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	const url = "https://editor.example/schemas/workflow.json"
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err)
	return s
}

// TestDefinitionSchemaServed: GET /schemas/workflow.json answers the engine's schema to
// anyone, as application/schema+json, cacheable, its $id the path it is served at; a copy
// whose ETag is sent back is 304.
func TestDefinitionSchemaServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.do(t, http.MethodGet, "/schemas/workflow.json", "", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/schema+json", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Header().Get("Cache-Control"), "max-age=")
	etag := rec.Header().Get("ETag")
	require.NotEmpty(t, etag)
	require.JSONEq(t, string(engine.DefinitionSchema()), rec.Body.String())
	var doc struct {
		ID     string `json:"$id"`
		Schema string `json:"$schema"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, "/schemas/workflow.json", doc.ID)
	require.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc.Schema)

	again := b.do(t, http.MethodGet, "/schemas/workflow.json", "", nil, "If-None-Match: "+etag)
	require.Equal(t, http.StatusNotModified, again.Code)
	require.Empty(t, again.Body.Bytes())
	other := b.do(t, http.MethodGet, "/schemas/workflow.json", "", nil, `If-None-Match: "stale"`)
	require.Equal(t, http.StatusOK, other.Code)

	s := servedSchema(t, b)
	raw, err := examplesWorkflow("onboard.json")
	require.NoError(t, err)
	var def any
	require.NoError(t, json.Unmarshal(raw, &def))
	require.NoError(t, s.Validate(def))
}

// TestWorkflowFileWithSchemaKey: a definition that names its schema ("$schema", as an
// editor wants it) is created and updated as any other, and kept as written.
func TestWorkflowFileWithSchemaKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	def := `{"$schema": "https://gateway.example/schemas/workflow.json",
		"actions": [{"type": "PbotApproval", "properties": {"approver_role": "finance"}}]}`
	w := ok[workflowDoc](t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("with-schema", def)), http.StatusCreated)
	require.Empty(t, w.Warnings)
	got := ok[map[string]any](t, b.do(t, http.MethodGet, "/workflows/"+w.ID, orgA, nil), http.StatusOK)
	require.Equal(t, "https://gateway.example/schemas/workflow.json", got["definition"].(map[string]any)["$schema"])
	updated := ok[workflowDoc](t, b.do(t, http.MethodPut, "/workflows/"+w.ID, orgA, workflowBody("with-schema", def)), http.StatusOK)
	require.Equal(t, 2, updated.Version)

	wrong := `{"$schema": 5, "actions": []}`
	p := problem(t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("bad-schema-key", wrong)), http.StatusUnprocessableEntity, "validation_failed")
	require.Contains(t, pointers(p), "/definition/$schema")
}

// TestTypedMistakesPerStepKind: a mistake in a built-in step kind's properties is refused
// by the API (422) at a pointer, and by the served schema, read by another validator, at
// the same place: an editor marks what the API would refuse.
func TestTypedMistakesPerStepKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	schema := servedSchema(t, b)
	for _, tc := range []struct {
		kind, step, pointer string
	}{
		{"custom-table", `{"type":"custom-table","properties":{"table":"t","operation":"wrte"}}`, "/actions/0/properties/operation"},
		{"custom-table read", `{"type":"custom-table","properties":{"table":"t","operation":"read","scan":"yes"}}`, "/actions/0/properties/scan"},
		{"custom-table write", `{"type":"custom-table","properties":{"table":"t","operation":"write","fields":["a"]}}`, "/actions/0/properties/fields"},
		{"matcher", `{"type":"matcher","properties":{"left":"@input.a","right":"@input.b","fuzzyThreshold":150}}`, "/actions/0/properties/fuzzyThreshold"},
		{"matcher sides", `{"type":"matcher","properties":{"left":"input.a","right":"@input.b"}}`, "/actions/0/properties/left"},
		{"nway_match legs", `{"type":"nway_match","properties":{"sets":[{"key":"a","records":[]}],"matchOn":["id"]}}`, "/actions/0/properties/sets"},
		{"nway_match tolerance", `{"type":"nway_match","properties":{"sets":[{"key":"a","records":[]},{"key":"b","records":[]}],"matchOn":["id"],"tolerances":{"amount":{"type":"pct"}}}}`, "/actions/0/properties/tolerances/amount/type"},
		{"loop foreach", `{"type":"loop","properties":{"mode":"foreach","items":5,"steps":[{"type":"x","properties":{}}]}}`, "/actions/0/properties/items"},
		{"loop max_iterations", `{"type":"loop","properties":{"mode":"foreach","items":"@input.xs","max_iterations":0,"steps":[{"type":"x","properties":{}}]}}`, "/actions/0/properties/max_iterations"},
		{"loop nested step", `{"type":"loop","properties":{"mode":"foreach","items":"@input.xs","steps":[{"type":"custom-table","properties":{"table":"t","operation":"wrte"}}]}}`, "/actions/0/properties/steps/0/properties/operation"},
		{"loop react", `{"type":"loop","properties":{"mode":"react","objective":"o","model":5}}`, "/actions/0/properties/model"},
		{"loop react tools", `{"type":"loop","properties":{"mode":"react","objective":"o","tools":[42]}}`, "/actions/0/properties/tools/0"},
		{"PbotApproval", `{"type":"PbotApproval","properties":{"approver_role":" finance"}}`, "/actions/0/properties/approver_role"},
		{"PbotApproval expiry", `{"type":"PbotApproval","properties":{"expires_in_seconds":0}}`, "/actions/0/properties/expires_in_seconds"},
		{"PbotForm", `{"type":"PbotForm","properties":{"expected_keys":["Email"]}}`, "/actions/0/properties/expected_keys/0"},
		{"PbotForm ttl", `{"type":"PbotForm","properties":{"expected_keys":["email"],"ttl_seconds":-1}}`, "/actions/0/properties/ttl_seconds"},
		{"slack_post_message", `{"type":"slack_post_message","properties":{"channel":"#ops"}}`, "/actions/0/properties/text"},
		{"gmail_send", `{"type":"gmail_send","properties":{"to":"a@b.c","subject":"s","body":"b","__oauth_account__":" "}}`, "/actions/0/properties/__oauth_account__"},
		{"onFalse", `{"type":"x","properties":{},"filter":{"condition":{"exists":"@input.a"}},"onFalse":{"type":"PbotForm","properties":{"expected_keys":[]}}}`, "/actions/0/onFalse/properties/expected_keys"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			def := `{"actions":[` + tc.step + `]}`
			p := problem(t, b.do(t, http.MethodPost, "/workflows", orgA, workflowBody("w", def)), http.StatusUnprocessableEntity, "validation_failed")
			require.Contains(t, pointers(p), "/definition"+tc.pointer, "the API's problems: %+v", p.Errors)
			for _, d := range p.Errors {
				if d.Pointer == "/definition"+tc.pointer {
					continue
				}
				require.NotRegexp(t, `/(type|mode|operation)$`, d.Pointer, "only the branch the step's type chose speaks: %+v", p.Errors)
			}

			var doc any
			require.NoError(t, json.Unmarshal([]byte(def), &doc))
			err := schema.Validate(doc)
			var ve *jsonschema.ValidationError
			require.True(t, errors.As(err, &ve), "the schema accepts %s", def)
			require.Contains(t, schemaPlaces(ve.DetailedOutput()), tc.pointer, "the schema's errors: %v", err)
		})
	}

	// A step type no built-in has (an action, an embedder's kind) takes any properties.
	var doc any
	require.NoError(t, json.Unmarshal([]byte(`{"actions":[{"type":"my_action","properties":{"operation":"wrte","expected_keys":5}}]}`), &doc))
	require.NoError(t, schema.Validate(doc))
}

// schemaPlaces lists where a validator's basic output locates its errors: the instance,
// or for a missing property the property itself (the API's pointer).
func schemaPlaces(out *jsonschema.OutputUnit) []string {
	places := []string{out.InstanceLocation}
	if strings.HasSuffix(out.KeywordLocation, "/required") && out.Error != nil {
		if b, err := json.Marshal(out.Error); err == nil {
			for _, name := range quoted(string(b)) {
				places = append(places, out.InstanceLocation+"/"+name)
			}
		}
	}
	for i := range out.Errors {
		places = append(places, schemaPlaces(&out.Errors[i])...)
	}
	return places
}

// quoted returns the names in single quotes of a message: missing properties 'text'.
func quoted(s string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "'")
		if !ok {
			return out
		}
		name, after, ok := strings.Cut(rest, "'")
		if !ok {
			return out
		}
		out = append(out, name)
		s = after
	}
}

// examplesWorkflow returns the definition of examples/workflows/<name>.
func examplesWorkflow(name string) (json.RawMessage, error) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "workflows", name))
	if err != nil {
		return nil, err
	}
	var body struct {
		Definition json.RawMessage `json:"definition"`
	}
	err = json.Unmarshal(raw, &body)
	return body.Definition, err
}
