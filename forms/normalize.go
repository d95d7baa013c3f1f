package forms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Shape names the form of a document that Normalize read.
type Shape string

// The shapes Normalize reads.
const (
	ShapeV1         Shape = "form_schema_v1" // {version, pages}: passed through
	ShapeComponents Shape = "components"     // a form builder's {components: [...]} (Form.io-like)
	ShapeFieldList  Shape = "field_list"     // [{key|name, type, label, required, options}] or {fields: [...]}
	ShapeJSONSchema Shape = "json_schema"    // {type: object, properties, required}
)

// Note says what a conversion changed or could not keep, located by a JSON pointer into
// the document that was read (/components/3, /properties/firstName).
type Note struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Conversion is what Convert read and made.
type Conversion struct {
	Shape  Shape   `json:"shape"`
	Schema *Schema `json:"schema"`
	Notes  []Note  `json:"notes,omitempty"`
}

// Normalize reads a form schema in any of the four shapes and returns it as
// form_schema_v1; it is Convert without the notes.
func Normalize(raw json.RawMessage) (*Schema, error) {
	c, err := Convert(raw)
	if err != nil {
		return nil, err
	}
	return c.Schema, nil
}

// Convert reads a form schema in any of the four shapes (see Shape) and returns it as
// form_schema_v1, with a note for everything it renamed, dropped or could not map. The
// error is ErrMalformed (not JSON; a form_schema_v1 document with a member of the wrong
// type) or ErrUnrecognized (none of the shapes).
//
// A form_schema_v1 document (an object with pages, or with version form_schema_v1) is
// passed through as it is, except that a missing version is set; it is not validated, so
// call Validate. A document of an older shape is converted into one that Validate
// accepts: every such conversion that returns no error gives a valid form. See the
// package documentation for the mappings and what is unmappable.
func Convert(raw json.RawMessage) (*Conversion, error) {
	v, err := parseOrdered(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c := &converter{keys: map[string]bool{}, next: map[string]int{}, pageIDs: map[string]bool{}, nextPage: map[string]int{}}
	switch root := v.(type) {
	case []any:
		return c.done(ShapeFieldList, c.fieldList(root, "", "", ""))
	case *object:
		if root.has("pages") || root.str("version") == Version {
			return passThrough(raw, root)
		}
		if list, ok := root.arr("components"); ok {
			return c.done(ShapeComponents, c.builder(root, list))
		}
		if list, ok := root.arr("fields"); ok {
			return c.done(ShapeFieldList, c.fieldList(list, "/fields", root.str("title"), root.str("description")))
		}
		if root.obj("properties") != nil || root.str("type") == "object" {
			return c.done(ShapeJSONSchema, c.jsonSchema(root))
		}
	}
	return nil, fmt.Errorf("%w: want an object with pages (form_schema_v1), components, fields or properties, or an array of fields", ErrUnrecognized)
}

func passThrough(raw json.RawMessage, root *object) (*Conversion, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	conv := &Conversion{Shape: ShapeV1, Schema: &s}
	if !root.has("version") {
		s.Version = Version
		conv.Notes = append(conv.Notes, Note{"/version", "no version: set to " + Version})
	}
	return conv, nil
}

type converter struct {
	notes   []Note
	keys    map[string]bool
	next    map[string]int // the next suffix to try for a key base: n repeats stay linear
	pageIDs map[string]bool
	// nextPage is next for page ids: a wizard of n panels with one key was n² lookups
	// (a 216 KB schema took 6 s).
	nextPage map[string]int
}

func (c *converter) note(ptr, format string, args ...any) {
	c.notes = append(c.notes, Note{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

func (c *converter) done(shape Shape, s *Schema) (*Conversion, error) {
	if len(s.Pages) == 0 {
		s.Pages = []Page{{ID: c.pageID("", "page_1"), Fields: []Field{}}}
	}
	return &Conversion{Shape: shape, Schema: s, Notes: c.notes}, nil
}

// pageID makes a unique page id from a wanted one (snake_cased), or from fallback.
func (c *converter) pageID(want, fallback string) string {
	id := snakeCase(want)
	if id == "" {
		id = fallback
	}
	if len(id) > MaxKeyLength-8 {
		id = strings.TrimRight(id[:MaxKeyLength-8], "_")
	}
	base := id
	for n := max(c.nextPage[base], 2); c.pageIDs[id]; n++ {
		id = base + "_" + strconv.Itoa(n)
		c.nextPage[base] = n + 1
	}
	c.pageIDs[id] = true
	return id
}

// key makes a field's key valid and unique: snake_case of the given key (or, without one,
// of the label), "field_" before a leading digit, "_2", "_3" after a repeat. The first
// field keeps a key that is already valid.
func (c *converter) key(given, label, ptr string) string {
	k := snakeCase(given)
	if k == "" {
		k = snakeCase(label)
	}
	if k == "" {
		k = "field"
	}
	if k[0] < 'a' || k[0] > 'z' {
		k = "field_" + k
	}
	if len(k) > MaxKeyLength-8 {
		k = strings.TrimRight(k[:MaxKeyLength-8], "_")
	}
	base := k
	for n := c.next[base]; c.keys[k]; n++ {
		if n < 2 {
			n = 2
		}
		k = base + "_" + strconv.Itoa(n)
		c.next[base] = n + 1
	}
	c.keys[k] = true
	switch {
	case given == "":
		c.note(ptr, "no key: named %q", k)
	case k != given:
		c.note(ptr, "key %q is now %q", given, k)
	}
	return k
}

// letters spells out the Latin letters that do not decompose into a base letter and
// accents.
var letters = strings.NewReplacer("ß", "ss", "æ", "ae", "Æ", "Ae", "œ", "oe", "Œ", "Oe",
	"ø", "o", "Ø", "O", "ł", "l", "Ł", "L", "đ", "d", "Đ", "D", "þ", "th", "Þ", "Th")

// snakeCase converts camelCase, PascalCase, kebab-case and spaced names to snake_case:
// "firstName" -> "first_name", "HTTPServer" -> "http_server", "E-mail address" ->
// "e_mail_address". Accents are dropped ("Prénom" -> "prenom", "Größe" -> "grosse"); any other character that
// is not an ASCII letter or digit separates words. The result may be empty or start with
// a digit.
func snakeCase(s string) string {
	var rs []rune
	for _, r := range norm.NFD.String(letters.Replace(s)) {
		if !unicode.Is(unicode.Mn, r) {
			rs = append(rs, r)
		}
	}
	isUpper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	isLower := func(r rune) bool { return r >= 'a' && r <= 'z' }
	isDigit := func(r rune) bool { return r >= '0' && r <= '9' }
	var b strings.Builder
	for i, r := range rs {
		switch {
		case isUpper(r):
			if i > 0 && (isLower(rs[i-1]) || isDigit(rs[i-1]) ||
				(isUpper(rs[i-1]) && i+1 < len(rs) && isLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
		case isLower(r) || isDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	parts := strings.FieldsFunc(b.String(), func(r rune) bool { return r == '_' })
	return strings.Join(parts, "_")
}
