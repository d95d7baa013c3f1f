package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/oauth2"

	"github.com/svcflow/svcflow/engine/outbound"
)

// oauthHTTP hands oauth2 an *http.Client that makes its requests through the engine's
// outbound client (address guard, body cap, no redirects).
func (e *Connections) oauthHTTP(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, outboundHTTPClient(e.client))
}

// outboundHTTPClient is an *http.Client whose requests go through c, so that the calls
// oauth2 makes (code exchange, refresh) get the same address guard, body cap and error
// hygiene as every other call to a provider. A non-2xx answer is handed back as a response
// (oauth2 reads the provider's error from it), not as an error.
func outboundHTTPClient(c *outbound.Client) *http.Client {
	return &http.Client{Transport: outboundTransport{c: c}}
}

type outboundTransport struct{ c *outbound.Client }

func (t outboundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	headers := make(map[string]string, len(req.Header))
	for k, v := range req.Header {
		headers[k] = strings.Join(v, ", ")
	}
	r := outbound.Request{Method: req.Method, URL: req.URL.String(), Headers: headers}
	if body != nil {
		r.Body = body
	}
	resp, err := t.c.Do(req.Context(), r)
	if resp == nil {
		return nil, err
	}
	var data []byte
	switch v := resp.Body.(type) {
	case nil:
	case string:
		data = []byte(v)
	default:
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("re-encoding the answer: %w", err)
		}
	}
	header := resp.Headers.Clone()
	header.Del("Content-Length") // the body was re-encoded
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", resp.Status, http.StatusText(resp.Status)),
		StatusCode:    resp.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(data)),
		ContentLength: int64(len(data)),
		Request:       req,
	}, nil
}
