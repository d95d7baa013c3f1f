package forms

import (
	"fmt"
	"strconv"
)

// A JSON Schema object ({type: object, properties, required}) converted to
// form_schema_v1 (see Convert).

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
