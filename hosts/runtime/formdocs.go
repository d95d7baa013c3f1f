package runtime

import (
	"fmt"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/forms"
)

// A stored form is always a form_schema_v1 document (the engine normalises every form it
// writes: an external form's, a form pause's), but the answers carry it as its bytes
// (json.RawMessage), which Huma declares as any value. TypeFormDocuments declares the
// "schema" member of those answers as the FormSchema component (forms.Schema), so that a
// client has the form's pages and fields typed; the contract test then checks every such
// answer against it. A request's form stays any value: POST /external-forms also takes
// the older shapes it normalises.

// formAnswers are the runtime's answers whose "schema" is a stored form.
var formAnswers = []string{"ExternalForm", "PublicForm", "FormPause"}

// TypeFormDocuments makes the "schema" property of each named component of o a $ref to
// FormSchema. A component without one is a mistake of the caller's list: it panics (every
// test that builds the document, and `make openapi`, would).
func TypeFormDocuments(o *huma.OpenAPI, components ...string) {
	reg := o.Components.Schemas
	ref := reg.Schema(reflect.TypeFor[forms.Schema](), true, "")
	// A field's type is one of form_schema_v1's (forms.Types), a set the engine checks.
	if f := reg.Map()["FormField"]; f != nil && f.Properties["type"] != nil && f.Properties["type"].Enum == nil {
		for _, t := range forms.Types() {
			f.Properties["type"].Enum = append(f.Properties["type"].Enum, string(t))
		}
		f.Properties["type"].Description = "What the field renders and submits."
	}
	for _, name := range components {
		s := reg.Map()[name]
		if s == nil || s.Properties["schema"] == nil {
			panic(fmt.Sprintf("runtime: component %s has no schema property to type as a form", name))
		}
		s.Properties["schema"] = &huma.Schema{Ref: ref.Ref, Description: s.Properties["schema"].Description}
	}
}
