package forms

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed form_schema_v1.schema.json
var schemaJSON []byte

const schemaURL = "https://svcflow.dev/schemas/form_schema_v1.json"

// compiled is safe for concurrent use.
var compiled = mustCompile()

func mustCompile() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(schemaURL, bytes.NewReader(schemaJSON)); err != nil {
		panic(err)
	}
	return c.MustCompile(schemaURL)
}

// JSONSchema returns the JSON Schema (draft 2020-12) that Validate checks a form's shape
// with; generation hands it to a model. The slice must not be modified.
func JSONSchema() json.RawMessage { return schemaJSON }

// MaxKeyLength is the longest field key Validate accepts.
const MaxKeyLength = 128

var keyPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ValidKey reports whether k is usable as a field key: snake_case (^[a-z][a-z0-9_]*$) and at
// most MaxKeyLength bytes.
func ValidKey(k string) bool { return len(k) <= MaxKeyLength && keyPattern.MatchString(k) }

// Validate returns what is wrong with s, nil when nothing is. The shape is checked with
// JSONSchema (version form_schema_v1, at least one page, page ids, snake_case keys, the
// fifteen types, labels, option shape, step > 0), then the rules the schema cannot say:
// keys unique across the whole form, page ids unique, options present with unique values
// for select and checklist, min <= max, display-only types never required, and a default
// that the field itself would accept as a submitted value. Problems come in document
// order.
func Validate(s *Schema) []Problem {
	if s == nil {
		return []Problem{{Pointer: "", Message: "no form schema"}}
	}
	out := shapeProblems(s)

	pageIDs := map[string]int{}
	keys := map[string]string{} // key -> pointer of its first field
	for pi, p := range s.Pages {
		pp := "/pages/" + strconv.Itoa(pi)
		if p.ID != "" {
			if first, dup := pageIDs[p.ID]; dup {
				out = append(out, Problem{pp + "/id", fmt.Sprintf("page id %q is also page %d's", p.ID, first)})
			} else {
				pageIDs[p.ID] = pi
			}
		}
		for fi, f := range p.Fields {
			fp := pp + "/fields/" + strconv.Itoa(fi)
			if f.Key != "" {
				if first, dup := keys[f.Key]; dup {
					out = append(out, Problem{fp + "/key", fmt.Sprintf("key %q is used twice in the form (first at %s)", f.Key, first)})
				} else {
					keys[f.Key] = fp
				}
			}
			out = append(out, fieldRules(f, fp)...)
		}
	}
	sortProblems(out)
	return out
}

func fieldRules(f Field, fp string) []Problem {
	var out []Problem
	if f.Type.DisplayOnly() && f.Required {
		out = append(out, Problem{fp + "/required", fmt.Sprintf("a %s field submits nothing and cannot be required", f.Type)})
	}
	if f.Type.Choice() {
		if len(f.Options) == 0 {
			out = append(out, Problem{fp + "/options", fmt.Sprintf("a %s field needs at least one option", f.Type)})
		}
		seen := map[string]bool{}
		for oi, o := range f.Options {
			if seen[o.Value] {
				out = append(out, Problem{fp + "/options/" + strconv.Itoa(oi) + "/value", fmt.Sprintf("option value %q appears twice", o.Value)})
			}
			seen[o.Value] = true
		}
	}
	if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
		out = append(out, Problem{fp + "/min", fmt.Sprintf("min %v is greater than max %v", *f.Min, *f.Max)})
	}
	if !empty(f.Default) && f.Type.Known() {
		if f.Type.DisplayOnly() {
			out = append(out, Problem{fp + "/default", fmt.Sprintf("a %s field submits nothing and takes no default", f.Type)})
		} else if len(out) == 0 {
			for _, p := range checkValue(f, f.Default, fp+"/default") {
				p.Message = "default: " + p.Message
				out = append(out, p)
			}
		}
	}
	return out
}

// shapeProblems validates s, as JSON, against JSONSchema.
func shapeProblems(s *Schema) []Problem {
	// Nil slices marshal as null; a missing list is reported as an empty one.
	c := *s
	if c.Pages == nil {
		c.Pages = []Page{}
	}
	pages := make([]Page, len(c.Pages))
	for i, p := range c.Pages {
		if p.Fields == nil {
			p.Fields = []Field{}
		}
		pages[i] = p
	}
	c.Pages = pages
	b, err := json.Marshal(&c)
	if err != nil { // a default that is not JSON (a channel, NaN)
		return []Problem{{Pointer: "", Message: "not representable as JSON: " + err.Error()}}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return []Problem{{Pointer: "", Message: err.Error()}}
	}
	return schemaErrorProblems(compiled.Validate(doc))
}

var quoted = regexp.MustCompile(`'([^']*)'`)

// schemaErrorProblems flattens a jsonschema error into one problem per failing leaf.
func schemaErrorProblems(err error) []Problem {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Pointer: "", Message: err.Error()}}
	}
	var out []Problem
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		switch {
		case strings.HasPrefix(v.Message, "missing properties"):
			for _, m := range quoted.FindAllStringSubmatch(v.Message, -1) {
				out = append(out, Problem{v.InstanceLocation + "/" + pointerToken(m[1]), "required property is missing"})
			}
		case strings.HasPrefix(v.Message, "additionalProperties"):
			for _, m := range quoted.FindAllStringSubmatch(v.Message, -1) {
				out = append(out, Problem{v.InstanceLocation + "/" + pointerToken(m[1]), "unknown property"})
			}
		default:
			out = append(out, Problem{v.InstanceLocation, v.Message})
		}
	}
	walk(ve)
	return out
}

// sortProblems puts problems in document order: pointers compared segment by segment,
// numerically where both segments are array indexes, so /fields/10 follows /fields/2.
// Problems at one pointer keep their order.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool { return pointerLess(ps[i].Pointer, ps[j].Pointer) })
}

func pointerLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		an, aerr := strconv.Atoi(as[i])
		bn, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return an < bn
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}
