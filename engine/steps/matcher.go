package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/svcflow/svcflow/engine/documents"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/match"
)

// Matcher is the 2-way match step.
const Matcher = "matcher"

// Matcher events (spec section 6).
const (
	EventMatcherStarted   = "matcher.started"
	EventMatcherCompleted = "matcher.completed"
	EventMatcherFailed    = "matcher.failed"
)

// MatcherSchemaVersion names the shape of the matcher's results (pairs {left, right} and the
// unmatched source records).
const MatcherSchemaVersion = "svc.match-pair.v1"

// releaseAfterRecords is the total record count from which a matcher on bytes collects
// and returns its index's memory before its outputs are written (docs/decisions.md).
const releaseAfterRecords = 500_000

// LargeMatchInput is the total record count above which matcher.started is emitted.
const LargeMatchInput = 10000

// Default context keys of the matcher's three outputs.
const (
	defaultMatched        = "matched"
	defaultUnmatchedLeft  = "unmatchedLeft"
	defaultUnmatchedRight = "unmatchedRight"
)

func problems(ps []match.Problem) []svctype.PropertyProblem {
	out := make([]svctype.PropertyProblem, len(ps))
	for i, p := range ps {
		out[i] = svctype.PropertyProblem{Pointer: p.Pointer, Message: p.Message}
	}
	return out
}

// isDynamic reports whether a property value is only known at run time.
func isDynamic(v any) bool {
	s, ok := v.(string)
	return ok && (strings.HasPrefix(s, "@") || strings.Contains(s, "{{") || strings.HasPrefix(s, "doc:"))
}

func validateMatcher(props map[string]any) []svctype.PropertyProblem {
	var out []svctype.PropertyProblem
	for _, side := range []string{"left", "right"} {
		switch v := props[side].(type) {
		case []any:
		case string:
			if !isDynamic(v) {
				out = append(out, svctype.PropertyProblem{Pointer: "/" + side, Message: "must be an @path to an array, a doc: reference or an array"})
			}
		default:
			out = append(out, svctype.PropertyProblem{Pointer: "/" + side, Message: "required: an @path to an array, a doc: reference or an array"})
		}
	}
	opts, ps := matchOptions(props, true)
	out = append(out, ps...)
	if ps == nil {
		out = append(out, problems(match.ValidateMatch(opts))...)
	}
	for _, k := range []string{"outputMatched", "outputUnmatchedLeft", "outputUnmatchedRight"} {
		if v, ok := props[k]; ok {
			if s, isStr := v.(string); !isStr || s == "" {
				out = append(out, svctype.PropertyProblem{Pointer: "/" + k, Message: "must be a context key"})
			}
		}
	}
	return out
}

// matchOptions reads the matcher's options; at definition time (static) values that are
// only known at run time are skipped.
func matchOptions(p map[string]any, static bool) (match.MatchOptions, []svctype.PropertyProblem) {
	var opts match.MatchOptions
	var out []svctype.PropertyProblem
	var err error
	if opts.MatchOn, err = fieldList(p["matchOn"]); err != nil {
		out = append(out, svctype.PropertyProblem{Pointer: "/matchOn", Message: err.Error()})
	}
	out = stringProps(p, out, map[string]*string{"amountKey": &opts.AmountKey, "dateKey": &opts.DateKey, "descriptionKey": &opts.DescriptionKey})
	out = numberProps(p, out, static, map[string]**float64{"tolerance": &opts.Tolerance, "dateWindowDays": &opts.DateWindowDays, "fuzzyThreshold": &opts.FuzzyThreshold})
	return opts, out
}

// stringProps reads optional field-name properties into dst.
func stringProps(p map[string]any, out []svctype.PropertyProblem, dst map[string]*string) []svctype.PropertyProblem {
	for _, name := range slices.Sorted(maps.Keys(dst)) {
		v, ok := p[name]
		if !ok {
			continue
		}
		s, isStr := v.(string)
		if !isStr || s == "" {
			out = append(out, svctype.PropertyProblem{Pointer: "/" + name, Message: "must be a field name"})
			continue
		}
		*dst[name] = s
	}
	return out
}

// numberProps reads optional numeric properties into dst; at definition time (static) a
// value only known at run time is skipped.
func numberProps(p map[string]any, out []svctype.PropertyProblem, static bool, dst map[string]**float64) []svctype.PropertyProblem {
	for _, name := range slices.Sorted(maps.Keys(dst)) {
		v, ok := p[name]
		if !ok || v == nil || (static && isDynamic(v)) {
			continue
		}
		n, isNum := svctype.Float(v)
		if !isNum {
			out = append(out, svctype.PropertyProblem{Pointer: "/" + name, Message: fmt.Sprintf("must be a number, got %v", v)})
			continue
		}
		*dst[name] = &n
	}
	return out
}

func fieldList(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be an array of field names")
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("entry %d must be a field name", i)
		}
		out[i] = s
	}
	return out, nil
}

// records turns a resolved property into records, naming the property when it is not an
// array of objects.
func records(v any, prop string) ([]match.Record, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s did not resolve to an array (got %s)", prop, svctype.JSONType(v))
	}
	out := make([]match.Record, len(arr))
	for i, x := range arr {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is not an object (got %s)", prop, i, svctype.JSONType(x))
		}
		out[i] = m
	}
	return out, nil
}

