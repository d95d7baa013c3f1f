package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MaxObservation is how many characters of a tool's result the model reads.
const MaxObservation = 10_000

// Observe renders a tool's result for the model: its JSON when that fits in
// MaxObservation characters, otherwise a summary that is itself JSON of at most
// MaxObservation characters, never JSON cut in the middle. An array keeps its length and
// a preview of its first elements; an object keeps its keys, the length of each array and
// the key count of each object under it, and a preview of its small values; a long string
// keeps its length and its beginning.
func Observe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return feedback("the result is not JSON: " + err.Error())
	}
	if utf8.RuneCount(b) <= MaxObservation {
		return string(b)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return feedback("the result is not JSON: " + err.Error())
	}
	// Shrink the preview until the summary fits.
	for _, budget := range []int{MaxObservation * 3 / 4, MaxObservation / 2, MaxObservation / 4, MaxObservation / 10, 0} {
		s, _ := json.Marshal(summarize(generic, budget, 0))
		if utf8.RuneCount(s) <= MaxObservation {
			return string(s)
		}
	}
	s, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(b)})
	return string(s)
}

// summarize describes v within about budget characters of preview.
func summarize(v any, budget, depth int) any {
	switch x := v.(type) {
	case []any:
		out := map[string]any{"truncated": true, "type": "array", "length": len(x)}
		preview := []any{}
		used := 0
		for _, el := range x {
			if budget <= 0 || depth > 2 {
				break
			}
			small := shrink(el, min(budget-used, budget/4+1), depth+1)
			n, ok := sizeWithin(small, budget-used)
			if !ok {
				break
			}
			preview = append(preview, small)
			used += n + 1
		}
		out["preview"] = preview
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sizes := map[string]string{}
		preview := map[string]any{}
		used := 0
		for _, k := range keys {
			switch el := x[k].(type) {
			case []any:
				sizes[k] = fmt.Sprintf("array of %d", len(el))
			case map[string]any:
				sizes[k] = fmt.Sprintf("object of %d keys", len(el))
			}
			if budget <= 0 || depth > 2 {
				continue
			}
			small := shrink(x[k], min(budget-used, budget/2+1), depth+1)
			n, ok := sizeWithin(small, budget-used-len(k)-4)
			if !ok {
				continue
			}
			preview[k] = small
			used += n + len(k) + 4
		}
		if len(keys) > 200 {
			keys = keys[:200]
		}
		return map[string]any{"truncated": true, "type": "object", "keys": keys, "sizes": sizes, "preview": preview}
	case string:
		if len(x) <= budget || budget <= 0 && len(x) <= 100 {
			return x
		}
		n := max(budget, 100)
		cut := []rune(x)
		if len(cut) > n {
			cut = cut[:n]
		}
		return map[string]any{"truncated": true, "type": "string", "length": utf8.RuneCountInString(x), "preview": string(cut)}
	}
	return v
}

// shrink returns v whole when its JSON fits in budget, else its summary.
func shrink(v any, budget, depth int) any {
	if _, ok := sizeWithin(v, budget); ok {
		return v
	}
	return summarize(v, budget/2, depth)
}

// sizeWithin returns the length of v's JSON (of decoded JSON values: maps, slices,
// strings, float64, bool, nil) and whether it is at most limit, walking no further than
// the limit: a preview is chosen without encoding a large subtree. Escapes are counted as
// encoding/json writes them (\u003c for <, >, &; \uXXXX for other control characters).
func sizeWithin(v any, limit int) (int, bool) {
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case nil:
			n += 4
		case bool:
			n += 5
		case float64:
			n += len(strconv.FormatFloat(x, 'g', -1, 64))
		case string:
			n += 2
			for _, r := range x {
				switch {
				case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
					n += 2
				case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
					n += 6
				default:
					n += utf8.RuneLen(r)
				}
				if n > limit {
					return false
				}
			}
		case []any:
			n += 2
			for i, el := range x {
				if i > 0 {
					n++
				}
				if !walk(el) {
					return false
				}
			}
		case map[string]any:
			n += 2
			first := true
			for k, el := range x {
				if !first {
					n++
				}
				first = false
				n += len(k) + 3
				if n > limit || !walk(el) {
					return false
				}
			}
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return false
			}
			n += len(b)
		}
		return n <= limit
	}
	ok := walk(v)
	return n, ok && n <= limit
}
