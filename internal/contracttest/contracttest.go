// Package contracttest checks HTTP answers against a committed OpenAPI 3.0 document: the
// contract test under every HTTP test of the runtime and the gateway. A status the route
// does not declare (a "default" answer does not count), a body or a declared header that
// does not match, a route in no document: each fails the test that caused it. A new route
// is covered without editing a list.
package contracttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Contract is a committed document, read once, when the first answer is checked.
type Contract struct {
	file    string
	outside []string
	fast    bool
	once    sync.Once
	router  routers.Router
	err     error
}

// New is the contract of the 3.0 document at file; the paths that start with one of
// outside (pages, assets, the documents themselves) are not API routes and are not checked.
func New(file string, outside ...string) *Contract {
	return &Contract{file: file, outside: outside}
}

// Fast makes c find routes with kin-openapi's legacy router instead of gorillamux: about
// three times faster on a test of 100,000 requests, but it tells fewer paths apart (a
// parameter that holds a slash, a method on a path that has it only under a parameter), so
// it suits a document whose paths it finds exactly. Call it before the first Check.
func (c *Contract) Fast() *Contract {
	c.fast = true
	return c
}

func (c *Contract) load() (routers.Router, error) {
	c.once.Do(func() {
		raw, err := os.ReadFile(c.file)
		if err != nil {
			c.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			c.err = err
			return
		}
		doc.Servers = nil // match any host
		if c.err = doc.Validate(context.Background()); c.err != nil {
			return
		}
		if c.fast {
			c.router, c.err = legacy.NewRouter(doc)
			return
		}
		c.router, c.err = gorillamux.NewRouter(doc)
	})
	return c.router, c.err
}

// Check fails t when an answer (status, header, body) to req, whose body was reqBody, is
// not what the document declares for its route. A CORS preflight and an HTML page are not
// checked.
func (c *Contract) Check(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	if slices.ContainsFunc(c.outside, func(p string) bool { return strings.HasPrefix(req.URL.Path, p) }) ||
		req.Method == http.MethodOptions || strings.HasPrefix(header.Get("Content-Type"), "text/html") {
		return
	}
	router, err := c.load()
	if err != nil {
		t.Errorf("contract: the committed document %s does not load: %v", c.file, err)
		return
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	r.URL.Scheme, r.URL.Host = "http", "example.com"
	route, params, err := router.FindRoute(r)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return // an unknown route or method answered as such
		}
		t.Errorf("contract: %s %s answered %d but is in no committed document: %v", req.Method, req.URL.Path, status, err)
		return
	}
	responses := route.Operation.Responses
	if responses.Value(strconv.Itoa(status)) == nil && responses.Value(strconv.Itoa(status/100)+"XX") == nil {
		t.Errorf("contract: %s %s (%s) answered %d, which it does not declare (declared: %v); body: %.300s",
			req.Method, req.URL.Path, route.Operation.OperationID, status, declared(responses), body)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
			Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("contract: %s %s (%s) answered %d with what its declaration does not allow: %v\nbody: %.500s",
			req.Method, req.URL.Path, route.Operation.OperationID, status, err, body)
	}
}

// Handler serves h and checks each of its answers.
func (c *Contract) Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		orig := r.Clone(context.Background())
		tee := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tee, r)
		if tee.status == 0 {
			tee.status = http.StatusOK
		}
		c.Check(t, orig, reqBody, tee.status, w.Header(), tee.body.Bytes())
	})
}

// teeWriter passes an answer on and keeps its status and body.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func declared(rs *openapi3.Responses) []string {
	var out []string
	for code := range rs.Map() {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

// A JSON Schema document (application/schema+json, GET /schemas/workflow.json) is JSON.
func init() {
	openapi3filter.RegisterBodyDecoder("application/schema+json", openapi3filter.JSONBodyDecoder)
}

// An NDJSON answer (application/x-ndjson) is checked line by line: each line one JSON value,
// the last ended by a newline too. kin-openapi has no decoder of its own for the type; the
// value the schema then sees is the body as text.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			return nil, errors.New("NDJSON: the last line has no newline")
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if len(b) > 0 && !json.Valid(line) {
				return nil, fmt.Errorf("NDJSON: line %d is not one JSON value: %.100s", i+1, line)
			}
		}
		return string(b), nil
	})
}
