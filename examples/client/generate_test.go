package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClientUpToDate regenerates the client from the committed openapi/openapi-3.0.yaml with
// the go:generate command (oapi-codegen at tools.mod's version, from the module cache) into a
// temporary directory, and fails when client.gen.go differs: the contract changed and the
// client was not regenerated, or the file was edited by hand.
func TestClientUpToDate(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "tool", "-modfile=tools.mod", "oapi-codegen",
		"-config", "oapi-codegen.yaml", "-o", out, filepath.Join("..", "..", "openapi", "openapi-3.0.yaml"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "oapi-codegen: %s", stderr.String())
	generated, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile("client.gen.go")
	require.NoError(t, err)
	if !bytes.Equal(generated, committed) {
		t.Fatal("examples/client/client.gen.go is out of date with openapi/openapi-3.0.yaml: run `make client` and commit it")
	}
}

// TestIntegratorClientUpToDate is TestClientUpToDate for the integrator's client
// (examples/client/integrator, from openapi/integrator-3.0.yaml).
func TestIntegratorClientUpToDate(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "integrator.gen.go")
	cmd := exec.Command("go", "tool", "-modfile=../tools.mod", "oapi-codegen",
		"-config", "oapi-codegen.yaml", "-o", out, filepath.Join("..", "..", "..", "openapi", "integrator-3.0.yaml"))
	cmd.Dir = "integrator"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "oapi-codegen: %s", stderr.String())
	generated, err := os.ReadFile(out)
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join("integrator", "integrator.gen.go"))
	require.NoError(t, err)
	if !bytes.Equal(generated, committed) {
		t.Fatal("examples/client/integrator/integrator.gen.go is out of date with openapi/integrator-3.0.yaml: run `make client` and commit it")
	}
}
