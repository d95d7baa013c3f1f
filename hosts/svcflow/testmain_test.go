package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/internal/testlog"
)

// TestMain gathers the package's logs with the suite's (internal/testlog) and removes the
// binary the tests shared.
func TestMain(m *testing.M) {
	testlog.Main(m, func() {
		if svcflowBinary.dir != "" {
			_ = os.RemoveAll(svcflowBinary.dir)
		}
	})
}

// svcflowBinary is the package's one build of the svcflow binary (buildBinary): every test
// that starts the real process runs this file, built from the same source, in a directory
// of its own (its working directory, its database, its key file). Each test built its own
// copy before, 24 links of the same program.
var svcflowBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildBinary builds svcflow (not under the race detector, as a user runs it) once for the
// package and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	svcflowBinary.once.Do(func() {
		svcflowBinary.dir, svcflowBinary.err = os.MkdirTemp("", "svcflow-test-bin-")
		if svcflowBinary.err != nil {
			return
		}
		svcflowBinary.path = filepath.Join(svcflowBinary.dir, "svcflow")
		build := exec.Command("go", "build", "-o", svcflowBinary.path, ".")
		build.Stderr = os.Stderr
		svcflowBinary.err = build.Run()
	})
	require.NoError(t, svcflowBinary.err, "go build ./hosts/svcflow")
	return svcflowBinary.path
}
