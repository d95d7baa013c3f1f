package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Run context by key: one key of a run, read from that key's row alone, an array value
// paged without decoding its elements (a run's matchGroups may be tens of megabytes).

const (
	// DefaultContextLimit is the page size of an array value when RunContext is given none.
	DefaultContextLimit = 100
	// MaxContextLimit is the largest page of an array value.
	MaxContextLimit = 10_000
)

// ContextValue is one key of a run's context. An array is paged: Value holds its elements
// [Offset, Offset+Limit) as a JSON array (empty past the end) and Total its length. Any
// other value is whole in Value, and Paged is false.
type ContextValue struct {
	Key   string
	Value json.RawMessage
	// Paged is true when the value is an array; Total, Offset and Limit are set only then.
	Paged  bool
	Total  int
	Offset int
	Limit  int
}

// RunContext returns the context key key of a run. When its value is an array, it returns
// the page of at most limit elements from offset (limit 0 means DefaultContextLimit) with
// the array's length; other values are returned whole and offset and limit are not used.
// A run without the key is ErrNoContextKey, a run that is not the org's ErrNotFound; a
// negative offset or a limit outside 1..MaxContextLimit is a ValidationError. Only the
// key's own row is read.
func (e *Core) RunContext(ctx context.Context, orgID, runID, key string, offset, limit int) (*ContextValue, error) {
	if err := CheckOrg(orgID); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, Invalid("/offset", "must be 0 or more")
	}
	if limit == 0 {
		limit = DefaultContextLimit
	}
	if limit < 1 || limit > MaxContextLimit {
		return nil, Invalid("/limit", "must be between 1 and %d", MaxContextLimit)
	}
	slice, err := e.store.ContextSlice(ctx, orgID, runID, key, offset, offset+limit)
	if err != nil {
		return nil, err
	}
	if slice.Parts != nil {
		page, err := pageParts(slice, offset, limit)
		if err != nil {
			return nil, fmt.Errorf("context key %q of run %s: %w", key, runID, err)
		}
		return &ContextValue{Key: key, Value: page, Paged: true, Total: slice.Length, Offset: offset, Limit: limit}, nil
	}
	raw := slice.Whole
	if !slice.Found {
		// The org filter in the query above hides another org's run; this read only tells
		// a missing run from a missing key (and answers the one key that is not stored).
		run, err := e.store.GetRun(ctx, orgID, runID)
		if err != nil {
			return nil, err
		}
		if key != runIDKey {
			return nil, fmt.Errorf("%w: run %s has no key %q", ErrNoContextKey, runID, key)
		}
		raw, _ = json.Marshal(run.ID)
	}
	page, total, isArray, err := pageArray(raw, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("context key %q of run %s: %w", key, runID, err)
	}
	if !isArray {
		return &ContextValue{Key: key, Value: raw}, nil
	}
	return &ContextValue{Key: key, Value: page, Paged: true, Total: total, Offset: offset, Limit: limit}, nil
}

// LargeValueBytes is the size above which a context value is large: an array is stored in
// parts of about PartBytes (a page of it reads only its parts), the status document shows
// a reference to GET /runs/{runId}/context/{key} instead of the value, and a run's input is
// stored once, as its context key input, with a reference in the run's row and event.
const LargeValueBytes = 256 << 10

// PartBytes is about the size of one part of a large array.
const PartBytes = 128 << 10

// partLength is how many elements each part of a large array of n elements holds, from
// their average encoded size avg: about PartBytes of them, rounded down to a length that
// pages of 100, 1,000 and 10,000 elements (the context route's default, a common page and
// its largest) fall on: 100, 200 or 500 times a power of ten. A page that covers a part
// whole copies it as it is, with no walk over its elements (pageParts), so a client reading
// a large array 1,000 or 10,000 at a time reads whole parts.
func partLength(avg, n int) int {
	per := max(1, PartBytes/max(avg, 1))
	if per >= 100 {
		scale := 100
		for scale*10 <= per {
			scale *= 10
		}
		switch {
		case per >= 5*scale:
			per = 5 * scale
		case per >= 2*scale:
			per = 2 * scale
		default:
			per = scale
		}
	}
	return max(1, min(n, per))
}

