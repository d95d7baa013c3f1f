package core

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
)

// resolveProps resolves a step's properties for its kind. A property the kind also takes
// as bytes (StepKind.RawProperties), written as a plain path into a value the run holds as
// bytes ("@input.bank" into a large input), is given as that array's JSON
// (svctype.RawJSON) instead: the input is not decoded for it.
//
// Only a top-level step takes bytes (raw): a step in a foreach element hands its outputs
// to the element's next steps, which read them as decoded values.
func (e *Core) resolveProps(ctx context.Context, orgID string, kind svctype.StepKind, props map[string]any, vars expr.Vars, raw bool) (map[string]any, error) {
	rawProps := kind.RawProperties
	if !raw {
		rawProps = nil
	}
	var got map[string]any
	keep := func(name string, v any) {
		if got == nil {
			got = map[string]any{}
		}
		got[name] = v
	}
	var docs []string // the properties that are doc: references
	for _, name := range rawProps {
		p, ok := props[name].(string)
		if !ok {
			continue
		}
		if b, ok := rawArray(p, vars); ok {
			keep(name, svctype.RawJSON(b))
		} else if strings.HasPrefix(p, "doc:") {
			docs = append(docs, name)
		}
	}
	// Documents, extracted as JSON bytes, side by side: each is read and extracted on its
	// own (a 2-way matcher's two CSV files).
	found := make([]any, len(docs))
	errs := make([]error, len(docs))
	var wg sync.WaitGroup
	for i, name := range docs {
		resolveDoc := func() {
			found[i], errs[i] = e.eval.Resolve(svctype.WithRawJSON(kindContext(ctx, orgID, kind)), props[name], vars)
		}
		if i == len(docs)-1 {
			resolveDoc() // the last on this goroutine
		} else {
			wg.Go(resolveDoc)
		}
	}
	wg.Wait()
	for i, name := range docs {
		if errs[i] != nil {
			// Resolved as any other property, here and in RawProperties' order (the left
			// leg before the right): its error is then the one the run fails with, as it
			// was before legs were taken as bytes; the map below would report whichever
			// failing property its walk met first.
			v, err := e.eval.Resolve(kindContext(ctx, orgID, kind), props[name], vars)
			if err != nil {
				return nil, err
			}
			found[i] = v
		}
		keep(name, found[i])
	}
	src := props
	if got != nil {
		src = maps.Clone(props)
		for k := range got {
			delete(src, k)
		}
	}
	resolved, err := e.eval.Resolve(kindContext(ctx, orgID, kind), src, vars)
	if err != nil {
		return nil, err
	}
	pm, _ := resolved.(map[string]any)
	if got == nil { // every step but a matcher on bytes: no copy
		if pm == nil {
			pm = map[string]any{}
		}
		return pm, nil
	}
	out := make(map[string]any, len(pm)+len(got))
	maps.Copy(out, pm)
	maps.Copy(out, got)
	return out, nil
}

// plainSegment is a path segment rawArray follows: a field name, no index, no "length".
var plainSegment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// rawArray returns the JSON of the array at path ("@root" or "@root.a.b", field names
// only) when the run holds root as bytes (expr.Lazy); false otherwise, and for anything
// but an array. A field named twice in one object is read as encoding/json reads it: the
// last one.
func rawArray(path string, vars expr.Vars) ([]byte, bool) {
	p, ok := strings.CutPrefix(path, "@")
	if !ok {
		return nil, false
	}
	segs := strings.Split(p, ".")
	l, ok := vars[segs[0]].(*expr.Lazy)
	if !ok {
		return nil, false
	}
	raw := l.Raw()
	if len(raw) == 0 {
		return nil, false
	}
	// Read in place: gjson.ParseBytes would copy the whole value into a string first.
	cur := gjson.Parse(unsafe.String(&raw[0], len(raw)))
	for _, seg := range segs[1:] {
		if !plainSegment.MatchString(seg) || seg == "length" || seg == "__proto__" || seg == "constructor" || seg == "prototype" {
			return nil, false
		}
		if !cur.IsObject() {
			return nil, false
		}
		var found gjson.Result
		cur.ForEach(func(k, v gjson.Result) bool {
			if k.Str == seg {
				found = v
			}
			return true
		})
		cur = found
	}
	if !cur.IsArray() {
		return nil, false
	}
	if end := cur.Index + len(cur.Raw); end <= len(raw) && string(raw[cur.Index:end]) == cur.Raw {
		// The array's bytes within the value's, not a copy (Index is where Raw starts).
		return raw[cur.Index:end:end], true
	}
	return []byte(cur.Raw), true
}
