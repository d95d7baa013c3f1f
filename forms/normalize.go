package forms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
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

// ---- builder components and flat field lists ----

// typeAliases maps the type names of builders and flat lists (lower case, without "-",
// "_" and spaces) to form_schema_v1 types. Types handled apart: password, checkbox,
// boolean, multiselect, hidden, button, and the layout and grid components.
var typeAliases = map[string]FieldType{
	"text": TypeText, "textfield": TypeText, "string": TypeText, "input": TypeText,
	"tel": TypeText, "phone": TypeText, "phonenumber": TypeText, "url": TypeText,
	"time": TypeText, "tags": TypeText,
	"multiline": TypeMultiline, "textarea": TypeMultiline, "longtext": TypeMultiline,
	"number": TypeNumber, "integer": TypeNumber, "int": TypeNumber, "float": TypeNumber,
	"decimal": TypeNumber,
	"money":   TypeMoney, "currency": TypeMoney,
	"range": TypeRange, "slider": TypeRange,
	"email": TypeEmail,
	"date":  TypeDate, "datetime": TypeDate, "day": TypeDate,
	"select": TypeSelect, "dropdown": TypeSelect, "radio": TypeSelect,
	"checklist": TypeChecklist, "selectboxes": TypeChecklist, "checkboxes": TypeChecklist,
	"content": TypeContent, "htmlelement": TypeContent, "html": TypeContent,
	"paragraph": TypeContent, "heading": TypeContent, "static": TypeContent,
	"file": TypeFile, "upload": TypeFile,
	"signature": TypeSignature,
	"table":     TypeTable,
	"lookup":    TypeLookup,
	"computed":  TypeComputed,
}

// layouts are builder components that only arrange others; their children are read in
// place.
var layouts = map[string]bool{
	"panel": true, "fieldset": true, "well": true, "columns": true, "column": true,
	"tabs": true, "tab": true, "": true,
}

// grids repeat their children per row or nest them under a key of their own: no flat
// form_schema_v1 field holds that.
var grids = map[string]bool{"datagrid": true, "editgrid": true, "datamap": true, "tree": true, "survey": true, "address": true}

const maxDepth = 32

// typeSeparators are dropped from a component's type: "select-boxes" is "selectboxes".
var typeSeparators = strings.NewReplacer("-", "", "_", "", " ", "")

func typeName(o *object) string {
	return typeSeparators.Replace(strings.ToLower(o.str("type")))
}

// builder converts {components: [...]}; display "wizard" makes each top-level panel a
// page.
func (c *converter) builder(root *object, list []any) *Schema {
	s := &Schema{Version: Version, Title: root.str("title"), Description: root.str("description")}
	if s.Title == "" {
		s.Title = root.str("label")
	}
	var cur *Page
	newPage := func(id, title string) {
		s.Pages = append(s.Pages, Page{ID: c.pageID(id, "page_"+strconv.Itoa(len(s.Pages)+1)), Title: title, Fields: []Field{}})
		cur = &s.Pages[len(s.Pages)-1]
	}
	wizard := strings.EqualFold(root.str("display"), "wizard")
	for i, e := range list {
		ptr := "/components/" + strconv.Itoa(i)
		if o, ok := e.(*object); ok && wizard && typeName(o) == "panel" {
			title := o.str("title")
			if title == "" {
				title = o.str("label")
			}
			newPage(o.str("key"), title)
			if children, ok := o.arr("components"); ok {
				c.components(children, ptr+"/components", &cur.Fields, 1)
			}
			continue
		}
		if cur == nil {
			newPage("", "")
		}
		c.components([]any{e}, ptr, &cur.Fields, 0)
	}
	return s
}

