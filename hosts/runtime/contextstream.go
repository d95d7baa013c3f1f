package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/danielgtaylor/huma/v2"
	"github.com/tidwall/gjson"

	"github.com/svcflow/svcflow/engine"
)

// The whole-value answers of GET /runs/{runId}/context/{contextKey}: NDJSON (one JSON value
// a line, an array's elements one a line) and CSV (an array of objects, one row each),
// written as the key's stored parts are read, a few at a time (engine.StreamPartsRead):
// the answer has no Content-Length, the elements leave as they are stored, and the server
// holds about a megabyte of the key however long it is.

// Media types of the context route's answers.
const (
	mediaJSON   = "application/json"
	mediaNDJSON = "application/x-ndjson"
	mediaCSV    = "text/csv"
	// csvContentType is the CSV answer's Content-Type: UTF-8, its first line the header
	// (RFC 4180's optional header parameter).
	csvContentType = "text/csv; charset=utf-8; header=present"
)

// codeNotAcceptable is a 406: the value has no representation of the type asked for
// (text/csv for a value that is not an array of objects).
const codeNotAcceptable = "not_acceptable"

// contextAnswer is the answer of the context route, written by its own function: the page
// as JSON (the default), or the whole value streamed.
type contextAnswer struct {
	Body func(huma.Context)
}

// streamNDJSON writes the value of st as NDJSON: each element of an array on a line of its
// own (an empty array is an empty answer), any other value on one line.
func (s *Server) streamNDJSON(ctx context.Context, st *engine.ContextStream) func(huma.Context) {
	return func(hc huma.Context) {
		hc.SetHeader("Content-Type", mediaNDJSON)
		hc.SetStatus(http.StatusOK)
		w := hc.BodyWriter()
		if !st.IsArray() {
			_, _ = w.Write(appendLine(nil, st.Whole))
			return
		}
		var buf []byte
		for part, err := range st.Parts(ctx) {
			if err != nil {
				s.abortStream(ctx, st, err)
			}
			buf = buf[:0]
			if hasLineEnd(part) {
				forEachElement(part, func(el []byte) { buf = appendLine(buf, el) })
			} else { // the usual part, written compact: its elements as they are
				forEachElement(part, func(el []byte) { buf = append(append(buf, el...), '\n') })
			}
			if _, err := w.Write(buf); err != nil {
				return // the client went away
			}
		}
	}
}

// hasLineEnd reports whether b holds a line feed or a carriage return (two passes of
// IndexByte, each far faster than one of IndexAny).
func hasLineEnd(b []byte) bool {
	return bytes.IndexByte(b, '\n') >= 0 || bytes.IndexByte(b, '\r') >= 0
}

// appendLine appends v and a newline to b. A stored value has no line end outside its
// strings unless it was stored as a client sent it (a run's input): only then is it
// compacted, so that it stays one line.
func appendLine(b, v []byte) []byte {
	if hasLineEnd(v) {
		var c bytes.Buffer
		if err := json.Compact(&c, v); err == nil {
			return append(append(b, c.Bytes()...), '\n')
		}
	}
	return append(append(b, v...), '\n')
}

// abortStream ends an answer whose status and first bytes are sent already: the failure is
// logged and the connection closed without the end of the chunked body, so that the
// client sees a cut answer, never a short one that looks whole.
func (s *Server) abortStream(ctx context.Context, st *engine.ContextStream, err error) {
	loggerFrom(ctx, s.log).ErrorContext(ctx, "context stream failed", "key", st.Key, "err", err)
	panic(http.ErrAbortHandler)
}

// forEachElement calls fn with each element of the JSON array part, as its bytes in part.
func forEachElement(part []byte, fn func(el []byte)) {
	if len(part) == 0 {
		return
	}
	// A string view of the part's bytes, not a copy: it is not changed while gjson walks it.
	gjson.Parse(unsafe.String(&part[0], len(part))).ForEach(func(_, el gjson.Result) bool {
		fn(unsafe.Slice(unsafe.StringData(el.Raw), len(el.Raw)))
		return true
	})
}

