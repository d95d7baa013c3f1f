package forms_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/forms"
)

func ptr(f float64) *float64 { return &f }

// validSchema is a form that Validate accepts; each case below breaks one thing in it.
func validSchema() *forms.Schema {
	return &forms.Schema{
		Version: forms.Version,
		Title:   "Expense claim",
		Pages: []forms.Page{
			{ID: "claim", Fields: []forms.Field{
				{Key: "intro", Type: forms.TypeContent, Label: "Claims over 500 need a receipt."},
				{Key: "email", Type: forms.TypeEmail, Label: "Email", Required: true},
				{Key: "amount", Type: forms.TypeMoney, Label: "Amount", Min: ptr(0), Max: ptr(10000), Step: ptr(0.01), Unit: "EUR"},
				{Key: "category", Type: forms.TypeSelect, Label: "Category", Default: "travel", Options: []forms.Option{
					{Label: "Travel", Value: "travel"}, {Label: "Meals", Value: "meals"},
				}},
			}},
			{ID: "extra", Fields: []forms.Field{
				{Key: "tags", Type: forms.TypeChecklist, Label: "Tags", Default: []any{"client"}, Options: []forms.Option{
					{Label: "Client", Value: "client"}, {Label: "Internal", Value: "internal"},
				}},
				{Key: "receipt", Type: forms.TypeFile, Label: "Receipt", Placeholder: "PDF or image"},
				{Key: "spent_on", Type: forms.TypeDate, Label: "Spent on", Default: "2024-03-01"},
			}},
		},
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(s *forms.Schema)
		want   []forms.Problem
	}{
		{"valid", func(s *forms.Schema) {}, nil},
		{"wrong version", func(s *forms.Schema) { s.Version = "form_schema_v0" },
			[]forms.Problem{{Pointer: "/version", Message: `value must be "form_schema_v1"`}}},
		{"no pages", func(s *forms.Schema) { s.Pages = nil },
			[]forms.Problem{{Pointer: "/pages", Message: "minimum 1 items required, but found 0 items"}}},
		{"page without id", func(s *forms.Schema) { s.Pages[1].ID = "" },
			[]forms.Problem{{Pointer: "/pages/1/id", Message: "length must be >= 1, but got 0"}}},
		{"page id twice", func(s *forms.Schema) { s.Pages[1].ID = "claim" },
			[]forms.Problem{{Pointer: "/pages/1/id", Message: `page id "claim" is also page 0's`}}},
		{"key not snake_case", func(s *forms.Schema) { s.Pages[0].Fields[1].Key = "eMail" },
			[]forms.Problem{{Pointer: "/pages/0/fields/1/key", Message: "does not match pattern '^[a-z][a-z0-9_]*$'"}}},
		{"key twice across pages", func(s *forms.Schema) { s.Pages[1].Fields[2].Key = "email" },
			[]forms.Problem{{Pointer: "/pages/1/fields/2/key", Message: `key "email" is used twice in the form (first at /pages/0/fields/1)`}}},
		{"unknown type", func(s *forms.Schema) { s.Pages[0].Fields[1].Type = "phone" },
			[]forms.Problem{{Pointer: "/pages/0/fields/1/type", Message: `value must be one of "text", "multiline", "number", "money", "range", "email", "date", "select", "checklist", "content", "file", "signature", "table", "lookup", "computed"`}}},
		{"no label", func(s *forms.Schema) { s.Pages[0].Fields[1].Label = "" },
			[]forms.Problem{{Pointer: "/pages/0/fields/1/label", Message: "length must be >= 1, but got 0"}}},
		{"select without options", func(s *forms.Schema) { s.Pages[0].Fields[3].Options, s.Pages[0].Fields[3].Default = nil, nil },
			[]forms.Problem{{Pointer: "/pages/0/fields/3/options", Message: "a select field needs at least one option"}}},
		{"checklist option value twice", func(s *forms.Schema) { s.Pages[1].Fields[0].Options[1].Value = "client" },
			[]forms.Problem{{Pointer: "/pages/1/fields/0/options/1/value", Message: `option value "client" appears twice`}}},
		{"option without value", func(s *forms.Schema) { s.Pages[1].Fields[0].Options[1].Value = "" },
			[]forms.Problem{{Pointer: "/pages/1/fields/0/options/1/value", Message: "length must be >= 1, but got 0"}}},
		{"min over max", func(s *forms.Schema) { s.Pages[0].Fields[2].Min = ptr(20000) },
			[]forms.Problem{{Pointer: "/pages/0/fields/2/min", Message: "min 20000 is greater than max 10000"}}},
		{"step zero", func(s *forms.Schema) { s.Pages[0].Fields[2].Step = ptr(0) },
			[]forms.Problem{{Pointer: "/pages/0/fields/2/step", Message: "must be > 0 but found 0"}}},
		{"required file", func(s *forms.Schema) { s.Pages[1].Fields[1].Required = true },
			[]forms.Problem{{Pointer: "/pages/1/fields/1/required", Message: "a file field submits nothing and cannot be required"}}},
		{"required content", func(s *forms.Schema) { s.Pages[0].Fields[0].Required = true },
			[]forms.Problem{{Pointer: "/pages/0/fields/0/required", Message: "a content field submits nothing and cannot be required"}}},
		{"default not an option", func(s *forms.Schema) { s.Pages[0].Fields[3].Default = "hotel" },
			[]forms.Problem{{Pointer: "/pages/0/fields/3/default", Message: `default: "hotel" is not one of the options`}}},
		{"default not a date", func(s *forms.Schema) { s.Pages[1].Fields[2].Default = "01/03/2024" },
			[]forms.Problem{{Pointer: "/pages/1/fields/2/default", Message: `default: "01/03/2024" is not a date of the form YYYY-MM-DD`}}},
		{"default over max", func(s *forms.Schema) { s.Pages[0].Fields[2].Default = 20000.0 },
			[]forms.Problem{{Pointer: "/pages/0/fields/2/default", Message: "default: must be at most 10000"}}},
		{"default on a display-only field", func(s *forms.Schema) { s.Pages[1].Fields[1].Default = "x" },
			[]forms.Problem{{Pointer: "/pages/1/fields/1/default", Message: "a file field submits nothing and takes no default"}}},
		{"default that is no JSON", func(s *forms.Schema) { s.Pages[0].Fields[2].Default = math.NaN() },
			[]forms.Problem{
				{Pointer: "", Message: "not representable as JSON: json: unsupported value: NaN"},
				{Pointer: "/pages/0/fields/2/default", Message: "default: must be a finite number"},
			}},
		{"problems in document order", func(s *forms.Schema) {
			s.Pages[1].Fields[2].Key = "Spent"
			s.Pages[0].Fields[2].Min = ptr(1e6)
			s.Version = ""
		}, []forms.Problem{
			{Pointer: "/pages/0/fields/2/min", Message: "min 1e+06 is greater than max 10000"},
			{Pointer: "/pages/1/fields/2/key", Message: "does not match pattern '^[a-z][a-z0-9_]*$'"},
			{Pointer: "/version", Message: `value must be "form_schema_v1"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := validSchema()
			tc.change(s)
			require.Equal(t, tc.want, forms.Validate(s))
		})
	}
}

func TestValidateNil(t *testing.T) {
	t.Parallel()
	require.Equal(t, []forms.Problem{{Pointer: "", Message: "no form schema"}}, forms.Validate(nil))
	require.Equal(t, []forms.Problem{{Pointer: "", Message: "no form schema"}}, forms.ValidateSubmission(nil, nil))
}

func TestValidateSortsIndexesAsNumbers(t *testing.T) {
	t.Parallel()
	s := &forms.Schema{Version: forms.Version, Pages: []forms.Page{{ID: "p"}}}
	for i := 0; i < 12; i++ {
		s.Pages[0].Fields = append(s.Pages[0].Fields, forms.Field{Key: "f", Type: forms.TypeText, Label: "F"})
	}
	ps := forms.Validate(s)
	require.Len(t, ps, 11)
	require.Equal(t, "/pages/0/fields/1/key", ps[0].Pointer)
	require.Equal(t, "/pages/0/fields/2/key", ps[1].Pointer)
	require.Equal(t, "/pages/0/fields/11/key", ps[10].Pointer)
}

// The embedded JSON Schema is the one Validate uses: a well-formed document passes it.
func TestJSONSchemaIsJSON(t *testing.T) {
	t.Parallel()
	var v map[string]any
	require.NoError(t, json.Unmarshal(forms.JSONSchema(), &v))
	require.Equal(t, "https://json-schema.org/draft/2020-12/schema", v["$schema"])
}

func TestTypes(t *testing.T) {
	t.Parallel()
	require.Len(t, forms.Types(), 15)
	gen := forms.GeneratableTypes()
	require.Equal(t, []forms.FieldType{"text", "multiline", "number", "money", "range", "email", "date", "select", "checklist", "content"}, gen)
	gen[0] = "mutated"
	require.Equal(t, forms.TypeText, forms.GeneratableTypes()[0], "the list is a copy")
	var display []forms.FieldType
	for _, ty := range forms.Types() {
		require.True(t, ty.Known())
		if ty.DisplayOnly() {
			display = append(display, ty)
		}
	}
	require.Equal(t, []forms.FieldType{"content", "file", "signature", "table", "lookup", "computed"}, display)
	require.False(t, forms.FieldType("phone").Known())
	require.True(t, forms.ValidKey("invoice_2"))
	require.False(t, forms.ValidKey("2invoice"))
}

func TestClone(t *testing.T) {
	t.Parallel()
	s := validSchema()
	c := s.Clone()
	require.Equal(t, s, c)
	c.Pages[0].Fields[2].Min = ptr(5)
	*c.Pages[0].Fields[2].Max = 1
	c.Pages[0].Fields[3].Options[0].Value = "x"
	c.Pages[1].Fields[0].Default.([]any)[0] = "internal"
	require.Equal(t, validSchema(), s, "the original is untouched")
	require.Nil(t, (*forms.Schema)(nil).Clone())
}
