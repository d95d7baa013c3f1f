package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/svcflow/svcflow/internal/svcbin"
)

const (
	// startTimeout bounds the wait for GET /health after the server starts.
	startTimeout = 30 * time.Second
	// stopTimeout bounds the server's drain after SIGTERM; then it is killed.
	stopTimeout = 60 * time.Second
)

// server is a running svcflow process: `svcflow serve`, or the load mode's runtime and
// workers.
type server struct {
	cmd       *exec.Cmd
	base      string // http://127.0.0.1:port; "" for a worker
	healthURL string // what answers 200 once the process is ready
	logPath   string
	log       *os.File
	exited    chan struct{} // closed when the process has ended; exitErr is set then
	exitErr   error
}

// startServer starts `bin serve` on dir/bench.db and a free port, its output going to
// dir/server.log, and waits until it answers GET /health.
// opsAddr, when set (-ops-addr), is where the server serves /metrics and Go's profiler.
var opsAddr string

func startServer(ctx context.Context, bin, dir string, workers int, extra ...string) (*server, error) {
	addr, err := svcbin.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"serve",
		"--db", "sqlite:" + filepath.Join(dir, "bench.db"),
		"--runtime-addr", addr,
		"--workers", fmt.Sprint(workers)}
	if opsAddr != "" {
		args = append(args, "--ops-addr", opsAddr)
	}
	args = append(args, extra...)
	return startProcess(ctx, bin, filepath.Join(dir, "server.log"), args, nil, "http://"+addr, "http://"+addr+"/health")
}

// startProcess starts bin with args (env added to this process's environment), its output
// going to logPath, and waits until healthURL answers 200.
func startProcess(ctx context.Context, bin, logPath string, args, env []string, base, healthURL string) (*server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// Not CommandContext: the server is stopped by stop, with SIGTERM and a drain.
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, base: base, healthURL: healthURL, logPath: logPath, log: log, exited: make(chan struct{})}
	go func() {
		s.exitErr = cmd.Wait()
		if s.exitErr == nil {
			s.exitErr = errors.New("exit status 0")
		}
		close(s.exited)
	}()
	if err := s.waitHealthy(ctx); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	return s, nil
}

func (s *server) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.healthURL, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("svcflow exited before answering %s (%v): see %s", s.healthURL, s.exitErr, s.logPath)
		case <-ctx.Done():
			return fmt.Errorf("svcflow did not answer %s within %s: see %s", s.healthURL, startTimeout, s.logPath)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM, waits for the drain (killing the process after stopTimeout) and
// closes the log. It reports a server that had already died or did not stop cleanly.
func (s *server) stop() error {
	defer s.log.Close()
	select {
	case <-s.exited:
		return fmt.Errorf("svcflow had exited (%v): see %s", s.exitErr, s.logPath)
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if errors.As(s.exitErr, new(*exec.ExitError)) {
			return fmt.Errorf("svcflow stopped with %v: see %s", s.exitErr, s.logPath)
		}
		return nil
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("svcflow did not stop within %s of SIGTERM and was killed: see %s", stopTimeout, s.logPath)
	}
}
