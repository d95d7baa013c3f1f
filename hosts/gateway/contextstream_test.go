package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// get sends a GET with the key and Accept through the gateway and reads the whole answer.
func (b *bundle) get(t *testing.T, path, token, accept string) (*http.Response, string) {
	t.Helper()
	req := b.request(t, http.MethodGet, path, token, "")
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// TestGatewayForwardsContextStreams reads a key stored in many parts through the gateway,
// as NDJSON and as CSV: streamed (chunked, no Content-Length), the runtime's answer as it
// is; a 406 and another organization's 404 as problems.
func TestGatewayForwardsContextStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, gateway.Options{})
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")
	_, liveB, _ := b.signup(t, "other@platform.example", "cust-b")
	code, w, _ := b.call(t, "POST", "/workflows", live, `{"name": "w", "definition": {"actions": []}}`)
	require.Equal(t, http.StatusCreated, code, w)
	code, run, _ := b.call(t, "POST", "/workflows/"+w["id"].(string)+"/execute", live, `{}`)
	require.Equal(t, http.StatusAccepted, code, run)
	runID := run["id"].(string)

	var parts []json.RawMessage
	var els []string
	for p := range 20 {
		var in []string
		for k := p * 50; k < (p+1)*50; k++ {
			in = append(in, fmt.Sprintf(`{"id":%d,"name":"Zoë \"%d\", Ltd"}`, k, k))
		}
		parts = append(parts, json.RawMessage("["+strings.Join(in, ",")+"]"))
		els = append(els, in...)
	}
	require.NoError(t, b.st.PutContextParts(t.Context(), "cust-a", runID, "rows", storage.Parts(parts...), 1000, 50))
	path := "/runs/" + runID + "/context/rows"

	resp, body := b.get(t, path, live, "application/x-ndjson")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	require.EqualValues(t, -1, resp.ContentLength, "streamed")
	require.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	require.Equal(t, strings.Join(els, "\n")+"\n", body)

	resp, body = b.get(t, path, live, "text/csv")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "text/csv; charset=utf-8; header=present", resp.Header.Get("Content-Type"))
	require.EqualValues(t, -1, resp.ContentLength)
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 1001)
	require.Equal(t, []string{"id", "name"}, records[0])
	require.Equal(t, []string{"999", `Zoë "999", Ltd`}, records[1000])

	resp, body = b.get(t, "/runs/"+runID+"/context/__run_id", live, "text/csv")
	require.Equal(t, http.StatusNotAcceptable, resp.StatusCode, body)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Contains(t, body, `"code":"not_acceptable"`)

	for _, accept := range []string{"application/x-ndjson", "text/csv"} {
		resp, body = b.get(t, path, liveB, accept)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, body)
		require.NotContains(t, body, "Zoë")
	}
}

// TestGatewayStreamsWithoutBuffering: a line the runtime has flushed reaches the client
// while the runtime's answer is still open. The runtime here is a handler that holds its
// answer open until the client has the first line (the real one cannot be paused).
func TestGatewayStreamsWithoutBuffering(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write([]byte(`{"n":1}` + "\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(`{"n":2}` + "\n"))
	}))
	t.Cleanup(rt.Close)
	u, err := url.Parse(rt.URL)
	require.NoError(t, err)
	st := store.OpenTest(t, "sqlite")
	b := &bundle{st: st, gs: gwstore.OpenTest(t, st), logs: &bytes.Buffer{}, clock: &clock{t: time.Now()}}
	b.gw = httptest.NewServer(checked(t, gateway.New(gateway.Options{Store: b.gs, RuntimeURL: u, Now: b.clock.now}).Handler()))
	t.Cleanup(b.gw.Close)
	_, live, _ := b.signup(t, "ops@platform.example", "cust-a")

	req := b.request(t, http.MethodGet, "/runs/run-1/context/rows", live, "")
	req.Header.Set("Accept", "application/x-ndjson")
	type answer struct {
		resp *http.Response
		line string
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- answer{err: err}
			return
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		first <- answer{resp, line, err}
	}()
	var a answer
	select {
	case a = <-first:
	case <-time.After(10 * time.Second): // a guard against a hang, not a measurement
		close(release)
		t.Fatal("the gateway held the answer back until the runtime's ended")
	}
	close(release)
	require.NoError(t, a.err)
	defer a.resp.Body.Close()
	require.Equal(t, "application/x-ndjson", a.resp.Header.Get("Content-Type"))
	require.Equal(t, `{"n":1}`+"\n", a.line, "the first line, before the runtime's answer ended")
}
