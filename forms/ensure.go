package forms

import (
	"strconv"
	"strings"
	"unicode"
)

// EnsureKeys returns a copy of s in which every expected key (a PbotForm step's
// expected_keys) is the key of a field, for rendering a form pause. A key with no field
// gets a required text field, labelled from the key ("invoice_number" -> "Invoice
// number"), appended to the last page in the order of expected; with no pages (or a nil
// s) a page "page_1" is made. A submittable field whose key is expected is marked
// required, since a submit without it is refused anyway and the page should say so before
// the person submits. A repeated expected key counts once; an empty one is skipped.
//
// s is not modified. Expected keys are used as they are: one that is not snake_case gives
// a field that Validate reports (a run context key is not renamed behind the workflow's
// back). A display-only field whose key is expected is left alone; it can never be
// submitted, which the step's author must fix.
func EnsureKeys(s *Schema, expected []string) *Schema {
	out := s.Clone()
	if out == nil {
		out = &Schema{Version: Version}
	}
	have := map[string]bool{}
	for pi := range out.Pages {
		for fi := range out.Pages[pi].Fields {
			f := &out.Pages[pi].Fields[fi]
			have[f.Key] = true
			if !f.Type.DisplayOnly() && contains(expected, f.Key) {
				f.Required = true
			}
		}
	}
	var add []Field
	for _, k := range expected {
		if k == "" || have[k] {
			continue
		}
		have[k] = true
		add = append(add, Field{Key: k, Type: TypeText, Label: labelFromKey(k), Required: true})
	}
	if len(add) == 0 {
		return out
	}
	if len(out.Pages) == 0 {
		out.Pages = append(out.Pages, Page{ID: uniquePageID(out, "page_1")})
	}
	last := &out.Pages[len(out.Pages)-1]
	last.Fields = append(last.Fields, add...)
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func uniquePageID(s *Schema, want string) string {
	taken := map[string]bool{}
	for _, p := range s.Pages {
		taken[p.ID] = true
	}
	id := want
	for n := 2; taken[id]; n++ {
		id = want + "_" + strconv.Itoa(n)
	}
	return id
}

// labelFromKey turns a key into a label: "invoice_number" -> "Invoice number",
// "firstName" -> "First name", "HTTPSEndpoint" -> "HTTPS endpoint", "Prénom" -> "Prénom".
// Words are split at "_", "-", spaces and camelCase humps; a word in capitals keeps them,
// others are lower-cased, and the first letter is a capital.
func labelFromKey(k string) string {
	rs := []rune(k)
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && len(cur) > 0 &&
			(unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				(unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1]))):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	for i, w := range words {
		if len([]rune(w)) < 2 || strings.ToUpper(w) != w {
			words[i] = strings.ToLower(w)
		}
	}
	l := []rune(strings.Join(words, " "))
	if len(l) == 0 {
		return k
	}
	l[0] = unicode.ToUpper(l[0])
	return string(l)
}