// components reads a list of builder components into fields. ptr is the list's pointer,
// or, for a one-element list, the element's own (see builder).
func (c *converter) components(list []any, ptr string, fields *[]Field, depth int) {
	for i, e := range list {
		ep := ptr + "/" + strconv.Itoa(i)
		if depth == 0 {
			ep = ptr
		}
		if depth > maxDepth {
			c.note(ep, "nested deeper than %d levels: skipped", maxDepth)
			return
		}
		o, ok := e.(*object)
		if !ok {
			c.note(ep, "not an object: skipped")
			continue
		}
		t := typeName(o)
		_, known := typeAliases[t]
		nested := o.has("components") || o.has("columns") || o.has("rows")
		switch {
		case grids[t]:
			// an element of its own, below: unmappable
		case layouts[t] || (t == "table" && o.has("rows")):
			c.children(o, ep, fields, depth)
			continue
		case nested && !known:
			c.note(ep, "%q component flattened: its children's values are no longer nested under %q", o.str("type"), o.str("key"))
			c.children(o, ep, fields, depth)
			continue
		}
		if f, ok := c.element(o, ep); ok {
			*fields = append(*fields, f)
		}
	}
}

func (c *converter) children(o *object, ptr string, fields *[]Field, depth int) {
	if list, ok := o.arr("components"); ok {
		c.components(list, ptr+"/components", fields, depth+1)
	}
	if cols, ok := o.arr("columns"); ok {
		for j, col := range cols {
			if co, ok := col.(*object); ok {
				if list, ok := co.arr("components"); ok {
					c.components(list, ptr+"/columns/"+strconv.Itoa(j)+"/components", fields, depth+1)
				}
			}
		}
	}
	if rows, ok := o.arr("rows"); ok {
		for r, row := range rows {
			cells, _ := row.([]any)
			for k, cell := range cells {
				if co, ok := cell.(*object); ok {
					if list, ok := co.arr("components"); ok {
						c.components(list, ptr+"/rows/"+strconv.Itoa(r)+"/"+strconv.Itoa(k)+"/components", fields, depth+1)
					}
				}
			}
		}
	}
}

// fieldList converts a flat list of fields into one page.
func (c *converter) fieldList(list []any, ptr, title, description string) *Schema {
	s := &Schema{Version: Version, Title: title, Description: description}
	page := Page{ID: c.pageID("", "page_1"), Fields: []Field{}}
	for i, e := range list {
		ep := ptr + "/" + strconv.Itoa(i)
		o, ok := e.(*object)
		if !ok {
			c.note(ep, "not an object: skipped")
			continue
		}
		if f, ok := c.element(o, ep); ok {
			page.Fields = append(page.Fields, f)
		}
	}
	s.Pages = []Page{page}
	return s
}

var tags = regexp.MustCompile(`<[^>]*>`)

// stripHTML makes the text of a builder's HTML content: tags removed, entities decoded,
// white space collapsed.
func stripHTML(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(s, " "))), " ")
}

