package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/negotiation"
)

// ContextValue is the answer of GET /runs/{runId}/context/{contextKey}.
type ContextValue struct {
	Key   string          `json:"key" doc:"The context key."`
	Value json.RawMessage `json:"value" doc:"The key's value. When it is an array: the page of its elements from offset, at most limit of them ([] past the end). Any other value: the whole value."`
	Total *int            `json:"total,omitempty" doc:"Only when the value is an array: the array's length."`
	// Offset and Limit echo the page asked for (limit after its default), so that a client
	// holding only this answer knows where the next page starts: offset + limit.
	Offset *int `json:"offset,omitempty" doc:"Only when the value is an array: the index of the page's first element."`
	Limit  *int `json:"limit,omitempty" doc:"Only when the value is an array: the page size used."`
}

// appendJSON writes the answer with its value as stored: the store holds it as compact
// JSON, and encoding/json would scan (compact) a page of thousands of elements again.
func (c ContextValue) appendJSON(b []byte) []byte {
	key, _ := json.Marshal(c.Key) // a string always encodes
	b = append(b, `{"key":`...)
	b = append(b, key...)
	b = append(b, `,"value":`...)
	if len(c.Value) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, c.Value...)
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"total", c.Total}, {"offset", c.Offset}, {"limit", c.Limit}} {
		if f.v != nil {
			b = append(b, `,"`+f.name+`":`...)
			b = strconv.AppendInt(b, int64(*f.v), 10)
		}
	}
	return append(b, "}\n"...)
}

// ContextParams is the input of GET /runs/{runId}/context/{contextKey}.
type ContextParams struct {
	RunPath
	Key    string `path:"contextKey" minLength:"1" maxLength:"256" doc:"The context key: a step's outputKey or output key (matchGroups, matched, ...), input, a submitted form field, __approved, __run_id."`
	Offset int    `query:"offset" default:"0" minimum:"0" doc:"For an array value: the index of the page's first element (default 0). Ignored for other values."`
	Limit  int    `query:"limit" default:"100" minimum:"1" maximum:"10000" doc:"For an array value: the page size (default 100, at most 10000). Ignored for other values."`
	// accept is the request's Accept: what the answer is (contextMedia). Not a declared
	// parameter: OpenAPI ignores an Accept parameter, the 200's media types say it.
	accept string
}

// Resolve keeps the request's Accept.
func (p *ContextParams) Resolve(ctx huma.Context) []error {
	p.accept = ctx.Header("Accept")
	return nil
}

// StatusParams are the query parameters of the routes that answer a run's status document:
// GET /runs/{runId}/status, and POST /workflows/{workflowId}/execute with ?wait=.
type StatusParams struct {
	Context bool `query:"context" default:"true" doc:"false leaves the context out of the status document (and unread): for polling a run whose context is large. Read single keys with GET /runs/{runId}/context/{contextKey}."`
}

// Resolve reads ?context= again after Huma has read the input: on an operation with a body
// Huma fills the defaults after the body, and a false, bool's zero value, would become the
// default true. Huma has checked that the value parses.
func (p *StatusParams) Resolve(ctx huma.Context) []error {
	if v := ctx.Query("context"); v != "" {
		p.Context, _ = strconv.ParseBool(v)
	}
	return nil
}

