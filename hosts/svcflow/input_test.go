package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeKeepsInputExactlyOrRefusesIt: through svcflow serve over HTTP, a 30-digit
// number in a run's input comes back with its digits; a number out of range is 422 naming
// its pointer and starts nothing; a body that is not UTF-8 is 400 invalid_utf8 on the
// runtime and on the gateway, and nothing is stored.
func TestServeKeepsInputExactlyOrRefusesIt(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db", "--runtime-addr", "127.0.0.1:0")
	const big = "123456789012345678901234567891"
	code, w := orgCall(t, p.base, "acme", "POST", "/workflows", "application/json",
		[]byte(`{"name": "refs", "definition": {"actions": []}}`))
	require.Equal(t, http.StatusCreated, code, w)
	id := w["id"].(string)

	raw := func(base, path string, body []byte) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", base+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if base == p.base {
			req.Header.Set("X-Org-Id", "acme")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := raw(p.base, "/workflows/"+id+"/execute?wait=10s", []byte(`{"input": {"ref": `+big+`}}`))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"ref":`+big, "the digits as sent")

	code, body = raw(p.base, "/workflows/"+id+"/execute", []byte(`{"input": {"n": 1e400}}`))
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	require.Contains(t, body, "/input/n")
	code, runs := orgCall(t, p.base, "acme", "GET", "/runs?workflow_id="+id, "application/json", nil)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, runs["items"], 1, "the refused execute started nothing")

	code, body = raw(p.base, "/workflows", []byte("{\"name\": \"bad-\xff\", \"definition\": {\"actions\": []}}"))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, `"code":"invalid_utf8"`)
	code, body = raw(p.gateway, "/gateway/signup", []byte("{\"email\": \"\xffa@b.example\", \"name\": \"x\"}"))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, `"code":"invalid_utf8"`)
	code, wfs := orgCall(t, p.base, "acme", "GET", "/workflows", "application/json", nil)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, wfs["items"], 1, "nothing stored")
}
