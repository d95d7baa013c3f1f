package expr

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// PrefixResolver resolves a prefix token. It is given everything after the prefix:
// for "doc:doc_123@2" registered under "doc:", ref is "doc_123@2".
type PrefixResolver func(ctx context.Context, ref string) (any, error)

// Evaluator resolves property values, including the prefix tokens ("doc:",
// "orgconfig:") that later features register on it. The zero value is ready to use
// and knows no prefixes. It is safe for concurrent use.
type Evaluator struct {
	mu sync.RWMutex
	// prefixes is replaced, never changed in place, so a Resolve in flight keeps the
	// snapshot it started with. Longest prefix first, so that "doc:v2:" would win
	// over "doc:".
	prefixes []prefix
	// pins are the prefixes' pinners (Pin), replaced like prefixes.
	pins map[string]PrefixPinner
}

type prefix struct {
	name    string
	resolve PrefixResolver
}

// New returns an Evaluator with no prefixes registered.
func New() *Evaluator {
	return &Evaluator{}
}

// RegisterPrefix makes Resolve hand every string that starts with name (such as
// "doc:") to fn. Registering a name again replaces its resolver. An empty name or a
// nil fn is a programming error and panics.
func (e *Evaluator) RegisterPrefix(name string, fn PrefixResolver) {
	if name == "" || fn == nil {
		panic("expr: RegisterPrefix needs a prefix and a resolver")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := slices.DeleteFunc(slices.Clone(e.prefixes), func(p prefix) bool { return p.name == name })
	next = append(next, prefix{name: name, resolve: fn})
	slices.SortFunc(next, func(a, b prefix) int {
		return cmp.Or(cmp.Compare(len(b.name), len(a.name)), strings.Compare(a.name, b.name))
	})
	e.prefixes = next
}

// Resolve evaluates a step property value for the executor:
//   - a string that is exactly "@path" gives the raw value of Lookup, of any type (not
//     a copy: callers must not change it);
//   - a string that starts with a registered prefix gives the resolver's value; the
//     ref is passed as written, without rendering templates in it, so run input cannot
//     choose which document or secret a definition reads;
//   - any other string containing "{{" is rendered to text by Render;
//   - maps and arrays are copied and resolved element by element;
//   - every other value is returned as it is.
//
// Errors come only from prefix resolvers, and name the token that failed.
func (e *Evaluator) Resolve(ctx context.Context, value any, vars Vars) (any, error) {
	var prefixes []prefix
	if e != nil {
		e.mu.RLock()
		prefixes = e.prefixes
		e.mu.RUnlock()
	}
	return resolve(ctx, value, vars, prefixes)
}

func resolve(ctx context.Context, value any, vars Vars, prefixes []prefix) (any, error) {
	switch v := value.(type) {
	case nil, bool, float64, json.Number:
		return v, nil
	case string:
		return resolveString(ctx, v, vars, prefixes)
	case []any:
		return resolveList(ctx, v, vars, prefixes)
	case map[string]any:
		return resolveObject(ctx, v, vars, prefixes)
	case []byte:
		return v, nil
	}
	if s, ok := str(value); ok {
		return resolveString(ctx, s, vars, prefixes)
	}
	if l, ok := list(value); ok {
		return resolveList(ctx, l, vars, prefixes)
	}
	if m, ok := object(value); ok {
		return resolveObject(ctx, m, vars, prefixes)
	}
	return value, nil
}

func resolveString(ctx context.Context, s string, vars Vars, prefixes []prefix) (any, error) {
	if isPath(s) {
		return Lookup(s, vars), nil
	}
	for _, p := range prefixes {
		if ref, ok := strings.CutPrefix(s, p.name); ok {
			v, err := p.resolve(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("expr: resolve %q: %w", s, err)
			}
			return v, nil
		}
	}
	return Render(s, vars), nil
}

func resolveList(ctx context.Context, l []any, vars Vars, prefixes []prefix) (any, error) {
	out := make([]any, len(l))
	for i, elem := range l {
		v, err := resolve(ctx, elem, vars, prefixes)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func resolveObject(ctx context.Context, m map[string]any, vars Vars, prefixes []prefix) (any, error) {
	out := make(map[string]any, len(m))
	for k, elem := range m {
		v, err := resolve(ctx, elem, vars, prefixes)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}
