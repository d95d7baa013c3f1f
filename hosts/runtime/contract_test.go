package runtime_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/svcflow/svcflow/internal/contracttest"
)

// The contract test under every HTTP test: every response a test of this package receives
// through bundle.do is checked against the committed 3.0 document (openapi/openapi-3.0.yaml,
// the downgrade of openapi.yaml that kin-openapi reads).
var contract = contracttest.New(openapi30File, "/console", "/openapi", "/docs", "/favicon")

// checkContract fails t when rec, the answer to req (whose body was reqBody), is not what
// the committed document declares for its route.
func checkContract(t testing.TB, req *http.Request, reqBody []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	contract.Check(t, req, reqBody, rec.Code, rec.Header(), rec.Body.Bytes())
}
