package expr

import (
	"sync"

	"github.com/svcflow/svcflow/internal/jsonnum"
)

// Lazy is a JSON value held as its bytes and decoded the first time a path reaches into
// it, then kept decoded. The engine keeps a large value this way (a run's input of
// records, a stored array of pairs): a step that takes the bytes themselves (the matcher,
// svctype.RawJSON) never pays for decoding them, and every other reader, through Lookup,
// sees the decoded value as before. Safe for concurrent use.
type Lazy struct {
	raw  []byte
	n    int // the array's length when known, else -1
	once sync.Once
	val  any
}

// NewLazy holds raw, which must be valid JSON and is not copied: the caller does not
// change it afterwards.
func NewLazy(raw []byte) *Lazy { return &Lazy{raw: raw, n: -1} }

// NewLazyArray is NewLazy for a JSON array whose length the caller knows.
func NewLazyArray(raw []byte, n int) *Lazy { return &Lazy{raw: raw, n: n} }

// Len is the array's length given to NewLazyArray; false when it was not given.
func (l *Lazy) Len() (int, bool) { return l.n, l.n >= 0 }

// Raw returns the value's JSON.
func (l *Lazy) Raw() []byte { return l.raw }

// Value returns the decoded value, decoding it the first time (nil when raw is not JSON).
func (l *Lazy) Value() any {
	l.once.Do(func() {
		if err := jsonnum.Unmarshal(l.raw, &l.val); err != nil {
			l.val = nil
		}
	})
	return l.val
}

// MarshalJSON writes the bytes held.
func (l *Lazy) MarshalJSON() ([]byte, error) { return l.raw, nil }

// encodedArray is svctype.EncodedArray, which this package cannot import: a JSON array
// already encoded (a matcher's pairs).
type encodedArray interface {
	Len() int
	AppendArray(dst []byte, from, to int) ([]byte, error)
}

// deref decodes v when it is a Lazy, or an encoded array (the engine turns those into
// Lazy values after their commit; this is for one met before).
func deref(v any) any {
	switch x := v.(type) {
	case *Lazy:
		return x.Value()
	case encodedArray:
		b, err := x.AppendArray(nil, 0, x.Len())
		if err != nil {
			return nil
		}
		return NewLazy(b).Value()
	}
	return v
}
