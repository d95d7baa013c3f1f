package forms_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/forms"
)

func submissionSchema() *forms.Schema {
	yesNo := []forms.Option{{Label: "Yes", Value: "yes"}, {Label: "No", Value: "no"}}
	return &forms.Schema{Version: forms.Version, Pages: []forms.Page{
		{ID: "one", Fields: []forms.Field{
			{Key: "intro", Type: forms.TypeContent, Label: "Hello"},
			{Key: "name", Type: forms.TypeText, Label: "Name", Required: true},
			{Key: "notes", Type: forms.TypeMultiline, Label: "Notes"},
			{Key: "email", Type: forms.TypeEmail, Label: "Email"},
			{Key: "count", Type: forms.TypeNumber, Label: "Count", Min: ptr(1), Max: ptr(10), Step: ptr(1)},
			{Key: "amount", Type: forms.TypeMoney, Label: "Amount", Min: ptr(0), Step: ptr(0.01)},
			{Key: "score", Type: forms.TypeRange, Label: "Score", Max: ptr(100)},
		}},
		{ID: "two", Fields: []forms.Field{
			{Key: "due", Type: forms.TypeDate, Label: "Due"},
			{Key: "agree", Type: forms.TypeSelect, Label: "Agree", Options: yesNo},
			{Key: "teams", Type: forms.TypeSelect, Label: "Teams", Multiple: true, Options: []forms.Option{{Label: "A", Value: "a"}, {Label: "B", Value: "b"}}},
			{Key: "tags", Type: forms.TypeChecklist, Label: "Tags", Required: true, Options: []forms.Option{{Label: "X", Value: "x"}, {Label: "Y", Value: "y"}}},
			{Key: "receipt", Type: forms.TypeFile, Label: "Receipt"},
			{Key: "total", Type: forms.TypeComputed, Label: "Total"},
		}},
	}}
}

