package core

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// UseDefinitionSchema makes checks validate definitions with raw (its $id resolved as the
// real schema's) until the returned func restores the real one. Tests that call it must
// not run in parallel: the compiled schemas are the package's.
func UseDefinitionSchema(t testing.TB, raw []byte) (restore func()) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(definitionSchemaURL, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	def, step := c.MustCompile(definitionSchemaURL), c.MustCompile(definitionSchemaURL+"#/$defs/WorkflowStep")
	oldDef, oldStep := definitionSchema, stepSchema
	definitionSchema, stepSchema = def, step
	return func() { definitionSchema, stepSchema = oldDef, oldStep }
}
