package runtime_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/svcflow/svcflow/hosts/runtime"
)

// The runtime is an http.Handler. Every route but /health needs X-Org-Id, and every error
// is a problem+json body with a code.
func Example() {
	srv := runtime.New(nil, runtime.Options{Version: "1.0.0"}) // an engine is needed only to serve tenant routes

	for _, path := range []string{"/health", "/workflows"} {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Print(rec.Code, " ", rec.Header().Get("Content-Type"), " ", rec.Body.String())
	}
	// Output:
	// 200 application/json {"status":"ok"}
	// 401 application/problem+json {"title":"Unauthorized","status":401,"code":"missing_org","detail":"the X-Org-Id header is required"}
}