func (s *Server) registerRunContext() {
	o := op("get-run-context", http.MethodGet, "/runs/{runId}/context/{contextKey}", "One key of a run's context; an array value in pages, or whole as NDJSON or CSV", "Runs")
	o.Description = "Answers `{key, value}`. When the value is a JSON array, `?offset=&limit=` page it: " +
		"`value` is the page (at most `limit` elements from `offset`, `[]` past the end) and `total`, " +
		"`offset` and `limit` are added; the next page starts at `offset + limit`. Any other value is " +
		"answered whole, without `total`, and `offset` and `limit` are ignored, so one query serves a key " +
		"whose type the client does not know. A run without the key answers 404 not_found, as does " +
		"another organization's run. The `result_reference` of `nway_matcher.completed` is this route's path " +
		"for its `matchGroups`.\n\n" +
		"The whole value, streamed as it is read from the store (no Content-Length; `offset` and `limit` ignored):\n" +
		"- `Accept: application/x-ndjson`: one JSON value a line, ended by `\\n`: each element of an array on its own line " +
		"(an empty array is an empty answer), any other value on one line.\n" +
		"- `Accept: text/csv`: an array of objects as CSV (RFC 4180, UTF-8, lines ended by CRLF). The header is the objects' keys " +
		"in the order they first appear (the first object's keys as stored, then each key a later object adds); a row an object. " +
		"A string is its text, a number, true and false as written, null and a missing key an empty cell, an object or an array " +
		"its JSON text; a cell holding a comma, a quote or a line end is quoted, its quotes doubled. An empty array (or objects " +
		"without keys) is an empty answer. A value that is not an array of objects answers 406 not_acceptable.\n\n" +
		"A stream that fails once it has begun (the key rewritten while it is read) is cut: the connection closes before the " +
		"end of the chunked body, never a short answer that looks whole."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusNotAcceptable, http.StatusUnprocessableEntity}
	page := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[ContextValue](), true, "")
	o.Responses = map[string]*huma.Response{"200": {
		Description: "The key: a page of an array, or any other value whole, as JSON (the default); or the whole value as NDJSON or CSV, as Accept asks.",
		Content: map[string]*huma.MediaType{
			mediaJSON:   {Schema: page},
			mediaNDJSON: {Schema: &huma.Schema{Type: huma.TypeString, Description: "One JSON value a line: an array's elements, or the value."}},
			mediaCSV:    {Schema: &huma.Schema{Type: huma.TypeString, Description: "An array of objects: a header line of their keys, then a line an object."}},
		},
	}}
	register(s, o, failure{notFound: "run not found", in: "query"}, s.getRunContext)
}

// contextMedia is the answer Accept asks for: NDJSON or CSV when it prefers one (quality
// values counted), the paged JSON otherwise (no Accept, */*, a type the route has not).
func contextMedia(accept string) string {
	if accept == "" {
		return mediaJSON
	}
	if m := negotiation.SelectQValueFast(accept, []string{mediaJSON, mediaNDJSON, mediaCSV}); m != "" {
		return m
	}
	return mediaJSON
}

func (s *Server) getRunContext(ctx context.Context, in *ContextParams) (*contextAnswer, error) {
	// The run is there, the key is not: say which key.
	words := failure{notFound: "run not found", noKey: "the run has no context key " + strconv.Quote(in.Key), in: "query"}
	switch contextMedia(in.accept) {
	case mediaNDJSON:
		st, err := s.eng.RunContextStream(ctx, in.OrgID, in.RunID, in.Key)
		if err != nil {
			return nil, s.fail(ctx, err, words)
		}
		return &contextAnswer{Body: s.streamNDJSON(ctx, st)}, nil
	case mediaCSV:
		st, err := s.eng.RunContextStream(ctx, in.OrgID, in.RunID, in.Key)
		if err != nil {
			return nil, s.fail(ctx, err, words)
		}
		cols, err := csvColumns(ctx, st)
		if err != nil {
			return nil, s.fail(ctx, err, words)
		}
		return &contextAnswer{Body: s.streamCSV(ctx, st, cols)}, nil
	}
	v, err := s.eng.RunContext(ctx, in.OrgID, in.RunID, in.Key, in.Offset, in.Limit)
	if err != nil {
		return nil, s.fail(ctx, err, words)
	}
	out := ContextValue{Key: v.Key, Value: v.Value}
	if v.Paged {
		out.Total, out.Offset, out.Limit = &v.Total, &v.Offset, &v.Limit
	}
	return &contextAnswer{Body: func(hc huma.Context) {
		hc.SetHeader("Content-Type", mediaJSON)
		hc.SetStatus(http.StatusOK)
		_, _ = hc.BodyWriter().Write(out.appendJSON(nil))
	}}, nil
}
