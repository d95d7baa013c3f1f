package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
)

// TestGatewayRefusesBodiesThatAreNotUTF8: the gateway's own routes answer a JSON body with a
// byte that is not UTF-8 400 invalid_utf8 and do nothing (no account, no code mailed to a
// mangled address); a runtime route it forwards answers the same.
func TestGatewayRefusesBodiesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	_, live, pk := b.signup(t, "ops@platform.example", "cust-a")

	code, p, _ := b.call(t, "POST", "/gateway/signup", "", "{\"email\": \"\xffa@b.example\", \"name\": \"Platform\"}")
	require.Equal(t, http.StatusBadRequest, code, p)
	require.Equal(t, "invalid_utf8", p["code"], p)
	// Had it been stored, it would be as U+FFFD: that address is still free.
	code, p, _ = b.call(t, "POST", "/gateway/signup", "", `{"email": "\ufffda@b.example", "name": "Platform"}`)
	require.NotEqual(t, http.StatusConflict, code, p)

	code, p, _ = b.call(t, "POST", "/sdk/auth/start", pk, "{\"email\": \"\xffa@b.example\"}")
	require.Equal(t, http.StatusBadRequest, code, p)
	require.Equal(t, "invalid_utf8", p["code"], p)
	require.Zero(t, b.mail.count(), "no code mailed")

	code, p, _ = b.call(t, "POST", "/workflows", live, "{\"name\": \"bad-\xff\", \"definition\": {\"actions\": []}}")
	require.Equal(t, http.StatusBadRequest, code, p)
	require.Equal(t, "invalid_utf8", p["code"], p)
	code, l, _ := b.call(t, "GET", "/workflows", live, "")
	require.Equal(t, http.StatusOK, code, l)
	require.Empty(t, l["items"])
}
