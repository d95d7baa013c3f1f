package forms

import (
	"html"
	"regexp"
	"strconv"
	"strings"
)

// Builder components ({components: [...]}) and flat field lists, converted to
// form_schema_v1 (see Convert).

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
