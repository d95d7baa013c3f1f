package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
)

// frameAncestors is the frame-ancestors directive of a Content-Security-Policy.
func frameAncestors(t *testing.T, h http.Header) string {
	t.Helper()
	for _, d := range strings.Split(h.Get("Content-Security-Policy"), ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), "frame-ancestors "); ok {
			return v
		}
	}
	t.Fatalf("no frame-ancestors in %q", h.Get("Content-Security-Policy"))
	return ""
}

// TestPagesSayWhoMayFrameThem: the console, which decides approvals, may be framed by no
// page; a hosted form page only by the origins its settings list, none by default; an error
// page of the hosted route by none.
func TestPagesSayWhoMayFrameThem(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)

	resp, _ := rawGet(t, client, b.gw.URL+"/console")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "'none'", frameAncestors(t, resp.Header))
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))

	plain := externalForm(t, b, live, `{"name": "Plain", "is_public": true, "schema": `+emailSchema+`}`)
	resp, html := rawGet(t, client, b.gw.URL+"/forms/"+plain)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(html))
	require.Equal(t, "'none'", frameAncestors(t, resp.Header), "no origin listed: no frame")
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))

	embedded := externalForm(t, b, live, `{"name": "Embedded", "is_public": true, "schema": `+emailSchema+`,
		"settings": {"frameAncestors": ["https://www.acme.example", "https://*.shop.example:8443", "http://localhost:3000"]}}`)
	resp, html = rawGet(t, client, b.gw.URL+"/forms/"+embedded)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(html))
	require.Equal(t, "https://www.acme.example https://*.shop.example:8443 http://localhost:3000", frameAncestors(t, resp.Header))
	require.Empty(t, resp.Header.Get("X-Frame-Options"), "X-Frame-Options cannot name origins: the CSP rules")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", "the rest of the policy stays")

	// The public JSON route shows the setting; the page's frame follows a change at once.
	code, f, _ := b.call(t, "GET", "/forms/public/"+embedded, "", "")
	require.Equal(t, http.StatusOK, code, f)
	require.Equal(t, []any{"https://www.acme.example", "https://*.shop.example:8443", "http://localhost:3000"}, f["settings"].(map[string]any)["frameAncestors"])
	code, f, _ = b.call(t, "PUT", "/external-forms/"+embedded, live, `{"name": "Embedded", "is_public": true, "schema": `+emailSchema+`,
		"settings": {"frameAncestors": ["https://intranet.acme.example"]}}`)
	require.Equal(t, http.StatusOK, code, f)
	resp, _ = rawGet(t, client, b.gw.URL+"/forms/"+embedded)
	require.Equal(t, "https://intranet.acme.example", frameAncestors(t, resp.Header))

	// Error pages of the hosted route: no form shown, no frame.
	for _, path := range []string{"/forms/frm-bm9uZQ.00000000000000000000000000000000"} {
		resp, html = rawGet(t, client, b.gw.URL+path)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, string(html))
		require.Equal(t, "'none'", frameAncestors(t, resp.Header))
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	}
	for range gateway.PublicReads {
		rawGet(t, client, b.gw.URL+"/forms/"+embedded)
	}
	resp, html = rawGet(t, client, b.gw.URL+"/forms/"+embedded)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(html))
	require.Equal(t, "'none'", frameAncestors(t, resp.Header))
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
}
