package forms_test

import (
	"encoding/json"
	"fmt"

	"github.com/svcflow/svcflow/forms"
)

func ExampleValidate() {
	s := &forms.Schema{
		Version: forms.Version,
		Pages: []forms.Page{{ID: "claim", Fields: []forms.Field{
			{Key: "email", Type: forms.TypeEmail, Label: "Email", Required: true},
			{Key: "category", Type: forms.TypeSelect, Label: "Category"},
			{Key: "Email", Type: forms.TypeText, Label: "Email again"},
			{Key: "receipt", Type: forms.TypeFile, Label: "Receipt", Required: true},
		}}},
	}
	for _, p := range forms.Validate(s) {
		fmt.Println(p.Pointer, p.Message)
	}
	// Output:
	// /pages/0/fields/1/options a select field needs at least one option
	// /pages/0/fields/2/key does not match pattern '^[a-z][a-z0-9_]*$'
	// /pages/0/fields/3/required a file field submits nothing and cannot be required
}

func ExampleNormalize() {
	// A JSON-Schema object, one of the three older shapes.
	raw := json.RawMessage(`{
	  "type": "object",
	  "required": ["contactEmail"],
	  "properties": {
	    "contactEmail": {"type": "string", "format": "email", "title": "Contact email"},
	    "startDate":    {"type": "string", "format": "date"},
	    "seats":        {"type": "integer", "minimum": 1},
	    "plan":         {"type": "string", "enum": ["basic", "pro"]},
	    "invoiced":     {"type": "boolean"}
	  }
	}`)
	s, err := forms.Normalize(raw)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Version, len(forms.Validate(s)), "problems")
	for _, f := range s.Pages[0].Fields {
		fmt.Printf("%s %s %q required=%v\n", f.Key, f.Type, f.Label, f.Required)
	}
	// Output:
	// form_schema_v1 0 problems
	// contact_email email "Contact email" required=true
	// start_date date "Start date" required=false
	// seats number "Seats" required=false
	// plan select "Plan" required=false
	// invoiced select "Invoiced" required=false
}

func ExampleConvert() {
	raw := json.RawMessage(`{"components": [
	  {"type": "textfield", "key": "firstName", "label": "First name", "validate": {"required": true}},
	  {"type": "survey", "key": "mood", "label": "Mood"},
	  {"type": "button", "key": "submit", "label": "Submit"}
	]}`)
	c, err := forms.Convert(raw)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Shape)
	for _, n := range c.Notes {
		fmt.Println(n.Pointer, n.Message)
	}
	// Output:
	// components
	// /components/0 key "firstName" is now "first_name"
	// /components/1 "survey" (repeating or nested values) has no form_schema_v1 equivalent: kept as a text field
	// /components/2 button dropped: a form renders its own submit
}

func ExampleValidateSubmission() {
	s := &forms.Schema{Version: forms.Version, Pages: []forms.Page{{ID: "p", Fields: []forms.Field{
		{Key: "email", Type: forms.TypeEmail, Label: "Email", Required: true},
		{Key: "seats", Type: forms.TypeNumber, Label: "Seats", Min: ptr(1)},
		{Key: "plan", Type: forms.TypeSelect, Label: "Plan", Options: []forms.Option{{Label: "Pro", Value: "pro"}}},
	}}}}
	var data map[string]any
	_ = json.Unmarshal([]byte(`{"email": "ada@", "seats": 0, "plan": "pro", "input": {}}`), &data)
	for _, p := range forms.ValidateSubmission(s, data) {
		fmt.Println(p.Pointer, p.Message)
	}
	// Output:
	// /data/email "ada@" is not an email address
	// /data/seats must be at least 1
	// /data/input not a field of this form
}

func ExampleEnsureKeys() {
	// A PbotForm step with expected_keys and no schema of its own: one text field each.
	s := forms.EnsureKeys(nil, []string{"invoice_number", "approved_amount"})
	b, _ := json.Marshal(s)
	fmt.Println(string(b))
	// Output:
	// {"version":"form_schema_v1","pages":[{"id":"page_1","fields":[{"key":"invoice_number","type":"text","label":"Invoice number","required":true},{"key":"approved_amount","type":"text","label":"Approved amount","required":true}]}]}
}
