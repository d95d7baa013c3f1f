package expr

import (
	"context"
	"strings"
)

// PrefixPinner turns the ref of a prefix token (without its prefix) into one that names
// exactly what the token reads now, so that reading the pinned token later reads the same
// thing: a document's latest version, doc_1, becomes doc_1@3. A ref already exact is
// returned as it is.
type PrefixPinner func(ctx context.Context, ref string) (string, error)

// RegisterPin gives prefix name a pinner (Pin). Registering a name again replaces it. An
// empty name or a nil fn is a programming error and panics.
func (e *Evaluator) RegisterPin(name string, fn PrefixPinner) {
	if name == "" || fn == nil {
		panic("expr: RegisterPin needs a prefix and a pinner")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := make(map[string]PrefixPinner, len(e.pins)+1)
	for k, v := range e.pins {
		next[k] = v
	}
	next[name] = fn
	e.pins = next
}

// Pin returns value with its prefix token pinned, when value is a string that starts with
// a prefix that has a pinner (the longest such prefix); any other value as it is. A
// reader that must see one version of what it reads across several reads (a foreach's
// items, read again at every slice) pins it once and reads the pinned token.
func (e *Evaluator) Pin(ctx context.Context, value any) (any, error) {
	s, ok := value.(string)
	if !ok || e == nil {
		return value, nil
	}
	e.mu.RLock()
	prefixes, pins := e.prefixes, e.pins
	e.mu.RUnlock()
	for _, p := range prefixes { // longest first, as Resolve picks
		if !strings.HasPrefix(s, p.name) {
			continue
		}
		pin, ok := pins[p.name]
		if !ok {
			return value, nil
		}
		ref, err := pin(ctx, s[len(p.name):])
		if err != nil {
			return nil, err
		}
		return p.name + ref, nil
	}
	return value, nil
}
