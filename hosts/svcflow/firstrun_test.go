package main

import (
	"bytes"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noRedirect is a client that shows a redirect instead of following it.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestServeShowsTheWayToTheConsole: a first `svcflow serve` logs the console's URL (a log
// line and a line in plain words), and on a database with no account the command that
// makes one; that command works; the gateway's / leads to the console and its icon
// answers. Once an account exists, the next start says nothing about making one.
func TestServeShowsTheWayToTheConsole(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	args := []string{"serve", "--db", "sqlite:" + dir + "/svcflow.db", "--runtime-addr", "127.0.0.1:0"}
	p := startProcessEnv(t, bin, dir, envWithout(), args...)
	logs := waitForLine(t, p.logs, "--dev-show-codes logs the codes")
	require.Contains(t, logs, "msg=console url="+p.gateway+"/console")
	require.Contains(t, logs, "svcflow: the console is at "+p.gateway+"/console\n")
	require.Contains(t, logs, "--dev-show-codes logs the codes")
	m := regexp.MustCompile(`curl -s (\S+)/gateway/signup -H Content-Type:application/json -d '(\{[^']*\})'`).FindStringSubmatch(logs)
	require.NotNil(t, m, logs)
	require.Equal(t, p.gateway, m[1])
	require.Contains(t, logs, "restart with --dev-token")
	code, acct := gatewayCall(t, p.gateway, "POST", "/gateway/signup", "", m[2])
	require.Equal(t, http.StatusCreated, code, acct)
	require.True(t, strings.HasPrefix(acct["management_token"].(string), "svc_mgmt_"))

	resp, err := noRedirect.Get(p.gateway + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "/console", resp.Header.Get("Location"))
	resp, err = http.Get(p.gateway + "/") // followed: the console's page
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "/console", resp.Request.URL.Path)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")

	resp, err = http.Get(p.gateway + "/favicon.ico")
	require.NoError(t, err)
	var icon bytes.Buffer
	_, _ = icon.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/x-icon", resp.Header.Get("Content-Type"))
	require.True(t, bytes.HasPrefix(icon.Bytes(), []byte{0, 0, 1, 0, 1, 0, 32, 32}), "an ICO of one 32x32 image")
	require.Contains(t, icon.String()[22:26], "PNG")

	require.NoError(t, p.stop())
	p = startProcessEnv(t, bin, dir, envWithout(), args...)
	waitForLine(t, p.logs, "--dev-show-codes logs the codes")
	require.Contains(t, p.logs.String(), "svcflow: the console is at "+p.gateway+"/console\n")
	require.NotContains(t, p.logs.String(), "no account yet", "an account exists")
}

// TestServeDevToken: with --dev-token, serve prints on standard output (never in its log) a
// management token for the development account, which owns organization acme (the tour's):
// the console signs in with it. Each start gives a new token and ends the last one. A
// gateway on an address other machines reach refuses the flag.
func TestServeDevToken(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	args := []string{"serve", "--db", "sqlite:" + dir + "/svcflow.db", "--runtime-addr", "127.0.0.1:0", "--dev-token"}
	tokenLine := regexp.MustCompile(`development management token \(account dev@localhost\): (svc_mgmt_\w+)`)
	var tokens []string
	for range 2 {
		p := startProcessEnv(t, bin, dir, envWithout(), args...)
		waitForLine(t, p.logs, "--dev-show-codes logs the codes")
		m := tokenLine.FindStringSubmatch(p.stdout.String())
		require.NotNil(t, m, "stdout: %s", p.stdout.String())
		tokens = append(tokens, m[1])
		require.NotContains(t, p.logs.String(), m[1], "the token is never in the log")
		require.Contains(t, p.logs.String(), "sign in to the console with the development management token printed on standard output")
		require.NotContains(t, p.logs.String(), "no account yet")
		code, orgs := gatewayCall(t, p.gateway, "GET", "/gateway/orgs", m[1], "")
		require.Equal(t, http.StatusOK, code, orgs)
		require.Equal(t, "acme", orgs["items"].([]any)[0].(map[string]any)["id"])
		// The console reads the tour's organization with it.
		code, runs := gatewayCall(t, p.gateway, "GET", "/console/api/orgs/acme/runs", m[1], "")
		require.Equal(t, http.StatusOK, code, runs)
		if len(tokens) == 2 {
			code, _ = gatewayCall(t, p.gateway, "GET", "/gateway/account", tokens[0], "")
			require.Equal(t, http.StatusUnauthorized, code, "the last start's token ended")
		}
		require.NoError(t, p.stop())
	}
	require.NotEqual(t, tokens[0], tokens[1])

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "serve", "--db", "sqlite:"+dir+"/other.db", "--dev-token", "--gateway-addr", "0.0.0.0:0")
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	require.Contains(t, stderr.String(), `--dev-token: the gateway listens on "0.0.0.0:0", not on loopback only`)
}

// waitForLine waits until the process has written a line holding s (the announcement
// follows the "listening" line that startProcess waits for), and returns what it wrote.
func waitForLine(t *testing.T, l *syncLog, s string) string {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(l.String(), s) }, 30*time.Second, 5*time.Millisecond, "no line with %q:\n%s", s, l)
	return l.String()
}