// largeRef is what the status document (and a large input's run row and event) shows for a
// large value: where to read it, its size, and its length when known.
func largeRef(runID, key string, ref storage.ContextRef) map[string]any {
	out := map[string]any{"result_reference": "/runs/" + runID + "/context/" + key, "truncated": true}
	if ref.Size > 0 {
		out["bytes"] = ref.Size
	}
	if ref.Parts {
		out["length"] = ref.Length
	}
	return out
}

// encoded is a context value's JSON as it is stored: whole, or a large array in parts of
// per elements, either encoded already (parts) or to be encoded one part at a time as it
// is written (array).
type encoded struct {
	whole  []byte
	parts  []json.RawMessage
	array  svctype.EncodedArray
	length int
	per    int
}

// large reports whether e is stored in parts.
func (e encoded) large() bool { return e.parts != nil || e.array != nil }

// partSeq yields e's parts: those encoded, or each part of its array encoded into the
// bytes of the one before, once the store has written it.
func (e encoded) partSeq() iter.Seq2[json.RawMessage, error] {
	if e.array == nil {
		return storage.Parts(e.parts...)
	}
	return func(yield func(json.RawMessage, error) bool) {
		var buf []byte
		for i := 0; i < e.length; i += e.per {
			var err error
			buf, err = e.array.AppendArray(buf[:0], i, min(i+e.per, e.length))
			if !yield(buf, err) || err != nil {
				return
			}
		}
	}
}

// encodeOutput encodes a step's output for the store. A large array is encoded straight
// into its parts, element by element: no buffer of the whole value is grown, and no
// parser walks it again to cut it.
func encodeOutput(v any) (encoded, error) {
	switch x := v.(type) {
	case svctype.EncodedArray:
		return encodeArray(x)
	case *expr.Lazy:
		return encoded{whole: x.Raw()}, nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		b, err := encodeValue(v)
		return encoded{whole: b}, err
	}
	// The first elements give the average size, as splitArray takes it from the whole.
	sample := min(len(arr), 64)
	head, err := appendValue(make([]byte, 0, 4096), arr[:sample])
	if err != nil {
		return encoded{}, err
	}
	if sample == len(arr) && len(head) <= LargeValueBytes {
		return encoded{whole: head}, nil // the sample was the whole array
	}
	avg := max(1, (len(head)-2)/sample+1)
	if avg*len(arr) <= LargeValueBytes {
		b, err := appendValue(make([]byte, 0, avg*len(arr)+64), arr)
		return encoded{whole: b}, err
	}
	per := partLength(avg, len(arr))
	out := encoded{length: len(arr), per: per}
	size := 0
	for i := 0; i < len(arr); i += per {
		part, err := appendValue(make([]byte, 0, avg*per+avg), arr[i:min(i+per, len(arr))])
		if err != nil {
			return encoded{}, err
		}
		out.parts = append(out.parts, part)
		size += len(part)
	}
	if size <= LargeValueBytes {
		// The sample was larger than the rest: small after all, stored whole.
		b, err := appendValue(make([]byte, 0, size+64), arr)
		return encoded{whole: b}, err
	}
	return out, nil
}

// encodeArray stores an array encoded elsewhere (a matcher's pairs) as it is: whole when
// small, else in parts of per elements, per taken from the first elements' size.
func encodeArray(a svctype.EncodedArray) (encoded, error) {
	n := a.Len()
	sample := min(n, 64)
	head, err := a.AppendArray(make([]byte, 0, 4096), 0, sample)
	if err != nil {
		return encoded{}, err
	}
	avg := max(1, (len(head)-2)/max(sample, 1)+1)
	if n < 2 || avg*n <= LargeValueBytes {
		b, err := a.AppendArray(make([]byte, 0, avg*n+64), 0, n)
		return encoded{whole: b}, err
	}
	// Its elements are bytes already: the store encodes it part by part as it writes the
	// parts (partSeq), so that a million pairs (170 MB) are never held encoded beside the
	// records they were copied from. Its size is taken part by part here, in one buffer.
	per := partLength(avg, n)
	size := 0
	var buf []byte
	for i := 0; i < n; i += per {
		if buf, err = a.AppendArray(buf[:0], i, min(i+per, n)); err != nil {
			return encoded{}, err
		}
		size += len(buf)
	}
	if size <= LargeValueBytes {
		// The sample was larger than the rest: small after all, stored whole.
		b, err := a.AppendArray(make([]byte, 0, size+64), 0, n)
		return encoded{whole: b}, err
	}
	return encoded{array: a, length: n, per: per}, nil
}

