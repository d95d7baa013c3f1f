package runtime_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The contract test under every HTTP test: every response a test of this package receives
// through bundle.do is checked against the committed 3.0 document (openapi/openapi-3.0.yaml,
// the downgrade of openapi.yaml that kin-openapi reads). A status the route does not
// declare, a body that does not match the declared schema, a route that is in no document:
// each fails the test that caused it. A new route is covered without editing a list.

var contract struct {
	once   sync.Once
	router routers.Router
	err    error
}

// outsideContract are the paths the runtime serves that are not API routes: pages, assets
// and the documents themselves.
var outsideContract = []string{"/console", "/openapi", "/docs", "/schemas/", "/favicon"}

func contractRouter() (routers.Router, error) {
	contract.once.Do(func() {
		raw, err := os.ReadFile(openapi30File)
		if err != nil {
			contract.err = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(raw)
		if err != nil {
			contract.err = err
			return
		}
		doc.Servers = nil // match any host
		if err := doc.Validate(context.Background()); err != nil {
			contract.err = err
			return
		}
		contract.router, contract.err = gorillamux.NewRouter(doc)
	})
	return contract.router, contract.err
}

// checkContract fails t when rec, the answer to req (whose body was reqBody), is not what
// the committed document declares for its route.
func checkContract(t testing.TB, req *http.Request, reqBody []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	for _, p := range outsideContract {
		if strings.HasPrefix(req.URL.Path, p) {
			return
		}
	}
	router, err := contractRouter()
	if err != nil {
		t.Fatalf("contract: the committed document does not load: %v", err)
	}
	// A fresh request for the router: the handler may have consumed the original's body.
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	if r.URL.Host == "" {
		r.URL.Host = "example.com"
		r.URL.Scheme = "http"
	}
	route, params, err := router.FindRoute(r)
	if err != nil {
		if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
			return // an unknown route or method answered as such
		}
		t.Errorf("contract: %s %s answered %d but is in no committed document: %v", req.Method, req.URL.Path, rec.Code, err)
		return
	}
	status := rec.Code
	responses := route.Operation.Responses
	if responses.Value(strconv.Itoa(status)) == nil && responses.Value(strconv.Itoa(status/100)+"XX") == nil {
		t.Errorf("contract: %s %s (%s) answered %d, which it does not declare (declared: %v); body: %.300s",
			req.Method, req.URL.Path, route.Operation.OperationID, status, declared(responses), rec.Body.String())
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
			Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: rec.Header(),
		Body:   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("contract: %s %s (%s) answered %d with a body its declaration does not allow: %v\nbody: %.500s",
			req.Method, req.URL.Path, route.Operation.OperationID, status, err, rec.Body.String())
	}
}

func declared(rs *openapi3.Responses) []string {
	var out []string
	for code := range rs.Map() {
		out = append(out, code)
	}
	return out
}
