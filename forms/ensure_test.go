package forms_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/forms"
)

func TestEnsureKeys(t *testing.T) {
	t.Parallel()
	twoPages := func() *forms.Schema {
		return &forms.Schema{Version: forms.Version, Pages: []forms.Page{
			{ID: "a", Fields: []forms.Field{{Key: "approved", Type: forms.TypeSelect, Label: "Approved", Options: []forms.Option{{Label: "Yes", Value: "yes"}}}}},
			{ID: "b", Fields: []forms.Field{{Key: "note", Type: forms.TypeContent, Label: "Thanks"}}},
		}}
	}
	text := func(key, label string) forms.Field {
		return forms.Field{Key: key, Type: forms.TypeText, Label: label, Required: true}
	}
	for _, tc := range []struct {
		name     string
		in       *forms.Schema
		expected []string
		want     *forms.Schema
	}{
		{"nil schema", nil, []string{"invoice_number", "amount"}, &forms.Schema{Version: forms.Version, Pages: []forms.Page{
			{ID: "page_1", Fields: []forms.Field{text("invoice_number", "Invoice number"), text("amount", "Amount")}},
		}}},
		{"no pages", &forms.Schema{Version: forms.Version, Title: "T"}, []string{"a"}, &forms.Schema{Version: forms.Version, Title: "T", Pages: []forms.Page{
			{ID: "page_1", Fields: []forms.Field{text("a", "A")}},
		}}},
		{"nothing expected", twoPages(), nil, twoPages()},
		{"added to the last page, existing made required", twoPages(), []string{"approved", "comment", "comment", "", "note"}, func() *forms.Schema {
			s := twoPages()
			s.Pages[0].Fields[0].Required = true
			s.Pages[1].Fields = append(s.Pages[1].Fields, text("comment", "Comment"))
			return s
		}()},
		{"key used as it is", twoPages(), []string{"invoiceID"}, func() *forms.Schema {
			s := twoPages()
			s.Pages[1].Fields = append(s.Pages[1].Fields, text("invoiceID", "Invoice ID"))
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var before *forms.Schema
			if tc.in != nil {
				before = tc.in.Clone()
			}
			got := forms.EnsureKeys(tc.in, tc.expected)
			require.Equal(t, tc.want, got)
			require.Equal(t, before, tc.in, "the given schema is not modified")
			for _, k := range tc.expected {
				if k != "" {
					_, ok := got.Field(k)
					require.True(t, ok, k)
				}
			}
		})
	}
}

func TestEnsureKeysGivesAValidForm(t *testing.T) {
	t.Parallel()
	s := forms.EnsureKeys(nil, []string{"vendor_name", "iban"})
	require.Empty(t, forms.Validate(s))
	require.Equal(t, []forms.Problem{{Pointer: "/data/iban", Message: "required"}},
		forms.ValidateSubmission(s, map[string]any{"vendor_name": "ACME"}))
}
