// Package testlog gathers the logs of the whole test suite in one directory, so that one
// check reads every line the suite made the service write: .ci/test runs the suite with
// SVC_TEST_LOG_DIR set, then `go run ./internal/testlog/cmd/logscan DIR` fails on any
// secret in any line (Scan).
//
// A package's tests take part through TestMain (testlog.Main), which makes slog's default
// logger write to the directory; a test that built a logger of its own (to discard its
// lines, or to read them) takes Quiet or Tee instead, and a test that starts the svcflow
// binary hands the lines of the process to Line. Without SVC_TEST_LOG_DIR nothing is
// written and each does what the test did before.
package testlog

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// EnvDir names the directory the suite's logs go to.
const EnvDir = "SVC_TEST_LOG_DIR"

var (
	once sync.Once
	mu   sync.Mutex
	file *os.File
)

// sink is this test process's file in the directory, or nil when the suite's logs are not
// gathered. Each process writes its own file: a test may start copies of itself.
func sink() *os.File {
	once.Do(func() {
		dir := os.Getenv(EnvDir)
		if dir == "" {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "testlog:", err)
			return
		}
		name := fmt.Sprintf("%s.%d.log", packageName(), os.Getpid())
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testlog:", err)
			return
		}
		file = f
	})
	return file
}

// packageName is the test's package directory below the module's root, dots for slashes
// (a test runs in its package's directory).
func packageName() string {
	wd, err := os.Getwd()
	if err != nil {
		return "unknown"
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "root"
			}
			return strings.ReplaceAll(rel, string(filepath.Separator), ".")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Base(wd)
		}
		dir = parent
	}
}

// writer appends whole lines to the sink under one lock.
type writer struct{}

func (writer) Write(p []byte) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	return file.Write(p)
}

// handler is a handler that writes to the sink, nil when there is none.
func handler() slog.Handler {
	if sink() == nil {
		return nil
	}
	return slog.NewJSONHandler(writer{}, &slog.HandlerOptions{Level: slog.LevelDebug})
}

// Main runs a package's tests with slog's default logger writing to the directory, when
// it is set (at every level: a debug line must not leak either), then each of after (a
// package's shared fixtures removed).
func Main(m *testing.M, after ...func()) {
	if h := handler(); h != nil {
		slog.SetDefault(slog.New(h))
	}
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// Quiet is a logger whose lines no test reads: gathered when the suite's logs are, else
// discarded.
func Quiet() *slog.Logger {
	if h := handler(); h != nil {
		return slog.New(h)
	}
	return slog.New(slog.DiscardHandler)
}

// Tee is a logger writing to h, which the test reads, and to the directory.
func Tee(h slog.Handler) *slog.Logger {
	if g := handler(); g != nil {
		return slog.New(slog.NewMultiHandler(h, g))
	}
	return slog.New(h)
}

// Line gathers one line another process logged (a test's svcflow binary).
func Line(s string) {
	if sink() == nil {
		return
	}
	_, _ = writer{}.Write([]byte(strings.TrimRight(s, "\n") + "\n"))
}

// Secret names a value the suite uses as a secret that no pattern of Scan's recognises
// (a generated master key, say): Scan fails on a line that contains it.
func Secret(v string) {
	if sink() == nil || len(v) < 8 {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(filepath.Join(os.Getenv(EnvDir), fmt.Sprintf("secrets.%d", os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(v + "\n")
}

// Gather gathers, when the test ends, every line of the *.log files under dir: the logs
// of processes a test started with their output in files (hosts/chaos, hosts/benchhttp).
// Call it after t.TempDir made dir, so that it runs before the directory is removed.
func Gather(t testing.TB, dir string) {
	t.Cleanup(func() {
		if sink() == nil {
			return
		}
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			for _, line := range strings.Split(string(b), "\n") {
				if line != "" {
					Line(line)
				}
			}
			return nil
		})
	})
}
