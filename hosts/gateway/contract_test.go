package gateway_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/svcflow/svcflow/internal/contracttest"
)

// The contract test under every HTTP test of the gateway: every answer the gateway gives a
// test (the handler setup, setupSDK and setupVisitors serve is wrapped by checked) is
// checked against the committed integrator document (openapi/integrator-3.0.yaml, the
// downgrade of integrator.yaml that kin-openapi reads): the gateway's own routes and the
// runtime's as the gateway serves them. The hosted form page (GET /forms/{formId}, HTML) is
// told by its content type.
var (
	integrator30File = filepath.Join("..", "..", "openapi", "integrator-3.0.yaml")
	contract         = contracttest.New(integrator30File,
		"/console", "/sdk/v1", "/openapi", "/docs").Fast()
)

// checked serves h and checks each of its answers against the integrator document.
func checked(t testing.TB, h http.Handler) http.Handler { return contract.Handler(t, h) }