func TestValidateSubmission(t *testing.T) {
	t.Parallel()
	base := func() map[string]any { return map[string]any{"name": "Ada", "tags": []any{"x"}} }
	for _, tc := range []struct {
		name string
		set  map[string]any // merged into base
		want []forms.Problem
	}{
		{"minimal", nil, nil},
		{"everything", map[string]any{
			"notes": "line 1\nline 2", "email": "ada@example.com", "count": 3.0, "amount": 10.07,
			"score": json.Number("99.5"), "due": "2024-02-29", "agree": "no", "teams": []any{"b", "a"},
			"tags": []string{"x", "y"},
		}, nil},
		{"Go numbers", map[string]any{"count": 4, "amount": float32(2.5), "score": uint8(7)}, nil},
		{"required null", map[string]any{"name": nil, "tags": nil}, []forms.Problem{
			{Pointer: "/data/name", Message: "required"}, {Pointer: "/data/tags", Message: "required"},
		}},
		{"required empty", map[string]any{"name": "   ", "tags": []any{}}, []forms.Problem{
			{Pointer: "/data/name", Message: "required"}, {Pointer: "/data/tags", Message: "required"},
		}},
		{"no value for optional fields", map[string]any{"email": "", "count": nil, "due": " ", "teams": []any{}}, nil},
		{"unknown keys", map[string]any{"input": "x", "__approved": true, "a/b": 1}, []forms.Problem{
			{Pointer: "/data/__approved", Message: "not a field of this form"},
			{Pointer: "/data/a~1b", Message: "not a field of this form"},
			{Pointer: "/data/input", Message: "not a field of this form"},
		}},
		{"display-only submitted", map[string]any{"intro": "x", "receipt": "file.pdf", "total": 3, "total_2": nil}, []forms.Problem{
			{Pointer: "/data/intro", Message: "a content field is display-only and is not submitted"},
			{Pointer: "/data/receipt", Message: "a file field is display-only and is not submitted"},
			{Pointer: "/data/total", Message: "a computed field is display-only and is not submitted"},
			{Pointer: "/data/total_2", Message: "not a field of this form"},
		}},
		{"display-only sent as null", map[string]any{"receipt": nil}, nil},
		{"strings", map[string]any{"name": 12.0, "notes": true}, []forms.Problem{
			{Pointer: "/data/name", Message: "must be a string, got a number"},
			{Pointer: "/data/notes", Message: "must be a string, got a boolean"},
		}},
		{"numbers", map[string]any{"count": "3", "amount": map[string]any{}, "score": true}, []forms.Problem{
			{Pointer: "/data/count", Message: "must be a number, got a string"},
			{Pointer: "/data/amount", Message: "must be a number, got an object"},
			{Pointer: "/data/score", Message: "must be a number, got a boolean"},
		}},
		{"bounds and steps", map[string]any{"count": 11.0, "amount": -1.0, "score": 100.5}, []forms.Problem{
			{Pointer: "/data/count", Message: "must be at most 10"},
			{Pointer: "/data/amount", Message: "must be at least 0"},
			{Pointer: "/data/score", Message: "must be at most 100"},
		}},
		{"steps", map[string]any{"count": 2.5, "amount": 0.005}, []forms.Problem{
			{Pointer: "/data/count", Message: "must be 1 plus a multiple of 1"},
			{Pointer: "/data/amount", Message: "must be 0 plus a multiple of 0.01"},
		}},
		{"money in cents adds up", map[string]any{"amount": 0.1 + 0.2}, nil},
		{"not finite", map[string]any{"score": math.Inf(-1)}, []forms.Problem{{Pointer: "/data/score", Message: "must be a finite number"}}},
		{"emails", map[string]any{"email": "Ada <ada@example.com>"}, []forms.Problem{
			{Pointer: "/data/email", Message: `"Ada <ada@example.com>" is not an email address`},
		}},
		{"dates", map[string]any{"due": "2023-02-29"}, []forms.Problem{
			{Pointer: "/data/due", Message: `"2023-02-29" is not a date of the form YYYY-MM-DD`},
		}},
		{"select", map[string]any{"agree": "maybe", "teams": "a"}, []forms.Problem{
			{Pointer: "/data/agree", Message: `"maybe" is not one of the options`},
			{Pointer: "/data/teams", Message: "must be an array of option values, got a string"},
		}},
		{"select is a string", map[string]any{"agree": []any{"yes"}}, []forms.Problem{
			{Pointer: "/data/agree", Message: "must be one of the option values (a string), got an array"},
		}},
		{"checklist elements", map[string]any{"tags": []any{"x", "z", 1.0, "x"}}, []forms.Problem{
			{Pointer: "/data/tags/1", Message: `"z" is not one of the options`},
			{Pointer: "/data/tags/2", Message: "must be an option value (a string), got a number"},
			{Pointer: "/data/tags/3", Message: `"x" is chosen twice`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := base()
			for k, v := range tc.set {
				data[k] = v
			}
			require.Equal(t, tc.want, forms.ValidateSubmission(submissionSchema(), data))
		})
	}
}

func TestValidateSubmissionRequiredAbsent(t *testing.T) {
	t.Parallel()
	require.Equal(t, []forms.Problem{{Pointer: "/data/name", Message: "required"}, {Pointer: "/data/tags", Message: "required"}},
		forms.ValidateSubmission(submissionSchema(), nil))
}

func TestEmailAddresses(t *testing.T) {
	t.Parallel()
	s := &forms.Schema{Version: forms.Version, Pages: []forms.Page{{ID: "p", Fields: []forms.Field{{Key: "e", Type: forms.TypeEmail, Label: "E"}}}}}
	for addr, ok := range map[string]bool{
		"ada@example.com":         true,
		"ada.lovelace+x@ex.co.uk": true,
		"o'brien@example.ie":      true,
		"ada@localhost":           true,
		"ada":                     false,
		"ada@":                    false,
		"@example.com":            false,
		"ada@@example.com":        false,
		" ada@example.com":        false,
		"ada@example.com (Ada)":   false,
		"<ada@example.com>":       false,
		"ada example@x.com":       false,
		"a@b.com, c@d.com":        false,
	} {
		ps := forms.ValidateSubmission(s, map[string]any{"e": addr})
		require.Equal(t, ok, len(ps) == 0, "%q: %v", addr, ps)
	}
}

// Submissions decoded the usual way (encoding/json, with or without UseNumber) pass.
func TestSubmissionFromJSON(t *testing.T) {
	t.Parallel()
	body := `{"name": "Ada", "tags": ["y"], "count": 7, "amount": 12.34, "teams": ["a"]}`
	var plain map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &plain))
	require.Empty(t, forms.ValidateSubmission(submissionSchema(), plain))
}