// varValue is what the run's variables hold of an output after its commit: the output
// itself, but an encoded array as a Lazy over the bytes stored (decoded only if a later
// step reads into it).
func varValue(v any, e encoded) any {
	if m, ok := v.(map[string]any); ok {
		// A step's whole ContextOutputs under its outputKey: a step that reads the map
		// whole gets decoded values in it, as on the decoded path. Only its own members
		// can be encoded arrays: no deeper walk (this runs at every step's commit).
		var out map[string]any
		for k, x := range m {
			if a, ok := x.(svctype.EncodedArray); ok {
				if out == nil {
					out = maps.Clone(m) // m is the step's own map, shared with its keys
				}
				out[k] = materialize(a)
			}
		}
		if out != nil {
			return out
		}
		return m
	}
	a, ok := v.(svctype.EncodedArray)
	if !ok {
		return v
	}
	if !e.large() {
		// Small (stored whole): decoded, an ordinary value.
		return materialize(a)
	}
	if e.parts == nil {
		b, err := a.AppendArray(make([]byte, 0, 64), 0, a.Len())
		if err != nil {
			return materialize(a)
		}
		return expr.NewLazyArray(b, a.Len())
	}
	n := 0
	for _, p := range e.parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, p := range e.parts {
		inner := p[1 : len(p)-1]
		if len(inner) == 0 {
			continue
		}
		if i > 0 && len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, inner...)
	}
	return expr.NewLazyArray(append(b, ']'), a.Len())
}

// materialize returns v with every value held as bytes (expr.Lazy, svctype.EncodedArray)
// in it decoded; v itself when it holds none. Maps and slices that hold one are copied.
func materialize(v any) any {
	switch x := v.(type) {
	case *expr.Lazy:
		return x.Value()
	case svctype.EncodedArray:
		b, err := x.AppendArray(nil, 0, x.Len())
		if err != nil {
			return nil
		}
		return expr.NewLazy(b).Value()
	case map[string]any:
		var out map[string]any
		for k, el := range x {
			if m := materialize(el); !sameValue(m, el) {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = m
			}
		}
		if out != nil {
			return out
		}
	case []any:
		var out []any
		for i, el := range x {
			if m := materialize(el); !sameValue(m, el) {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = m
			}
		}
		if out != nil {
			return out
		}
	}
	return v
}

// sameValue reports whether materialize left el as it was: it only ever replaces a
// value held as bytes, or a map or slice holding one.
func sameValue(m, el any) bool {
	switch el.(type) {
	case *expr.Lazy, svctype.EncodedArray:
		return false
	case map[string]any:
		return reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(el).UnsafePointer()
	case []any:
		a, b := m.([]any), el.([]any)
		return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
	}
	return true
}

// arrayLength is v's length when v is an array: a decoded one, an encoded one, or one
// held as bytes (counted in its bytes).
func arrayLength(v any) (int, bool) {
	switch x := v.(type) {
	case []any:
		return len(x), true
	case svctype.EncodedArray:
		return x.Len(), true
	case *expr.Lazy:
		if n, ok := x.Len(); ok {
			return n, true
		}
		r := gjson.ParseBytes(x.Raw())
		if !r.IsArray() {
			return 0, false
		}
		n := 0
		r.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		return n, true
	}
	return 0, false
}

// putValue writes one context key of a step commit: a large array in parts, anything
// else whole.
func putValue(ctx context.Context, tx storage.Tx, orgID, runID, key string, v encoded) error {
	if v.large() {
		return tx.PutContextParts(ctx, orgID, runID, key, v.partSeq(), v.length, v.per)
	}
	b := v.whole
	if len(b) > LargeValueBytes {
		if parts, length, per, ok := splitArray(b); ok {
			return tx.PutContextParts(ctx, orgID, runID, key, storage.Parts(parts...), length, per)
		}
	}
	return tx.PutContext(ctx, orgID, runID, key, b)
}

