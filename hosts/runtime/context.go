package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
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
	o := op("get-run-context", http.MethodGet, "/runs/{runId}/context/{contextKey}", "One key of a run's context; an array value in pages", "Runs")
	o.Description = "Answers `{key, value}`. When the value is a JSON array, `?offset=&limit=` page it: " +
		"`value` is the page (at most `limit` elements from `offset`, `[]` past the end) and `total`, " +
		"`offset` and `limit` are added; the next page starts at `offset + limit`. Any other value is " +
		"answered whole, without `total`, and `offset` and `limit` are ignored, so one query serves a key " +
		"whose type the client does not know. A run without the key answers 404 not_found, as does " +
		"another organization's run. The `result_reference` of `nway_matcher.completed` is this route's path " +
		"for its `matchGroups`."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusUnprocessableEntity}
	register(s, o, failure{notFound: "run not found", in: "query"}, s.getRunContext)
}

func (s *Server) getRunContext(ctx context.Context, in *ContextParams) (*answer[ContextValue], error) {
	v, err := s.eng.RunContext(ctx, in.OrgID, in.RunID, in.Key, in.Offset, in.Limit)
	if err != nil {
		// The run is there, the key is not: say which key.
		return nil, s.fail(ctx, err, failure{notFound: "run not found", noKey: "the run has no context key " + strconv.Quote(in.Key), in: "query"})
	}
	out := ContextValue{Key: v.Key, Value: v.Value}
	if v.Paged {
		out.Total, out.Offset, out.Limit = &v.Total, &v.Offset, &v.Limit
	}
	return &answer[ContextValue]{Body: out}, nil
}
