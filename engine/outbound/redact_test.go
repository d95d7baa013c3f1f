package outbound_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/outbound"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		secrets    []string
		want       string
	}{
		{"long, anywhere", "keyXsecret-token-9Y", []string{"secret-token-9"}, "keyX[redacted]Y"},
		{"5 bytes as a token", `{"error": "bad key k3Y9z"}`, []string{"k3Y9z"}, `{"error": "bad key [redacted]"}`},
		{"5 bytes inside a word is a word", "xk3Y9zx k3Y9z", []string{"k3Y9z"}, "xk3Y9zx [redacted]"},
		{"1 byte", "a bad key: a;", []string{"a"}, "[redacted] bad key: [redacted];"},
		{"2 bytes in a query", "got pin=7z&x=1", []string{"7z"}, "got pin=[redacted]&x=1"},
		{"edges that are not letters", "x-y:-+-end", []string{"-+-"}, "x-y:[redacted]end"},
		{"overlapping secrets are one", "Bearer abcdef123", []string{"abcdef123", "Bearer abcdef123"}, "[redacted]"},
		{"a replacement is not searched", "d e", []string{"d", "e", "redacted"}, "[redacted] [redacted]"},
		{"empty secret ignored", "text", []string{""}, "text"},
		{"letters of other scripts are letters", "éa a", []string{"a"}, "éa [redacted]"},
	} {
		require.Equal(t, c.want, outbound.Redact(c.text, c.secrets), c.name)
	}
}

// TestShortSecretsRedacted: a value named in Request.Secrets is blanked from the excerpt of
// an answer whatever its length; a short header value not named there is left alone.
func TestShortSecretsRedacted(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, "refused key %s (tag %s, pin %s)", r.Header.Get("X-Key"), r.Header.Get("X-Tag"), r.Header.Get("X-Pin"))
	})
	_, err := local().Do(context.Background(), outbound.Request{URL: s.URL + "/x",
		Headers: map[string]string{"X-Key": "k3Y9z", "X-Pin": "7", "X-Tag": "plain"}, Secrets: []string{"k3Y9z", "7"}})
	require.ErrorIs(t, err, outbound.ErrStatus)
	require.Contains(t, err.Error(), "refused key [redacted] (tag plain, pin [redacted])")
}

// TestSecretURLNamedNotQuoted: a URL that is itself a secret (Request.URLName) is named by
// its name in every error, whatever went wrong, never by its scheme, host or address.
func TestSecretURLNamedNotQuoted(t *testing.T) {
	t.Parallel()
	closed := closedAddr(t)
	_, port, err := net.SplitHostPort(closed)
	require.NoError(t, err)
	echo := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = fmt.Fprintf(w, "no route from %s to upstream", r.Host)
	})
	guarded := outbound.NewClient(outbound.Options{Retries: -1})
	quick := local(func(o *outbound.Options) { o.Retries = -1 })
	for _, c := range []struct {
		name   string
		client *outbound.Client
		url    string
		code   string
		hidden []string
	}{
		{"not a URL", quick, "secrettoken123:xyz", outbound.CodeTargetNotAllowed, []string{"secrettoken123", "xyz"}},
		{"another scheme", quick, "ftp://internal-host.example/x", outbound.CodeTargetNotAllowed, []string{"internal-host", "ftp"}},
		{"malformed", quick, "http://internal-host.example/%zz", outbound.CodeInvalidRequest, []string{"internal-host"}},
		{"private address", guarded, "http://10.11.12.13/x", outbound.CodeTargetNotAllowed, []string{"10.11.12.13"}},
		{"a name resolving to a private address", guarded, "http://localhost:" + port + "/x", outbound.CodeTargetNotAllowed,
			[]string{"localhost", "127.0.0.1", port}},
		{"unknown host", quick, "http://secret-host.invalid/x", outbound.CodeConnection, []string{"secret-host"}},
		{"refused connection", quick, "http://" + closed + "/x", outbound.CodeConnection, []string{closed, port}},
		{"host echoed in an answer", quick, echo.URL + "/x", outbound.CodeHTTPStatus, []string{strings.TrimPrefix(echo.URL, "http://")}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.client.Do(ctx, outbound.Request{Method: "POST", URL: c.url, URLName: "orgconfig:api:target"})
		cancel()
		require.Error(t, err, c.name)
		require.Equal(t, c.code, outbound.ErrorCode(err), "%s: %v", c.name, err)
		msg := err.Error()
		for _, a := range errorsAttempts(err) {
			msg += " " + a.Error
		}
		require.Contains(t, msg, "orgconfig:api:target", c.name)
		for _, h := range c.hidden {
			require.NotContains(t, msg, h, c.name)
		}
	}
}