// splitArray cuts the JSON array b (as json.Marshal wrote it) into parts of per elements
// (partLength). It reports false when b is not an array, or has fewer than two elements.
func splitArray(b []byte) (parts []json.RawMessage, length, per int, ok bool) {
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, 0, 0, false
	}
	var els []string
	gjson.Parse(unsafe.String(&trimmed[0], len(trimmed))).ForEach(func(_, el gjson.Result) bool {
		els = append(els, el.Raw)
		return true
	})
	if len(els) < 2 {
		return nil, 0, 0, false
	}
	per = partLength(len(trimmed)/len(els), len(els))
	for i := 0; i < len(els); i += per {
		group := els[i:min(i+per, len(els))]
		n := 2
		for _, el := range group {
			n += len(el) + 1
		}
		part := make([]byte, 0, n)
		part = append(part, '[')
		for j, el := range group {
			if j > 0 {
				part = append(part, ',')
			}
			part = append(part, el...)
		}
		parts = append(parts, append(part, ']'))
	}
	return parts, len(els), per, true
}

// pageParts returns the elements [offset, offset+limit) of an array read in parts. A part
// the page covers whole is copied as it is stored, between its brackets: the parts were
// written from encoded or checked JSON (encodeOutput, splitArray, an EncodedArray), so only
// their brackets are checked here. A part the page starts or ends inside is checked
// (gjson.Valid) and walked to the page's elements.
func pageParts(slice storage.ContextSlice, offset, limit int) (json.RawMessage, error) {
	size := 2
	for _, p := range slice.Parts {
		size += len(p)
	}
	out := make([]byte, 1, size)
	out[0] = '['
	i, n := slice.Start, 0
	for _, p := range slice.Parts {
		if n >= limit {
			break
		}
		if len(p) < 2 || p[0] != '[' || p[len(p)-1] != ']' {
			return nil, errors.New("a stored part is not a JSON array")
		}
		count := 0 // unknown without a walk
		if slice.Per > 0 {
			count = min(slice.Per, slice.Length-i) // the array's last part may be short
		}
		if count > 0 && i >= offset && n+count <= limit {
			if inner := p[1 : len(p)-1]; len(inner) > 0 {
				if n > 0 {
					out = append(out, ',')
				}
				out = append(out, inner...)
			}
			i += count
			n += count
			continue
		}
		str := unsafe.String(&p[0], len(p))
		if !gjson.Valid(str) {
			return nil, errors.New("a stored part is not valid JSON")
		}
		gjson.Parse(str).ForEach(func(_, el gjson.Result) bool {
			if i >= offset && n < limit {
				if n > 0 {
					out = append(out, ',')
				}
				out = append(out, el.Raw...)
				n++
			}
			i++
			return n < limit
		})
	}
	return append(out, ']'), nil
}

// runIDKey is the fixed context key the status document and @__run_id carry: it has no row.
const runIDKey = "__run_id"

// pageArray returns, when raw is a JSON array, its elements [offset, offset+limit) as a JSON
// array and its length. It never decodes an element: gjson walks the array's bytes
// (strings and nesting, nothing converted) and the page's elements are copied out as they
// are. gjson checks the whole value first (gjson.Valid, no allocation) and walks it after,
// together about ten times as fast as encoding/json's Decoder, which made reading every
// page of a 46,000-pair result cost 5 s (BenchmarkPageArray, docs/performance.md).
func pageArray(raw json.RawMessage, offset, limit int) (page json.RawMessage, total int, isArray bool, err error) {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, 0, false, nil
	}
	// A string over raw's bytes, not a copy of them (gjson.ParseBytes copies: the size of
	// the value, allocated for each page): raw is not changed while the walk reads it.
	str := unsafe.String(&trimmed[0], len(trimmed))
	if !gjson.Valid(str) {
		return nil, 0, true, errors.New("the stored array is not valid JSON")
	}
	arr := gjson.Parse(str)
	out := []byte{'['}
	arr.ForEach(func(_, el gjson.Result) bool {
		if total >= offset && total-offset < limit {
			if total > offset {
				out = append(out, ',')
			}
			out = append(out, el.Raw...)
		}
		total++
		return true
	})
	return append(out, ']'), total, true, nil
}
