package forms

import (
	"errors"
	"strings"
)

// Version is the value of Schema.Version for every form this service writes.
const Version = "form_schema_v1"

// Schema is a form_schema_v1 document: one or more pages of fields. The payload a person
// submits is flat, {key: value}, whatever page a field is on.
type Schema struct {
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Pages       []Page `json:"pages"`
}

// Page is one step of a form.
type Page struct {
	ID          string  `json:"id"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	Fields      []Field `json:"fields"`
}

// Field is one element of a page. Which of the optional attributes mean something depends
// on Type (the spec's table; see FieldType). Default, when set, is a value of the kind the
// field submits.
type Field struct {
	Key         string    `json:"key"`
	Type        FieldType `json:"type"`
	Label       string    `json:"label"`
	Help        string    `json:"help,omitempty"`
	Placeholder string    `json:"placeholder,omitempty"`
	Required    bool      `json:"required,omitempty"`
	Default     any       `json:"default,omitempty"`
	Options     []Option  `json:"options,omitempty"`
	Min         *float64  `json:"min,omitempty"`
	Max         *float64  `json:"max,omitempty"`
	Step        *float64  `json:"step,omitempty"`
	Unit        string    `json:"unit,omitempty"`
	Multiple    bool      `json:"multiple,omitempty"`
	Masked      bool      `json:"masked,omitempty"`
}

// Option is one choice of a select or checklist. Value is what is submitted; values are
// strings (an older shape's numeric or boolean value becomes its JSON text, 2 -> "2").
type Option struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// FieldType names what a field renders and what it submits.
type FieldType string

// The field types of form_schema_v1.
const (
	TypeText      FieldType = "text"      // string; uses placeholder, masked
	TypeMultiline FieldType = "multiline" // string; uses placeholder
	TypeNumber    FieldType = "number"    // number; uses min, max, step
	TypeMoney     FieldType = "money"     // number; uses min, max, step, unit (currency label)
	TypeRange     FieldType = "range"     // number; uses min, max, step, unit
	TypeEmail     FieldType = "email"     // string in address form
	TypeDate      FieldType = "date"      // ISO date string, YYYY-MM-DD
	TypeSelect    FieldType = "select"    // one option value, or an array of them when multiple
	TypeChecklist FieldType = "checklist" // array of option values
	TypeContent   FieldType = "content"   // the label is the text; submits nothing
	TypeFile      FieldType = "file"      // display-only; submits nothing
	TypeSignature FieldType = "signature" // display-only; submits nothing
	TypeTable     FieldType = "table"     // display-only; submits nothing
	TypeLookup    FieldType = "lookup"    // display-only; submits nothing
	TypeComputed  FieldType = "computed"  // display-only; submits nothing
)

var allTypes = []FieldType{
	TypeText, TypeMultiline, TypeNumber, TypeMoney, TypeRange, TypeEmail, TypeDate,
	TypeSelect, TypeChecklist, TypeContent, TypeFile, TypeSignature, TypeTable, TypeLookup,
	TypeComputed,
}

var generatableTypes = []FieldType{
	TypeText, TypeMultiline, TypeNumber, TypeMoney, TypeRange, TypeEmail, TypeDate,
	TypeSelect, TypeChecklist, TypeContent,
}

// Types returns the fifteen field types of form_schema_v1, in the spec's order. The slice
// is the caller's.
func Types() []FieldType { return append([]FieldType(nil), allTypes...) }

// GeneratableTypes returns the ten types a generated form may use: the input types and
// content (spec: "Form generation rules"). The slice is the caller's.
func GeneratableTypes() []FieldType { return append([]FieldType(nil), generatableTypes...) }

// Known reports whether t is one of the fifteen types.
func (t FieldType) Known() bool {
	for _, k := range allTypes {
		if k == t {
			return true
		}
	}
	return false
}

// DisplayOnly reports whether a field of type t submits nothing (content, file,
// signature, table, lookup, computed): such a field is never required and never appears
// in a submission.
func (t FieldType) DisplayOnly() bool {
	switch t {
	case TypeContent, TypeFile, TypeSignature, TypeTable, TypeLookup, TypeComputed:
		return true
	}
	return false
}

// Numeric reports whether t submits a number (number, money, range).
func (t FieldType) Numeric() bool {
	return t == TypeNumber || t == TypeMoney || t == TypeRange
}

// Choice reports whether t takes its values from Options (select, checklist).
func (t FieldType) Choice() bool { return t == TypeSelect || t == TypeChecklist }

// Clone returns a deep copy of s (defaults and bounds included), so a caller may change
// the copy without touching a schema someone else holds, such as a cached one.
func (s *Schema) Clone() *Schema {
	if s == nil {
		return nil
	}
	c := *s
	if s.Pages != nil {
		c.Pages = make([]Page, len(s.Pages))
	}
	for i, p := range s.Pages {
		c.Pages[i] = p
		if p.Fields != nil {
			c.Pages[i].Fields = make([]Field, len(p.Fields))
		}
		for j, f := range p.Fields {
			f.Options = append([]Option(nil), f.Options...)
			f.Min, f.Max, f.Step = clonePtr(f.Min), clonePtr(f.Max), clonePtr(f.Step)
			f.Default = cloneValue(f.Default)
			c.Pages[i].Fields[j] = f
		}
	}
	return &c
}

// Field returns the field with the given key and whether there is one.
func (s *Schema) Field(key string) (Field, bool) {
	if s == nil {
		return Field{}, false
	}
	for _, p := range s.Pages {
		for _, f := range p.Fields {
			if f.Key == key {
				return f, true
			}
		}
	}
	return Field{}, false
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = cloneValue(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = cloneValue(e)
		}
		return a
	case []string:
		return append([]string(nil), t...)
	}
	return v
}

// Problem is one thing wrong with a schema or a submission, located by a JSON pointer
// (RFC 6901): into the schema for Validate (/pages/0/fields/2/key), into the submit body
// for ValidateSubmission (/data/email).
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Sentinel errors of Normalize, checked with errors.Is.
var (
	// ErrMalformed: the document is not JSON, or a form_schema_v1 document has a member of
	// the wrong JSON type ("required": "yes").
	ErrMalformed = errors.New("forms: malformed form schema")
	// ErrUnrecognized: the JSON is none of the four shapes (form_schema_v1, a builder
	// components array, a flat field list, a JSON-Schema object).
	ErrUnrecognized = errors.New("forms: unrecognized form schema shape")
)

// pointerToken escapes a key for use as one JSON pointer segment (RFC 6901).
func pointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