// element converts one field of a builder or of a flat list. Both vocabularies are read:
// key or name, label or title, required or validate.required, options, values or
// data.values, default or defaultValue, min/max/step or validate.min/max/step.
func (c *converter) element(o *object, ptr string) (Field, bool) {
	raw := o.str("type")
	t := typeName(o)
	validate := o.obj("validate")
	label := o.str("label")
	if label == "" {
		label = o.str("title")
	}
	f := Field{
		Label:       label,
		Help:        firstString(o, "help", "description", "tooltip", "helpText"),
		Placeholder: o.str("placeholder"),
		Required:    o.boolean("required") || validate.boolean("required"),
		Multiple:    o.boolean("multiple"),
		Masked:      o.boolean("masked"),
		Unit:        firstString(o, "unit", "currency"),
	}
	def := o.get("default")
	if def == nil {
		def = o.get("defaultValue")
	}
	var options []Option
	boolean := false
	switch typ, known := typeAliases[t]; {
	case t == "button":
		c.note(ptr, "button dropped: a form renders its own submit")
		return Field{}, false
	case t == "password":
		f.Type, f.Masked = TypeText, true
	case t == "boolean" || t == "bool" || t == "toggle" || t == "switch":
		// yes or no, as for a JSON Schema boolean: required asks for an answer, not a yes
		f.Type, boolean = TypeSelect, true
		options = []Option{{Label: "Yes", Value: "yes"}, {Label: "No", Value: "no"}}
	case t == "checkbox" && optionList(o) != nil:
		f.Type = TypeChecklist
	case t == "checkbox":
		// one checkbox: ticked submits ["yes"]; required means it must be ticked (consent)
		f.Type = TypeChecklist
		opt := f.Label
		if opt == "" {
			opt = "Yes"
		}
		options = []Option{{Label: opt, Value: "yes"}}
		switch def {
		case true:
			def = []any{"yes"}
		case false:
			def = nil
		}
	case t == "multiselect":
		f.Type, f.Multiple = TypeSelect, true
	case t == "hidden":
		f.Type = TypeComputed
		c.note(ptr, "hidden field kept as computed: form_schema_v1 has no hidden input, and a computed field submits nothing")
	case t == "":
		f.Type = TypeText
	case known:
		f.Type = typ
	case grids[t]:
		f.Type = TypeText
		c.note(ptr, "%q (repeating or nested values) has no form_schema_v1 equivalent: kept as a text field", raw)
	default:
		if v, ok := o.get("input").(bool); ok && !v {
			c.note(ptr, "%q component holds no input and has no form_schema_v1 equivalent: dropped", raw)
			return Field{}, false
		}
		f.Type = TypeText
		c.note(ptr, "type %q has no form_schema_v1 equivalent: kept as a text field", raw)
	}
	if f.Type == TypeContent {
		text := stripHTML(firstString(o, "html", "content"))
		if text == "" {
			text = stripHTML(f.Label)
		}
		if text == "" {
			c.note(ptr, "content with no text: dropped")
			return Field{}, false
		}
		f.Label = text
	}
	if options == nil && f.Type.Choice() {
		options = c.options(optionList(o), ptr)
		if f.Type == TypeChecklist && t == "selectboxes" {
			def = checkedKeys(def)
		}
	}
	f.Options = options
	f.Min, f.Max, f.Step = c.bound(o, validate, "min", ptr), c.bound(o, validate, "max", ptr), c.bound(o, validate, "step", ptr)
	if f.Min == nil {
		f.Min = c.bound(o, nil, "minimum", ptr)
	}
	if f.Max == nil {
		f.Max = c.bound(o, nil, "maximum", ptr)
	}
	given := o.str("key")
	if given == "" {
		given = o.str("name")
	}
	if given == "" {
		given = o.str("id")
	}
	f.Key = c.key(given, f.Label, ptr)
	if f.Label == "" {
		f.Label = labelFromKey(given)
	}
	if t == "integer" || t == "int" {
		if f.Step == nil {
			one := 1.0
			f.Step = &one
		}
	}
	if boolean {
		def = yesNo(def)
	}
	f.Default = plain(def)
	c.finish(&f, ptr)
	return f, true
}

func firstString(o *object, names ...string) string {
	for _, n := range names {
		if s := o.str(n); s != "" {
			return s
		}
	}
	return ""
}

// optionList finds a field's choices: options, values, data.values, choices or enum.
func optionList(o *object) []any {
	for _, n := range []string{"options", "values", "choices", "enum"} {
		if l, ok := o.arr(n); ok && len(l) > 0 {
			return l
		}
	}
	if l, ok := o.obj("data").arr("values"); ok && len(l) > 0 {
		return l
	}
	return nil
}

