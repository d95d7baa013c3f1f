package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The contract test under every HTTP test of the gateway: every answer the gateway gives a
// test (the handler setup, setupSDK and setupVisitors serve is wrapped by checked) is
// checked against the committed integrator document (openapi/integrator-3.0.yaml, the
// downgrade of integrator.yaml that kin-openapi reads): the gateway's own routes and the
// runtime's as the gateway serves them. A status the route does not declare, a body or a
// declared header that does not match, a route in no document: each fails the test that
// caused it. A new route is covered without editing a list.

var integrator30File = filepath.Join("..", "..", "openapi", "integrator-3.0.yaml")

var contract struct {
	once   sync.Once
	router routers.Router
	err    error
}

// outsideContract are the paths the gateway serves that are not API routes: the console,
// the SDK script, the documents themselves. The hosted form page (GET /forms/{formId}, HTML)
// is told by its content type.
var outsideContract = []string{"/console", "/sdk/v1", "/openapi", "/docs", "/schemas/"}

func contractRouter() (routers.Router, error) {
	contract.once.Do(func() {
		raw, err := os.ReadFile(integrator30File)
		if err != nil {
			contract.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(raw)
		if err != nil {
			contract.err = err
			return
		}
		doc.Servers = nil // match any host
		if err := doc.Validate(context.Background()); err != nil {
			contract.err = err
			return
		}
		contract.router, contract.err = legacy.NewRouter(doc)
	})
	return contract.router, contract.err
}

// checked serves h and checks each of its answers against the integrator document.
func checked(t testing.TB, h http.Handler) http.Handler {
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
		checkContract(t, orig, reqBody, tee.status, w.Header(), tee.body.Bytes())
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

// checkContract fails t when an answer (status, header, body) to req is not what the
// committed document declares for its route.
func checkContract(t testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	for _, p := range outsideContract {
		if strings.HasPrefix(req.URL.Path, p) {
			return
		}
	}
	if req.Method == http.MethodOptions || strings.HasPrefix(header.Get("Content-Type"), "text/html") {
		return // a CORS preflight, a page
	}
	router, err := contractRouter()
	if err != nil {
		t.Errorf("contract: the committed document does not load: %v", err)
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

func declared(rs *openapi3.Responses) []string {
	var out []string
	for code := range rs.Map() {
		out = append(out, code)
	}
	return out
}
