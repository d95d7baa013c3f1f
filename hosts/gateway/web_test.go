package gateway_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/hosts/gateway"
)

// rawGet is a GET of the gateway that keeps the body as it came (no JSON decoding, and
// through client, which may leave gzip alone); headers are "Name: value".
func rawGet(t *testing.T, client *http.Client, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// externalForm creates an external form through the gateway with the runtime key and
// returns its id.
func externalForm(t *testing.T, b *bundle, live, body string) string {
	t.Helper()
	code, f, _ := b.call(t, "POST", "/external-forms", live, body)
	require.Equal(t, http.StatusCreated, code, f)
	id, _ := f["id"].(string)
	require.NotEmpty(t, id, f)
	return id
}

const emailSchema = `{"version": "form_schema_v1", "pages": [{"id": "p1", "fields": [{"key": "email", "type": "email", "label": "Email", "required": true}]}]}`

const brandedForm = `{"name": "Contact us", "description": "We answer", "is_public": true,
	"settings": {"successMessage": "Thanks!", "branding": {"name": "Acme", "logoUrl": "https://acme.example/logo.png", "accent": "#0a7d5a", "footer": "Acme Ltd", "hidePoweredBy": true}},
	"schema": ` + emailSchema + `}`

var (
	sdkPathRe  = regexp.MustCompile(`/sdk/v1\.[0-9a-f]{16}\.js`)
	urlRe      = regexp.MustCompile(`https?://[^\s"'<>)\\]+`)
	formJSONRe = regexp.MustCompile(`(?s)<script type="application/json">(.*?)</script>`)
)

func TestSDKScriptIsServedHashedAndSmall(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	raw := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(raw.CloseIdleConnections)

	// Gzipped for a client that takes it, small, cached for five minutes with an ETag.
	resp, gz := rawGet(t, raw, b.gw.URL+"/sdk/v1.js", "Accept-Encoding: gzip")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	require.Less(t, len(gz), 30*1024, "the gzipped SDK is under 30 KiB")
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript"), resp.Header.Get("Content-Type"))
	require.Regexp(t, `(^|[ ,])max-age=300($|[ ,])`, resp.Header.Get("Cache-Control"))
	require.NotContains(t, resp.Header.Get("Cache-Control"), "immutable")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Contains(t, string(unzipped), "SvcSDK", "the gzip is of the script")

	resp, body := rawGet(t, raw, b.gw.URL+"/sdk/v1.js", "Accept-Encoding: gzip", "If-None-Match: "+etag)
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	require.Empty(t, body)

	// Plain without Accept-Encoding, the same script.
	plainResp, plain := rawGet(t, raw, b.gw.URL+"/sdk/v1.js")
	resp = plainResp
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Content-Encoding"))
	require.Contains(t, string(plain), "SvcSDK")
	require.Equal(t, string(unzipped), string(plain))

	// The hosted page loads the content-hashed script, cached for a year.
	id := externalForm(t, b, live, brandedForm)
	resp, page := rawGet(t, raw, b.gw.URL+"/forms/"+id)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	hashed := sdkPathRe.FindString(string(page))
	require.NotEmpty(t, hashed, "the page names /sdk/v1.<hash>.js: %s", page)
	resp, body = rawGet(t, raw, b.gw.URL+hashed)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	cc := resp.Header.Get("Cache-Control")
	require.Contains(t, cc, "immutable")
	require.Regexp(t, `(^|[ ,])max-age=31536000($|[ ,])`, cc)
	require.Equal(t, string(plain), string(body))
	require.Equal(t, plainResp.Header.Get("ETag"), resp.Header.Get("ETag"), "one script, one ETag per encoding")
	require.NotEqual(t, etag, plainResp.Header.Get("ETag"), "the gzip and the plain script are tagged apart")

	// A weak or listed tag matches; a client refusing gzip gets the plain script; HEAD
	// answers the headers alone.
	resp, _ = rawGet(t, raw, b.gw.URL+"/sdk/v1.js", "Accept-Encoding: gzip", "If-None-Match: \"x\", W/"+etag)
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	resp, body = rawGet(t, raw, b.gw.URL+"/sdk/v1.js", "Accept-Encoding: gzip;q=0, identity")
	require.Empty(t, resp.Header.Get("Content-Encoding"))
	require.Equal(t, string(plain), string(body))
	req, err := http.NewRequest(http.MethodHead, b.gw.URL+"/sdk/v1.js", nil)
	require.NoError(t, err)
	head, err := raw.Do(req)
	require.NoError(t, err)
	_ = head.Body.Close()
	require.Equal(t, http.StatusOK, head.StatusCode)
	require.Equal(t, plainResp.Header.Get("ETag"), head.Header.Get("ETag"))
	req, err = http.NewRequest(http.MethodHead, b.gw.URL+"/forms/"+id, nil)
	require.NoError(t, err)
	head, err = raw.Do(req)
	require.NoError(t, err)
	_ = head.Body.Close()
	require.Equal(t, http.StatusOK, head.StatusCode, "HEAD of the hosted page")

	resp, _ = rawGet(t, raw, b.gw.URL+"/sdk/v1.0000000000000000.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "another hash is no SDK")
}

func TestHostedFormPage(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	page := func(path string) (*http.Response, string) {
		t.Helper()
		resp, body := rawGet(t, client, b.gw.URL+path)
		return resp, string(body)
	}

	id := externalForm(t, b, live, brandedForm)
	resp, html := page("/forms/" + id)
	require.Equal(t, http.StatusOK, resp.StatusCode, html)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))
	csp := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'")
	require.Contains(t, html, "<title>Contact us</title>")
	require.Contains(t, html, "We answer")
	require.Contains(t, html, "Acme Ltd")
	require.Contains(t, html, "#0a7d5a")
	require.Contains(t, html, `<img src="https://acme.example/logo.png"`)
	require.NotContains(t, html, "Powered by svcflow")
	require.Contains(t, html, `<svc-form form-id="`+id+`"`)
	m := formJSONRe.FindStringSubmatch(html)
	require.NotNil(t, m, "the form as JSON in the page: %s", html)
	var embedded map[string]any
	require.NoError(t, json.Unmarshal([]byte(m[1]), &embedded), m[1])
	require.Equal(t, id, embedded["id"])
	for _, u := range urlRe.FindAllString(html, -1) {
		require.Equal(t, "https://acme.example/logo.png", u, "the page names no other origin")
	}
	require.Contains(t, html, `data-theme="auto"`)

	_, html = page("/forms/" + id + "?theme=dark")
	require.Contains(t, html, `data-theme="dark"`)
	_, html = page("/forms/" + id + "?theme=bogus")
	require.Contains(t, html, `data-theme="auto"`)
	require.NotContains(t, html, "bogus")

	// No branding: the "powered by" line and no logo.
	plain := externalForm(t, b, live, `{"name": "Plain", "is_public": true, "settings": {"branding": {"hidePoweredBy": false}}, "schema": `+emailSchema+`}`)
	resp, html = page("/forms/" + plain)
	require.Equal(t, http.StatusOK, resp.StatusCode, html)
	require.Contains(t, html, "Powered by svcflow")
	require.NotContains(t, html, "<img")
	bare := externalForm(t, b, live, `{"name": "Bare", "is_public": true, "schema": `+emailSchema+`}`)
	resp, html = page("/forms/" + bare)
	require.Equal(t, http.StatusOK, resp.StatusCode, html)
	require.Contains(t, html, "Powered by svcflow")
	require.NotContains(t, html, "<img")

	// A form that is not public, or not there, is a page that says so.
	private := externalForm(t, b, live, `{"name": "Internal", "is_public": false, "schema": `+emailSchema+`}`)
	resp, html = page("/forms/" + private)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, html)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))
	require.Contains(t, html, "does not exist, or it is not public")
	require.NotContains(t, html, "Internal")
	resp, html = page("/forms/frm-bm9uZQ.00000000000000000000000000000000")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, html)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))

	// Not a form id: the runtime's route, with its key.
	code, pending, h := b.call(t, "GET", "/forms/pending", live, "")
	require.Equal(t, http.StatusOK, code, pending)
	require.Contains(t, h.Get("Content-Type"), "json")
	require.Contains(t, pending, "items")

	// The form's name is text, never markup.
	evil := externalForm(t, b, live, `{"name": "<script>alert(1)</script>", "is_public": true, "schema": `+emailSchema+`}`)
	resp, html = page("/forms/" + evil)
	require.Equal(t, http.StatusOK, resp.StatusCode, html)
	require.Contains(t, html, "<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>")
	require.NotContains(t, html, "<script>alert(1)")
	m = formJSONRe.FindStringSubmatch(html)
	require.NotNil(t, m, html)
	require.NoError(t, json.Unmarshal([]byte(m[1]), &embedded), m[1])
	require.Equal(t, "<script>alert(1)</script>", embedded["name"], "the embedded JSON keeps the name, escaped")

	// The page is a read of the form: PublicReads a minute per visitor and form.
	limited := externalForm(t, b, live, `{"name": "Busy", "is_public": true, "schema": `+emailSchema+`}`)
	for i := range gateway.PublicReads {
		resp, html := page("/forms/" + limited)
		require.Equal(t, http.StatusOK, resp.StatusCode, "read %d: %s", i, html)
	}
	resp, html = page("/forms/" + limited)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, html)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))
	code, _, _ = b.call(t, "GET", "/forms/public/"+limited, "", "")
	require.Equal(t, http.StatusTooManyRequests, code, "the page and the JSON route share the count")
	resp, html = page("/forms/" + id)
	require.Equal(t, http.StatusOK, resp.StatusCode, "another form, its own count: %s", html)
}

