package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Run context by key: one key of a run, read from that key's row alone, an array value
// paged without decoding its elements (a run's matchGroups may be tens of megabytes).

const (
	// DefaultContextLimit is the page size of an array value when RunContext is given none.
	DefaultContextLimit = 100
	// MaxContextLimit is the largest page of an array value.
	MaxContextLimit = 1000
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
	found, err := e.store.GetContext(ctx, orgID, runID, key)
	if err != nil {
		return nil, err
	}
	raw, ok := found[key]
	if !ok {
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
