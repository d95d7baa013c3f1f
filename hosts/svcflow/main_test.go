package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/internal/testlog"
)

func TestOpenAPICommandMatchesCommittedFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		file, want string
	}{
		{[]string{"openapi"}, "openapi.yaml", "openapi: 3.1.0"},
		{[]string{"openapi", "--version", "3.0"}, "openapi-3.0.yaml", "openapi: 3.0.3"},
		{[]string{"openapi", "--doc", "integrator"}, "integrator.yaml", "openapi: 3.1.0"},
		{[]string{"openapi", "--doc", "integrator", "--version", "3.0"}, "integrator-3.0.yaml", "openapi: 3.0.3"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run(tc.args, &out, &errOut), errOut.String())
			committed, err := os.ReadFile(filepath.Join("..", "..", "openapi", tc.file))
			require.NoError(t, err)
			require.Equal(t, string(committed), out.String(), "openapi/%s drifted: run `make openapi`", tc.file)
			require.Contains(t, out.String(), tc.want)
		})
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"openapi", "--version", "2.0"}, &out, &errOut))
	require.Contains(t, errOut.String(), "3.1 or 3.0")
	require.Empty(t, out.String())
	errOut.Reset()
	require.Equal(t, 2, run([]string{"openapi", "--doc", "gateway"}, &out, &errOut))
	require.Contains(t, errOut.String(), "runtime or integrator")
	require.Empty(t, out.String())
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn := store.NewTestDSN(t, dialect)
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run([]string{"migrate", "--db", dsn}, &out, &errOut), errOut.String())
			require.Contains(t, errOut.String(), "migrated")
			// Twice is fine.
			require.Equal(t, 0, run([]string{"migrate", "--db", dsn}, &out, &errOut), errOut.String())
		})
	}
}

func TestBadUsage(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"launch"}, &out, &errOut))
	require.Contains(t, errOut.String(), `unknown command "launch"`)
	require.Equal(t, 2, run([]string{"serve", "--nope"}, &out, &errOut))
	require.Equal(t, 1, run([]string{"migrate", "--db", "mysql://x"}, &out, &errOut))
	// serve, runtime and gateway answer the probes on their own addresses.
	require.Equal(t, 2, run([]string{"serve", "--health-addr", "127.0.0.1:0"}, &out, &errOut))
	require.Contains(t, errOut.String(), "--health-addr is for worker")
	for _, mib := range []string{"0", "1025", "-1"} {
		errOut.Reset()
		require.Equal(t, 2, run([]string{"serve", "--max-document-mib", mib}, &out, &errOut))
		require.Contains(t, errOut.String(), "--max-document-mib is from 1 to 1024")
	}
	require.Equal(t, 0, run([]string{"help"}, &out, &errOut))
	require.Contains(t, out.String(), "svcflow serve")
}