// csvColumns reads the whole value of st once for the CSV header: its columns are the
// keys of its objects in the order they first appear (the first object's keys as stored,
// then each key a later object adds, where it adds it). A value that is not an array of
// objects is a 406 problem: nothing has been sent.
func csvColumns(ctx context.Context, st *engine.ContextStream) ([]string, error) {
	if !st.IsArray() {
		return nil, notCSV(st.Key, "it is "+kindOf(gjson.ParseBytes(st.Whole)))
	}
	var cols []string
	seen := map[string]bool{}
	i := 0
	for part, err := range st.Parts(ctx) {
		if err != nil {
			return nil, err
		}
		var bad error
		gjson.Parse(unsafe.String(&part[0], len(part))).ForEach(func(_, el gjson.Result) bool {
			if !el.IsObject() {
				bad = notCSV(st.Key, fmt.Sprintf("its element %d is %s", i, kindOf(el)))
				return false
			}
			el.ForEach(func(k, _ gjson.Result) bool {
				if !seen[k.Str] {
					key := strings.Clone(k.Str) // not a view of the part
					seen[key] = true
					cols = append(cols, key)
				}
				return true
			})
			i++
			return true
		})
		if bad != nil {
			return nil, bad
		}
	}
	return cols, nil
}

// notCSV is the 406 of a value CSV cannot hold.
func notCSV(key, why string) *Problem {
	return newProblem(http.StatusNotAcceptable, codeNotAcceptable,
		fmt.Sprintf("text/csv answers an array of objects, and context key %s is not one: %s; ask for %s or %s",
			strconv.Quote(key), why, mediaJSON, mediaNDJSON))
}

// kindOf names a JSON value's type, with an article.
func kindOf(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "an object"
	case v.IsArray():
		return "an array"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True, v.Type == gjson.False:
		return "a boolean"
	}
	return "null"
}

// streamCSV writes the array of objects of st as CSV (RFC 4180, lines ended by CRLF): a
// header of cols, then a row an object, its cells in the header's order. A string is its
// text; a number, true and false as written; null and a missing key an empty cell; an
// object or an array its JSON text. A cell is quoted when it holds a comma, a quote or a
// line end, its quotes doubled. Without a column (an empty array, objects without keys)
// the answer is empty.
func (s *Server) streamCSV(ctx context.Context, st *engine.ContextStream, cols []string) func(huma.Context) {
	return func(hc huma.Context) {
		hc.SetHeader("Content-Type", csvContentType)
		hc.SetStatus(http.StatusOK)
		if len(cols) == 0 {
			return // an empty array, or objects without a key: no column
		}
		w := hc.BodyWriter()
		index := make(map[string]int, len(cols))
		var buf []byte
		for i, c := range cols {
			index[c] = i
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCSVCell(buf, c)
		}
		buf = append(buf, '\r', '\n')
		row := make([]gjson.Result, len(cols))
		for part, err := range st.Parts(ctx) {
			if err != nil {
				s.abortStream(ctx, st, err)
			}
			gjson.Parse(unsafe.String(&part[0], len(part))).ForEach(func(_, el gjson.Result) bool {
				clear(row)
				el.ForEach(func(k, v gjson.Result) bool {
					if i, ok := index[k.Str]; ok {
						row[i] = v
					} else {
						// Only if the key was rewritten between the two reads.
						s.abortStream(ctx, st, fmt.Errorf("key %q is not in the header", k.Str))
					}
					return true
				})
				for i, v := range row {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = appendCSVValue(buf, v)
				}
				buf = append(buf, '\r', '\n')
				return true
			})
			if _, err := w.Write(buf); err != nil {
				return // the client went away
			}
			buf = buf[:0]
		}
	}
}

// appendCSVValue appends the cell of the JSON value v.
func appendCSVValue(b []byte, v gjson.Result) []byte {
	switch v.Type {
	case gjson.Null:
		return b // also a missing key (the zero Result)
	case gjson.String:
		return appendCSVCell(b, v.Str)
	}
	return appendCSVCell(b, v.Raw) // a number, true, false, an object or an array as stored
}

// appendCSVCell appends s as one CSV field (RFC 4180): quoted when it holds a comma, a
// quote, a carriage return or a line feed, each quote doubled.
func appendCSVCell(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	b = append(b, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		b = append(b, s[:i+1]...)
		b = append(b, '"')
		s = s[i+1:]
	}
	b = append(b, s...)
	return append(b, '"')
}