func TestHostedFormSignIn(t *testing.T) {
	t.Parallel()
	b := setupSDK(t, gateway.Options{})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	id := externalForm(t, b.bundle, live, `{"name": "Members", "is_public": true, "settings": {"requireAuth": true}, "schema": `+emailSchema+`}`)
	base := "/forms/public/" + id

	code, p, _ := b.call(t, "POST", base+"/auth/start", "", `{"email": "ann@example.com"}`)
	require.Equal(t, http.StatusAccepted, code, p)
	require.Equal(t, "sent", p["status"])
	c, _ := b.code(t, "ann@example.com")
	code, p, _ = b.call(t, "POST", base+"/auth/verify", "", `{"email": "ann@example.com", "code": "`+c+`"}`)
	require.Equal(t, http.StatusOK, code, p)
	session, _ := p["session_token"].(string)
	require.True(t, strings.HasPrefix(session, gateway.PrefixSession), p)
	require.Equal(t, "ann@example.com", p["email"])

	code, p, _ = b.call(t, "POST", base+"/submit", "", `{"email": "x@example.com"}`)
	require.Equal(t, http.StatusUnauthorized, code, "no session: %v", p)
	code, p, _ = b.call(t, "POST", base+"/submit", session, `{"email": "x@example.com"}`)
	require.Equal(t, http.StatusCreated, code, p)
	code, subs, _ := b.call(t, "GET", "/external-forms/"+id+"/submissions", live, "")
	require.Equal(t, http.StatusOK, code, subs)
	items, _ := subs["items"].([]any)
	require.Len(t, items, 1)
	require.Equal(t, "ann@example.com", items[0].(map[string]any)["submitted_by"])

	// No such form, a form that is not public, a bad email, a wrong code.
	sent := b.mail.count()
	for _, missing := range []string{"frm-bm9uZQ.00000000000000000000000000000000", "frm-nope"} {
		code, p, _ = b.call(t, "POST", "/forms/public/"+missing+"/auth/start", "", `{"email": "ann@example.com"}`)
		require.Equal(t, http.StatusNotFound, code, "%s: %v", missing, p)
	}
	private := externalForm(t, b.bundle, live, `{"name": "Internal", "is_public": false, "settings": {"requireAuth": true}, "schema": `+emailSchema+`}`)
	code, p, _ = b.call(t, "POST", "/forms/public/"+private+"/auth/start", "", `{"email": "ann@example.com"}`)
	require.Equal(t, http.StatusNotFound, code, p)
	code, p, _ = b.call(t, "POST", "/forms/public/"+private+"/auth/verify", "", `{"email": "ann@example.com", "code": "123456"}`)
	require.Equal(t, http.StatusNotFound, code, p)
	code, p, _ = b.call(t, "POST", base+"/auth/start", "", `{"email": "not an email"}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, p)
	open := externalForm(t, b.bundle, live, `{"name": "Open", "is_public": true, "schema": `+emailSchema+`}`)
	code, p, _ = b.call(t, "POST", "/forms/public/"+open+"/auth/start", "", `{"email": "ann@example.com"}`)
	require.Equal(t, http.StatusConflict, code, "a form without requireAuth sends no code: %v", p)
	require.Equal(t, "signin_not_required", p["code"])
	require.Equal(t, sent, b.mail.count(), "nothing was sent")

	code, p, _ = b.call(t, "POST", base+"/auth/start", "", `{"email": "bob@example.com"}`)
	require.Equal(t, http.StatusAccepted, code, p)
	c, _ = b.code(t, "bob@example.com")
	wrong := "000000"
	if c == wrong {
		wrong = "111111"
	}
	code, p, _ = b.call(t, "POST", base+"/auth/verify", "", `{"email": "bob@example.com", "code": "`+wrong+`"}`)
	require.Equal(t, http.StatusUnauthorized, code, p)
	require.Equal(t, "code_invalid", p["code"])
}

func TestBrowserRoutesAllowCrossOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	mgmt, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	id := externalForm(t, b, live, `{"name": "Contact", "is_public": true, "schema": `+emailSchema+`}`)

	req, err := http.NewRequest(http.MethodOptions, b.gw.URL+"/sdk/auth/start", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://shop.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization")
	require.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "content-type")
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"), "never with cookies")

	code, p, h := b.call(t, "GET", "/forms/public/"+id, "", "", "Origin: https://shop.example")
	require.Equal(t, http.StatusOK, code, p)
	require.Equal(t, []string{"*"}, h.Values("Access-Control-Allow-Origin"), "one value, as a browser requires")
	require.Contains(t, h.Get("Access-Control-Expose-Headers"), "Retry-After")

	code, p, h = b.call(t, "GET", "/gateway/account", mgmt, "", "Origin: https://shop.example")
	require.Equal(t, http.StatusOK, code, p)
	require.Empty(t, h.Get("Access-Control-Allow-Origin"), "a management route is not for browsers")
	code, p, h = b.call(t, "GET", "/workflows", live, "", "Origin: https://shop.example")
	require.Equal(t, http.StatusOK, code, p)
	require.Empty(t, h.Get("Access-Control-Allow-Origin"), "nor a runtime route with a secret key")
}
