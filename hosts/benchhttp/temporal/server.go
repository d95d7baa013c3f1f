package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// devServer is a running `temporal server start-dev`.
type devServer struct {
	cmd     *exec.Cmd
	addr    string // the frontend's host:port
	logPath string
	exited  chan struct{}
	exitErr error
}

// startDevServer starts the dev server on free loopback ports, headless, with its log in
// dir, and dials it until it answers (at most a minute: its first start compiles nothing,
// but a loaded machine is slow).
func startDevServer(ctx context.Context, bin, dir string) (*devServer, client.Client, error) {
	ports := make([]string, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		ports[i] = p
	}
	logPath := filepath.Join(dir, "temporal.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", ports[0], "--http-port", ports[1], "--metrics-port", ports[2], "--log-level", "error")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, fmt.Errorf("start %s server start-dev: %w", bin, err)
	}
	s := &devServer{cmd: cmd, addr: "127.0.0.1:" + ports[0], logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.exitErr = cmd.Wait()
		log.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: s.addr, Namespace: "default", Logger: quiet()})
		if err == nil {
			if _, err = c.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				return s, c, nil
			}
			c.Close()
		}
		select {
		case <-s.exited:
			return nil, nil, fmt.Errorf("temporal server start-dev exited (%v): see %s", s.exitErr, logPath)
		case <-ctx.Done():
			return nil, nil, errors.Join(ctx.Err(), s.stop())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.Join(fmt.Errorf("temporal server start-dev did not answer on %s within a minute (%v): see %s", s.addr, err, logPath), s.stop())
		}
	}
}

// stop sends SIGTERM and waits up to 30 s, then kills.
func (s *devServer) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("temporal server start-dev did not stop within 30 s of SIGTERM and was killed")
	}
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// quiet is the SDK's logger, warnings and errors only.
func quiet() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// clockTick is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTick = 10 * time.Millisecond

// processCPU is the user and system CPU time process pid has used (/proc/PID/stat's
// utime and stime; fields counted from the command name's closing parenthesis).
func processCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	stat := string(b)
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * clockTick, true
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
