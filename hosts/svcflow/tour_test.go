package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTourProgram builds examples/client/cmd/tour, the integrator's Go client at work, and
// runs it against svcflow serve's gateway twice: signing up an account of its own, then
// with a management token from the environment (SVC_MANAGEMENT_TOKEN) and another
// organization. Each run creates the organization and its key, defines a workflow,
// executes it with ?wait= and prints the run's result.
func TestTourProgram(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	tour := filepath.Join(t.TempDir(), "tour")
	build := exec.Command("go", "build", "-o", tour, "../../examples/client/cmd/tour")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	dir := t.TempDir()
	p := startProcessEnv(t, bin, dir, envWithout(), "serve", "--db", "sqlite:"+dir+"/svcflow.db", "--runtime-addr", "127.0.0.1:0")

	runTour := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(tour, append([]string{"-gateway", p.gateway}, args...)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "tour: %s", stderr.String())
		return stdout.String()
	}
	const result = `matched [{"left":{"amount":100,"invoice":"INV-1"},"right":{"amount":100,"invoice":"INV-1"}}]
unmatchedLeft [{"amount":40,"invoice":"INV-2"}]
unmatchedRight []
`
	out := runTour(envWithout())
	require.Regexp(t, `^account acct_\S+\norganization tour, key svc_live_\S+\nworkflow wfl-\S+ version 1\nrun run-\S+ completed\n`, out)
	require.Contains(t, out, result)

	code, acct := gatewayCall(t, p.gateway, http.MethodPost, "/gateway/signup", "", `{"email": "ops@tour.example", "name": "Ops"}`)
	require.Equal(t, http.StatusCreated, code, acct)
	out = runTour(envWithout("SVC_MANAGEMENT_TOKEN="+acct["management_token"].(string), "SVC_ORG=second"))
	require.Regexp(t, `^organization second, key svc_live_\S+\nworkflow wfl-\S+ version 1\nrun run-\S+ completed\n`, out)
	require.Contains(t, out, result)

	// A management token the gateway does not know: the tour stops at the organization.
	cmd := exec.Command(tour, "-gateway", p.gateway, "-token", "svc_mgmt_unknown", "-org", "third")
	cmd.Env = envWithout()
	msg, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(msg), "create organization: HTTP 401")
}
