package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestDefinitionSchemaKeepsWhatWasValid: every workflow definition the repository holds
// (examples/workflows, the README and docs/ pages, every test's fixtures) that the engine
// accepted before the schema typed the step kinds (the structural schema: the same file
// without the step's oneOf, then the kinds' own checks) is accepted by the typed schema,
// read by another validator (jsonschema v6), and by the engine as it is now; and whatever
// the engine accepts now, the schema (read by v6) accepts.
//
// Not parallel: it swaps the package's compiled schema while it runs.
func TestDefinitionSchemaKeepsWhatWasValid(t *testing.T) {
	defs := harvestDefinitions(t, repoRoot(t))
	require.Greater(t, len(defs), 150, "the harvest found too few definitions to mean anything")
	// The corners where the kinds' checks are lenient, which the fixtures may not reach:
	// each must have been valid, and must stay so.
	for i, c := range validCorners {
		defs["corner "+c] = harvested{from: fmt.Sprintf("validCorners[%d]", i), def: json.RawMessage(c)}
	}

	typed := compileV6(t, core.DefinitionSchema())
	eng, err := engine.New(engine.Config{Store: store.OpenTest(t, "sqlite")})
	require.NoError(t, err)
	ctx := context.Background()
	anyAction := func(string) bool { return true } // every other type names a registered action
	check := func(def json.RawMessage) error {
		_, err := eng.CheckWorkflowWith(ctx, "acme", engine.WorkflowInput{Name: "w", Definition: def}, anyAction)
		return err
	}

	// The engine's verdict before: the step's oneOf taken out of the schema.
	var schema map[string]any
	require.NoError(t, json.Unmarshal(core.DefinitionSchema(), &schema))
	step := schema["$defs"].(map[string]any)["WorkflowStep"].(map[string]any)
	require.Contains(t, step, "oneOf")
	delete(step, "oneOf")
	structural, err := json.Marshal(schema)
	require.NoError(t, err)

	wasValid := map[string]bool{}
	restore := core.UseDefinitionSchema(t, structural)
	for key, d := range defs {
		err := check(d.def)
		wasValid[key] = err == nil
		if strings.HasPrefix(key, "corner ") {
			require.NoError(t, err, "%s is no valid definition:\n%s", d.from, d.def)
		}
	}
	restore()

	accepted := 0
	for _, key := range sortedKeys(defs) {
		d := defs[key]
		var doc any
		require.NoError(t, json.Unmarshal(d.def, &doc))
		nowValid := check(d.def) == nil
		if wasValid[key] {
			accepted++
			require.NoError(t, typed.Validate(doc), "%s: a definition the engine accepted is refused by the typed schema:\n%s", d.from, d.def)
			require.True(t, nowValid, "%s: a definition the engine accepted is refused now:\n%s", d.from, d.def)
		}
		if nowValid {
			require.NoError(t, typed.Validate(doc), "%s: the engine accepts what its schema refuses:\n%s", d.from, d.def)
		}
	}
	require.Greater(t, accepted, 100, "too few harvested definitions were valid to mean anything")
	t.Logf("%d definitions harvested, %d valid before the schema was typed", len(defs), accepted)
}

var validCorners = []string{
	`{"$schema":"https://svcflow.example/schemas/workflow.json","actions":[]}`,
	`{"actions":[{"type":"custom-table","properties":{"table":"t","operation":"upsert","keys":["id"],"values":"@input.ids","limit":"x"}},
		{"type":"custom-table","properties":{"table":"t","operation":"write","keys":null,"values":null,"fields":{"a":1}}},
		{"type":"custom-table","properties":{"table":"{{input.t}}","operation":"read","limit":"@input.n","keys":5,"scan":false,"where":{}}}]}`,
	`{"actions":[{"type":"matcher","properties":{"left":"doc:doc_1@2","right":"{{input.r}}","matchOn":null,"tolerance":"@input.tol","fuzzyThreshold":null,"dateWindowDays":"{{input.d}}"}}]}`,
	`{"actions":[{"type":"nway_match","properties":{"sets":[{"key":"a","records":[]},{"key":"b","records":"@input.b"}],"matchOn":["id"],"tolerances":null,"rules":null,"dateWindowDays":"@input.w"}}]}`,
	`{"actions":[{"type":"nway_match","properties":{"sets":[{"key":"a","records":[]},{"key":"b","records":[]}],"matchOn":["id"],"tolerances":{"amount":{"type":"currency"}},"amountKey":5}}]}`,
	`{"actions":[{"type":"loop","properties":{"mode":"react","objective":"o","model":null,"tools":null,"on_stuck":null,"config":null,"__oauth_account__":null,"items":5}}]}`,
	`{"actions":[{"type":"loop","properties":{"mode":"react","objective":"o","tools":["a.b",{"type":"action","name":"x"},{"type":"workflow","id":"wfl-1","name":"not checked"},{"name":"n","action":"a","description":"d","parameters":{}}]}}]}`,
	`{"actions":[{"type":"loop","properties":{"mode":"foreach","items":"doc:doc_1","objective":5,"steps":[{"type":"anything","properties":{"x":[1]}}]}}]}`,
	`{"actions":[{"type":"PbotApproval","properties":{"comment":5,"request_payload":{}}},{"type":"PbotForm","properties":{"expected_keys":["a_b"],"ttl_seconds":0,"schema":null}}]}`,
	`{"actions":[{"type":"slack_post_message","properties":{"channel":5,"text":["x"]}},{"type":"gmail_send","properties":{"to":"a@b.c","subject":"s","body":"b","__oauth_account__":"ops"}}]}`,
	`{"actions":[{"type":"my_kind","properties":{"operation":"wrte","mode":5}}]}`,
}