// options reads choices written as strings, numbers, booleans or {label|text, value}
// objects. An empty or repeated value is dropped with a note.
func (c *converter) options(list []any, ptr string) []Option {
	var out []Option
	seen := map[string]bool{}
	for i, e := range list {
		var o Option
		if v, ok := scalarText(e); ok {
			o = Option{Label: v, Value: v}
		} else if eo, ok := e.(*object); ok {
			v, vok := scalarText(eo.get("value"))
			if !vok {
				v, vok = scalarText(eo.get("const"))
			}
			o.Value = v
			o.Label = firstString(eo, "label", "text", "title", "name")
		} else {
			c.note(ptr, "option %d is not a value or {label, value}: dropped", i)
			continue
		}
		if o.Label == "" {
			o.Label = o.Value
		}
		switch {
		case o.Value == "":
			c.note(ptr, "option %d has no value: dropped", i)
		case seen[o.Value]:
			c.note(ptr, "option %d repeats the value %q: dropped", i, o.Value)
		default:
			seen[o.Value] = true
			out = append(out, o)
		}
	}
	return out
}

// checkedKeys turns a builder's checkbox-group default {"a": true, "b": false} into the
// checklist default ["a"].
func checkedKeys(def any) any {
	m, ok := def.(*object)
	if !ok {
		return def
	}
	var out []any
	for _, k := range m.keys {
		if m.vals[k] == true {
			out = append(out, k)
		}
	}
	return out
}

func yesNo(def any) any {
	switch def {
	case true:
		return "yes"
	case false:
		return "no"
	}
	return def
}

// bound reads a number attribute from o, or from o's validate object.
func (c *converter) bound(o, validate *object, name, ptr string) *float64 {
	v := o.get(name)
	if v == nil {
		v = validate.get(name)
	}
	if v == nil {
		return nil
	}
	f, ok := finite(v)
	if !ok {
		c.note(ptr, "%s is not a finite number: dropped", name)
		return nil
	}
	return &f
}

// finish makes a converted field valid: it keeps only the attributes its type uses and
// drops, with a note, what Validate would refuse.
func (c *converter) finish(f *Field, ptr string) {
	if f.Label == "" {
		f.Label = labelFromKey(f.Key)
	}
	if f.Type.Choice() && len(f.Options) == 0 {
		c.note(ptr, "%s with no fixed options (choices loaded from elsewhere?): kept as a text field", f.Type)
		f.Type, f.Multiple = TypeText, false
	}
	if !f.Type.Choice() {
		f.Options = nil
	}
	if f.Type != TypeSelect {
		f.Multiple = false
	}
	if f.Type != TypeText {
		f.Masked = false
	}
	if f.Type != TypeMoney && f.Type != TypeRange {
		f.Unit = ""
	}
	if f.Type.DisplayOnly() {
		if f.Required {
			c.note(ptr, "a %s field submits nothing: no longer required", f.Type)
			f.Required = false
		}
		f.Default = nil
	}
	if f.Type == TypeContent {
		f.Placeholder = ""
	}
	if !f.Type.Numeric() {
		f.Min, f.Max, f.Step = nil, nil, nil
	}
	if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
		c.note(ptr, "min %v is greater than max %v: both dropped", *f.Min, *f.Max)
		f.Min, f.Max = nil, nil
	}
	if f.Step != nil && *f.Step <= 0 {
		c.note(ptr, "step %v is not positive: dropped", *f.Step)
		f.Step = nil
	}
	if empty(f.Default) {
		f.Default = nil
	} else if ps := checkValue(*f, f.Default, ""); len(ps) > 0 {
		c.note(ptr, "default dropped: %s", ps[0].Message)
		f.Default = nil
	}
}

// ---- JSON Schema ----

// jsonSchema converts {type: object, properties, required} into one page, a field per
// property in document order.
func (c *converter) jsonSchema(root *object) *Schema {
	s := &Schema{Version: Version, Title: root.str("title"), Description: root.str("description")}
	required := map[string]bool{}
	if list, ok := root.arr("required"); ok {
		for _, r := range list {
			if k, ok := r.(string); ok {
				required[k] = true
			}
		}
	}
	page := Page{ID: c.pageID("", "page_1"), Fields: []Field{}}
	props := root.obj("properties")
	if props == nil && root.has("properties") {
		c.note("/properties", "not an object: no fields")
	}
	if props != nil {
		for _, name := range props.keys {
			ptr := "/properties/" + pointerToken(name)
			page.Fields = append(page.Fields, c.property(name, props.vals[name], required[name], ptr))
		}
	}
	s.Pages = []Page{page}
	return s
}

