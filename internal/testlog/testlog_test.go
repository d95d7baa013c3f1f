package testlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/internal/testlog"
)

// TestScanFindsSecrets: each shape of secret, and a value a test named, is found in a line;
// lines that only resemble one are not.
func TestScanFindsSecrets(t *testing.T) {
	dir := t.TempDir()
	lines := []string{
		`{"level":"INFO","msg":"run started","run_id":"run-1","org_id":"o1"}`,
		`{"msg":"task-1234 done","key":"svc_pk_0123456789"}`, // a task id; a publishable key is public
		`{"msg":"call failed","err":"401 with key sk-live-7b1e4a09"}`,
		`{"msg":"x","secret":"whsec_test_0123456789"}`,
		`time=... msg="gateway" auth="Bearer svc_live_0123456789abcdef"`,
		`{"msg":"token","v":"xoxb-direct-token-5150"}`,
		`{"msg":"jwt","v":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"}`,
		`{"msg":"key","v":"-----BEGIN RSA PRIVATE KEY-----"}`,
		`{"msg":"master","v":"c2VjcmV0LWtleS1uYW1lZC1ieS1hLXRlc3Q="}`,
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pkg.1.log"), []byte(joinLines(lines)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets.1"), []byte("c2VjcmV0LWtleS1uYW1lZC1ieS1hLXRlc3Q=\n"), 0o644))

	r, err := testlog.Scan(dir)
	require.NoError(t, err)
	require.Equal(t, 1, r.Files)
	require.Equal(t, len(lines), r.Lines)
	var found []int
	for _, f := range r.Findings {
		found = append(found, f.Line)
	}
	require.Equal(t, []int{3, 4, 5, 6, 7, 8, 9}, found, "%v", r.Findings)
	for _, f := range r.Findings {
		require.LessOrEqual(t, len(f.Match), 10, "a finding shows only the secret's beginning")
	}
}

func joinLines(ls []string) string {
	s := ""
	for _, l := range ls {
		s += l + "\n"
	}
	return s
}

// TestEveryTestPackageGathersItsLogs: a package with tests that does not call testlog.Main
// from its TestMain would leave its logs out of the scan, silently.
func TestEveryTestPackageGathersItsLogs(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root")
	tests := map[string]bool{}   // directories with a _test.go
	gathers := map[string]bool{} // directories whose tests call testlog.Main
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		tests[dir] = true
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "testlog.Main(m)") || strings.Contains(string(b), "testlog.Main(m, ") {
			gathers[dir] = true
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(tests), 20)
	for dir := range tests {
		rel, _ := filepath.Rel(root, dir)
		if rel == filepath.Join("internal", "testlog") {
			continue
		}
		require.True(t, gathers[dir], "%s has tests but no TestMain calling testlog.Main: add its main_test.go (see internal/testlog)", rel)
	}
}