type harvested struct {
	from string
	def  json.RawMessage
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the package")
		dir = parent
	}
}

// harvestDefinitions finds every JSON object in the repository's workflow examples,
// Markdown pages and Go tests that is a definition ({actions: [...]}), or carries one as
// definition or svc_workflow_definition, keyed by its compact form.
func harvestDefinitions(t *testing.T, root string) map[string]harvested {
	t.Helper()
	out := map[string]harvested{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || strings.HasPrefix(name, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, "_test.go"), strings.HasSuffix(path, ".md"),
			strings.HasPrefix(rel, "examples"+string(filepath.Separator)) && strings.HasSuffix(path, ".json"):
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, def := range definitionsIn(b) {
			var c bytes.Buffer
			if json.Compact(&c, def) != nil {
				continue
			}
			if _, seen := out[c.String()]; !seen {
				out[c.String()] = harvested{from: rel, def: append(json.RawMessage(nil), c.Bytes()...)}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// definitionsIn decodes a JSON object at every "{" of text that opens one.
func definitionsIn(text []byte) []json.RawMessage {
	var out []json.RawMessage
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		rest := bytes.TrimLeft(text[i+1:], " \t\r\n")
		if len(rest) == 0 || rest[0] != '"' {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(text[i:])).Decode(&obj); err != nil {
			continue
		}
		raw := json.RawMessage(nil)
		if b, err := json.Marshal(obj); err == nil {
			raw = b
		}
		for _, cand := range []json.RawMessage{raw, obj["definition"], obj["svc_workflow_definition"]} {
			var probe struct {
				Actions json.RawMessage `json:"actions"`
			}
			if json.Unmarshal(cand, &probe) == nil && len(probe.Actions) > 0 && probe.Actions[0] == '[' {
				out = append(out, cand)
			}
		}
	}
	return out
}

func compileV6(t *testing.T, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	const url = "https://example.test" + core.DefinitionSchemaPath
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err)
	return s
}

func sortedKeys(m map[string]harvested) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestEmbedderStepKindValidates: a step kind the embedding program registers
// (Environment.RegisterStep) is the schema's open branch: a definition using it, with
// whatever properties it reads, is accepted without a warning, and the schema accepts it.
func TestEmbedderStepKindValidates(t *testing.T) {
	t.Parallel()
	env := engine.NewEnvironment()
	env.RegisterStep("ship_parcel", func(context.Context, *svctype.StepCall) (any, error) { return "shipped", nil })
	eng, err := engine.New(engine.Config{Store: store.OpenTest(t, "sqlite"), Env: env})
	require.NoError(t, err)
	def := json.RawMessage(`{"actions":[{"type":"ship_parcel","outputKey":"parcel","properties":{"operation":"wrte","mode":5,"to":["@input.address"]}}]}`)
	w, err := eng.CreateWorkflow(context.Background(), "acme", engine.WorkflowInput{Name: "ship", Definition: def})
	require.NoError(t, err)
	require.Empty(t, w.Warnings)

	var doc any
	require.NoError(t, json.Unmarshal(def, &doc))
	require.NoError(t, compileV6(t, core.DefinitionSchema()).Validate(doc))
}