// TestServeTourAndDrain starts the real binary on its embedded default, walks the README's
// tour over HTTP, then stops it with SIGTERM: it must drain and exit 0.
func TestServeTourAndDrain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildBinary(t)

	p := startProcess(t, bin, dir, "serve", "--runtime-addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0") // the default --db is sqlite:./svcflow.db
	base := p.base

	// The profiler and /metrics are on the operator's listener, not on the API's.
	var opsAddr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`operator endpoints listening"? addr=(\S+)`).FindStringSubmatch(p.logs.String())
		if m != nil {
			opsAddr = m[1]
		}
		return m != nil
	}, 5*time.Second, 10*time.Millisecond)
	for _, at := range []struct {
		url  string
		want int
	}{{"http://" + opsAddr + "/debug/pprof/goroutine?debug=1", 200}, {base + "/debug/pprof/goroutine?debug=1", 404}, {base + "/metrics", 404}} {
		resp, err := http.Get(at.url)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, at.want, resp.StatusCode, at.url)
		if at.want == 200 {
			require.Contains(t, string(body), "goroutine profile")
		}
	}

	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Org-Id", "acme")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, want, resp.StatusCode, string(b))
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	call("POST", "/custom-tables", `{"name": "customers", "fields": {"email": "text", "name": "text", "tier": "text"}}`, 201)
	call("POST", "/custom-tables", `{"name": "notes", "fields": {"text": "text"}}`, 201)
	tour, err := os.ReadFile(filepath.Join("..", "..", "examples", "workflows", "onboard.json"))
	require.NoError(t, err)
	w := call("POST", "/workflows", string(tour), 201)
	run := call("POST", fmt.Sprintf("/workflows/%s/execute", w["id"]), `{"input": {"email": "ada@example.com", "name": "Ada", "tier": "gold"}}`, 202)
	require.Equal(t, "running", run["status"])
	var status map[string]any
	require.Eventually(t, func() bool {
		status = call("GET", fmt.Sprintf("/runs/%s/status", run["id"]), "", 200)
		return status["status"] != "running"
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "completed", status["status"])
	rows := call("GET", "/custom-tables/notes/rows", "", 200)
	require.Equal(t, "Welcome Ada (gold customers: 1)", rows["items"].([]any)[0].(map[string]any)["data"].(map[string]any)["text"])

	// What the tour did, as /metrics counts it.
	resp, err := http.Get("http://" + opsAddr + "/metrics")
	require.NoError(t, err)
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	metric := func(series string) float64 {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(scraped)
		require.NotNil(t, m, "%s in:\n%s", series, scraped)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, 1.0, metric("svcflow_runs_started_total"))
	require.Equal(t, 1.0, metric(`svcflow_runs_left_running_total{status="completed"}`))
	// Three steps, all custom-table, in one unit: the upsert, the read (a table read chains,
	// inside the unit's transaction) and the write commit together; two or three units when
	// the unit ran out of its chain time before a step.
	require.Equal(t, 3, len(regexp.MustCompile(`"type"`).FindAll(tour, -1)))
	units := metric(`svcflow_step_duration_seconds_count{step_type="custom-table"}`)
	require.True(t, units >= 1 && units <= 3, "units: %v", units)
	require.Equal(t, 0.0, metric(`svcflow_jobs{state="leased"}`))
	require.Equal(t, 0.0, metric(`svcflow_jobs{state="lease_expired"}`))
	require.Contains(t, string(scraped), "go_goroutines")

	// The README's ?wait= example: Bo is silver, so the read of the gold customers is
	// skipped and wrote no output; the note's {{gold.length ?? "not counted"}} says so
	// instead of rendering blank ("Welcome Bo ( gold customers)").
	bo := call("POST", fmt.Sprintf("/workflows/%s/execute?wait=30s", w["id"]), `{"input": {"email": "bo@example.com", "name": "Bo", "tier": "silver"}}`, 200)
	require.Equal(t, "completed", bo["status"])
	require.Equal(t, "skipped", bo["steps"].([]any)[1].(map[string]any)["status"])
	rows = call("GET", "/custom-tables/notes/rows", "", 200)
	var notes []string
	for _, r := range rows["items"].([]any) {
		notes = append(notes, r.(map[string]any)["data"].(map[string]any)["text"].(string))
	}
	require.ElementsMatch(t, []string{"Welcome Ada (gold customers: 1)", "Welcome Bo (gold customers: not counted)"}, notes)

	require.NoError(t, p.stop(), "serve must exit 0 on SIGTERM; logs:\n%s", p.logs.String())
	require.Contains(t, p.logs.String(), "stopped cleanly")
	_, err = os.Stat(filepath.Join(dir, "svcflow.db"))
	require.NoError(t, err, "the default database is ./svcflow.db")
}

// TestWaitAcrossProcesses runs the runtime and the worker as two processes of the real
// binary against one PostgreSQL database: execute?wait= in the runtime answers when the
// worker process commits the run's end (PostgreSQL LISTEN/NOTIFY), long before the 500 ms
// poll that backs it up would have to; a SQLite file shared by the two processes is woken
// by that poll.
func TestWaitAcrossProcesses(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn := store.NewTestDSN(t, dialect)
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run([]string{"migrate", "--db", dsn}, &out, &errOut), errOut.String())
			base := startProcess(t, bin, "", "runtime", "--db", dsn, "--runtime-addr", "127.0.0.1:0").base
			startProcess(t, bin, "", "worker", "--db", dsn)

			call := func(method, path, body string) (int, map[string]any) {
				t.Helper()
				return orgCall(t, base, "acme", method, path, "application/json", []byte(body))
			}
			code, _ := call("POST", "/custom-tables", `{"name": "notes", "fields": {"text": "text"}}`)
			require.Equal(t, 201, code)
			code, w := call("POST", "/workflows", `{"name": "note", "definition": {"actions": [
				{"type": "custom-table", "outputKey": "saved", "properties": {"table": "notes", "operation": "write", "fields": {"text": "{{input.text}}"}}}]}}`)
			require.Equal(t, 201, code)
			var took []time.Duration
			for i := range 5 {
				began := time.Now()
				code, doc := call("POST", fmt.Sprintf("/workflows/%s/execute?wait=30s", w["id"]), fmt.Sprintf(`{"input": {"text": "n%d"}}`, i))
				took = append(took, time.Since(began))
				require.Equal(t, 200, code, "%v", doc)
				require.Equal(t, "completed", doc["status"])
				require.Contains(t, doc["context"], "saved")
			}
			t.Logf("%s: execute?wait answered in %v (the worker is another process)", dialect, took)
		})
	}
}