// isRaw reports whether v is a leg given as bytes: JSON, or a CSV document's.
func isRaw(v any) bool {
	switch v.(type) {
	case svctype.RawJSON, *documents.CSVRecords:
		return true
	}
	return false
}

// dataset is a leg as the matcher reads it: a CSV document's records read from its bytes,
// records held as JSON bytes (a large input's array, a document's records, svctype.RawJSON),
// or decoded records.
func dataset(v any, prop string) (match.Dataset, error) {
	if recs, ok := v.(*documents.CSVRecords); ok {
		return newCSVLeg(recs), nil
	}
	if raw, ok := v.(svctype.RawJSON); ok {
		d, err := match.NewRawRecords(raw)
		if err != nil {
			// Said as the decoded path says it ("left[3] is not an object"): decoded
			// here, on this failure only.
			var decoded any
			if json.Unmarshal(raw, &decoded) == nil {
				if _, rerr := records(decoded, prop); rerr != nil {
					return nil, rerr
				}
			}
			return nil, fmt.Errorf("%s must be an array of objects: %w", prop, err)
		}
		return d, nil
	}
	recs, err := records(v, prop)
	return match.Records(recs), err
}

// runMatcherOnBytes is the matcher on legs held as JSON bytes (RawProperties: a large
// input's arrays): no record is decoded into a map, and the outputs are written from the
// records' bytes, stored by the engine part by part (svctype.EncodedArray).
func runMatcherOnBytes(call *svctype.StepCall, p map[string]any, fail func(error) error) (any, error) {
	// The two legs are indexed side by side: each is a walk over its own bytes.
	var (
		right    match.Dataset
		rightErr error
		wg       sync.WaitGroup
	)
	wg.Go(func() { right, rightErr = dataset(p["right"], "right") })
	left, err := dataset(p["left"], "left")
	wg.Wait()
	if err != nil {
		return nil, fail(err)
	}
	if rightErr != nil {
		return nil, fail(rightErr)
	}
	opts, ps := matchOptions(p, false)
	if len(ps) > 0 {
		return nil, fail(fmt.Errorf("%s: %s", ps[0].Pointer, ps[0].Message))
	}
	if left.Len()+right.Len() > LargeMatchInput {
		call.Emit(EventMatcherStarted, map[string]any{"left_size": left.Len(), "right_size": right.Len()})
	}
	res, err := match.MatchDatasets(left, right, opts)
	if err != nil {
		return nil, fail(err)
	}
	if left.Len()+right.Len() >= releaseAfterRecords {
		// The matcher's index is garbage now; what lives on is the legs and the pairs,
		// which the outputs are written from. Collect and give the memory back before
		// the outputs are written: else the collector's goal, set while the index was
		// live, lets the writing's garbage grow the heap to about twice that.
		debug.FreeOSMemory()
	}
	matched, ul, ur := res.Outputs()
	call.Emit(EventMatcherCompleted, map[string]any{
		"schema_version": MatcherSchemaVersion, "matched_count": matched.Len(),
		"unmatched_left_count": ul.Len(), "unmatched_right_count": ur.Len(), "policy": res.Policy,
	})
	return svctype.ContextOutputs{
		outputKey(p, "outputMatched", defaultMatched):               matched,
		outputKey(p, "outputUnmatchedLeft", defaultUnmatchedLeft):   ul,
		outputKey(p, "outputUnmatchedRight", defaultUnmatchedRight): ur,
	}, nil
}

// outputKey is the context key the property name sets, def when it is unset.
func outputKey(p map[string]any, name, def string) string {
	if s, _ := p[name].(string); s != "" {
		return s
	}
	return def
}

func runMatcher(ctx context.Context, call *svctype.StepCall) (any, error) {
	fail := func(err error) error {
		return svctype.FailWithEvent(fmt.Errorf("matcher: %w", err), EventMatcherFailed, nil)
	}
	p := call.Properties
	if isRaw(p["left"]) || isRaw(p["right"]) {
		return runMatcherOnBytes(call, p, fail)
	}
	left, err := records(p["left"], "left")
	if err != nil {
		return nil, fail(err)
	}
	right, err := records(p["right"], "right")
	if err != nil {
		return nil, fail(err)
	}
	opts, ps := matchOptions(p, false)
	if len(ps) > 0 {
		return nil, fail(fmt.Errorf("%s: %s", ps[0].Pointer, ps[0].Message))
	}
	if len(left)+len(right) > LargeMatchInput {
		call.Emit(EventMatcherStarted, map[string]any{"left_size": len(left), "right_size": len(right)})
	}
	res, err := match.Match(left, right, opts)
	if err != nil {
		return nil, fail(err)
	}
	matched, ul, ur := res.Outputs()
	call.Emit(EventMatcherCompleted, map[string]any{
		"schema_version": MatcherSchemaVersion, "matched_count": len(matched),
		"unmatched_left_count": len(ul), "unmatched_right_count": len(ur), "policy": res.Policy,
	})
	return svctype.ContextOutputs{
		outputKey(p, "outputMatched", defaultMatched):               matched,
		outputKey(p, "outputUnmatchedLeft", defaultUnmatchedLeft):   ul,
		outputKey(p, "outputUnmatchedRight", defaultUnmatchedRight): ur,
	}, nil
}