func (c *converter) property(name string, v any, required bool, ptr string) Field {
	p, _ := v.(*object)
	f := Field{
		Label:    p.str("title"),
		Help:     p.str("description"),
		Required: required,
		Masked:   p.str("format") == "password" || p.boolean("writeOnly"),
	}
	def := p.get("default")
	typ := schemaType(p)
	enum, _ := p.arr("enum")
	oneOf := constOptions(p)
	switch {
	case p == nil:
		f.Type = TypeText
		c.note(ptr, "property schema is not an object: kept as a text field")
	case len(enum) > 0 || len(oneOf) > 0:
		f.Type = TypeSelect
		if len(enum) > 0 {
			f.Options = c.options(enum, ptr)
		} else {
			f.Options = c.options(oneOf, ptr)
		}
		if typ != "string" && typ != "" {
			c.note(ptr, "%s choices become string option values", typ)
			if t, ok := scalarText(def); ok {
				def = t
			}
		}
	case typ == "string":
		switch p.str("format") {
		case "email", "idn-email":
			f.Type = TypeEmail
		case "date":
			f.Type = TypeDate
		case "date-time", "time":
			f.Type = TypeText
			c.note(ptr, "format %q has no form_schema_v1 type: kept as a text field without the format check", p.str("format"))
		case "textarea":
			f.Type = TypeMultiline
		default:
			f.Type = TypeText
		}
	case typ == "number" || typ == "integer":
		f.Type = TypeNumber
		f.Min, f.Max = c.bound(p, nil, "minimum", ptr), c.bound(p, nil, "maximum", ptr)
		f.Step = c.bound(p, nil, "multipleOf", ptr)
		if f.Step == nil && typ == "integer" {
			one := 1.0
			f.Step = &one
		}
		for _, x := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
			if p.has(x) {
				c.note(ptr, "%s is not kept (min and max are inclusive)", x)
			}
		}
	case typ == "boolean":
		f.Type = TypeSelect
		f.Options = []Option{{Label: "Yes", Value: "yes"}, {Label: "No", Value: "no"}}
		def = yesNo(def)
	case typ == "array":
		items := p.obj("items")
		choices, _ := items.arr("enum")
		if len(choices) == 0 {
			choices = constOptions(items)
		}
		if len(choices) > 0 {
			f.Type = TypeChecklist
			f.Options = c.options(choices, ptr)
			break
		}
		f.Type = TypeText
		c.note(ptr, "array of %s has no form_schema_v1 type: kept as a text field", describe(items))
	default:
		f.Type = TypeText
		c.note(ptr, "%s has no form_schema_v1 type: kept as a text field", describe(p))
	}
	f.Key = c.key(name, f.Label, ptr)
	if f.Label == "" {
		f.Label = labelFromKey(name)
	}
	f.Default = plain(def)
	c.finish(&f, ptr)
	return f
}

// schemaType is a property's type, the first one that is not "null" when it lists
// several.
func schemaType(p *object) string {
	switch t := p.get("type").(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
	}
	return ""
}

// constOptions reads oneOf (or anyOf) [{const, title}] choices as option objects.
func constOptions(p *object) []any {
	for _, n := range []string{"oneOf", "anyOf"} {
		list, _ := p.arr(n)
		var out []any
		for _, e := range list {
			eo, ok := e.(*object)
			if !ok || !eo.has("const") {
				out = nil
				break
			}
			out = append(out, eo)
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func describe(p *object) string {
	switch {
	case p == nil:
		return "an untyped schema"
	case p.has("$ref"):
		return fmt.Sprintf("a $ref (%v)", p.get("$ref"))
	case schemaType(p) != "":
		return "type " + strconv.Quote(schemaType(p))
	}
	return "an untyped schema"
}