// orgCall sends one request as org to the runtime at base and decodes its JSON answer.
func orgCall(t *testing.T, base, org, method, path, contentType string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Org-Id", org)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return resp.StatusCode, m
}

// process is the real binary running in a test.
type process struct {
	base    string // the runtime's base URL, when it serves one
	gateway string // the gateway's base URL, when it serves one (read once it logged it)
	logs    *syncLog
	stdout  *syncLog     // standard output, kept apart from the logs (a --dev-token token)
	stop    func() error // SIGTERM, then the exit status (killed after 30 s); once
	kill    func()       // SIGKILL: the process dies at once, as on a crash
}

// startProcess starts the binary in dir (a new temporary directory when empty) with args,
// and stops it when the test ends if the test did not.
func startProcess(t *testing.T, bin, dir string, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, bin, dir, nil, args...)
}

// startProcessEnv is startProcess with the environment env (nil: this process's).
func startProcessEnv(t *testing.T, bin, dir string, env []string, args ...string) *process {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if args[0] == "serve" && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--gateway-addr") }) {
		// Tests run many servers at once: each gateway on a port of its own.
		args = append(args, "--gateway-addr", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	p := &process{logs: &syncLog{}, stdout: &syncLog{quiet: true}}
	cmd.Stdout = p.stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	addrCh, gwCh := make(chan string, 1), make(chan string, 1)
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		listening := regexp.MustCompile(`runtime listening"? addr=(\S+)`)
		gatewayListening := regexp.MustCompile(`gateway listening"? addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addrCh <- m[1]
			}
			if m := gatewayListening.FindStringSubmatch(sc.Text()); m != nil {
				gwCh <- m[1]
			}
		}
	}()
	var once sync.Once
	var exitErr error
	p.stop = func() error {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			// Wait closes the stderr pipe: read it to its end (the process exiting) first.
			go func() { <-logsDone; done <- cmd.Wait() }()
			select {
			case exitErr = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				exitErr = errors.New(args[0] + " did not stop within 30s of SIGTERM")
			}
		})
		return exitErr
	}
	p.kill = func() {
		_ = cmd.Process.Kill()
		_ = p.stop() // reaps it
	}
	t.Cleanup(func() {
		_ = p.stop()
		if t.Failed() {
			t.Logf("%s logs:\n%s", args[0], p.logs.String())
		}
	})
	if args[0] == "worker" {
		return p
	}
	if args[0] == "gateway" {
		select {
		case addr := <-gwCh:
			p.gateway = "http://" + addr
		case <-time.After(30 * time.Second):
			t.Fatalf("the gateway did not start listening; logs:\n%s", p.logs.String())
		}
		return p
	}
	select {
	case addr := <-addrCh:
		p.base = "http://" + addr
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start listening; logs:\n%s", args[0], p.logs.String())
	}
	if args[0] == "serve" {
		select {
		case addr := <-gwCh:
			p.gateway = "http://" + addr
		case <-time.After(30 * time.Second):
			t.Fatalf("the gateway did not start listening; logs:\n%s", p.logs.String())
		}
	}
	return p
}

type syncLog struct {
	mu    sync.Mutex
	b     strings.Builder
	quiet bool // not a log: not gathered with the suite's logs
}

// add keeps a line the process wrote, and gathers it with the suite's logs.
func (l *syncLog) add(line string) {
	if !l.quiet {
		testlog.Line(line)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

// Write keeps what the process writes to its standard output.
func (l *syncLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(b)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
