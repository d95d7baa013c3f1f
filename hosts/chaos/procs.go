package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// startTimeout bounds the wait for a started process to answer its health check.
	startTimeout = 30 * time.Second
	// stopTimeout bounds a process's drain after SIGTERM at the end; then it is killed.
	stopTimeout = 15 * time.Second
)

// proc is one svcflow process the chaos program supervises: started, killed with SIGKILL,
// restarted on the same arguments, and watched for exits it did not cause.
type proc struct {
	name    string
	bin     string
	args    []string
	logPath string
	// health is the URL that answers 200 once the process serves; "" for a worker, which
	// opens no port (it is taken as up once started).
	health string
	// ops is the process's --ops-addr: its /metrics tell whether it was busy when killed.
	ops string

	mu       sync.Mutex
	cmd      *exec.Cmd
	log      *os.File
	exited   chan struct{} // closed when the current process ended
	exitErr  error
	killedBy string // why we ended it ("SIGKILL", "stop"): an exit without it is the process's own
	starts   int
	// ownExits are the exits this program did not cause: each a finding.
	ownExits []string
}

// supervisor holds every process of a scenario, so that all of them are stopped on every
// exit path.
type supervisor struct {
	mu    sync.Mutex
	procs []*proc
	// onOwnExit, when set, is told about a process that exited by itself (after it was
	// restarted).
	onOwnExit func(p *proc, why string)
	stopped   bool
}

// add registers p and starts it, waiting until it is up.
func (s *supervisor) add(ctx context.Context, p *proc) error {
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return s.start(ctx, p)
}

// start starts p's process (again) and, when p has a health URL, waits until it answers.
func (s *supervisor) start(ctx context.Context, p *proc) error {
	// Under s.mu from the check to the process's registration, so that stopAll, which
	// sets stopped under it, sees every process started.
	s.mu.Lock()
	if s.stopped || ctx.Err() != nil {
		s.mu.Unlock()
		return errors.New("stopping")
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	fmt.Fprintf(log, "=== chaos: start %s %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		log.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.log, p.exited, p.exitErr, p.killedBy = cmd, log, exited, nil, ""
	p.starts++
	p.mu.Unlock()
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		killed := p.killedBy
		p.mu.Unlock()
		log.Close()
		close(exited)
		if killed == "" {
			s.ownExit(p, err)
		}
	}()
	if p.health == "" {
		return nil
	}
	return waitHealthy(ctx, p.health, exited, p.logPath)
}

// ownExit records a process that ended without being told to and starts it again: a
// finding, since a supervisor in production would have to do the same.
func (s *supervisor) ownExit(p *proc, err error) {
	why := fmt.Sprintf("%s exited by itself (%v); last log line: %s", p.name, err, lastLine(p.logPath))
	p.mu.Lock()
	p.ownExits = append(p.ownExits, why)
	p.mu.Unlock()
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return
	}
	if s.onOwnExit != nil {
		s.onOwnExit(p, why)
	}
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	_ = s.start(ctx, p)
}

// kill ends p's process with SIGKILL and waits for it to be gone.
func (s *supervisor) kill(p *proc) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	if cmd == nil {
		p.mu.Unlock()
		return errors.New("not started")
	}
	select {
	case <-exited:
		p.mu.Unlock()
		return fmt.Errorf("%s is not running", p.name)
	default:
	}
	p.killedBy = "SIGKILL"
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s did not die within 5s of SIGKILL", p.name)
	}
}

// running reports whether p's process is alive.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stopAll ends every process: SIGTERM, then SIGKILL after stopTimeout. It reports processes
// that did not drain cleanly. Safe to call more than once.
func (s *supervisor) stopAll() error {
	s.mu.Lock()
	s.stopped = true
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, p := range procs {
		p.mu.Lock()
		cmd, exited := p.cmd, p.exited
		if cmd == nil {
			p.mu.Unlock()
			continue
		}
		select {
		case <-exited:
			p.mu.Unlock()
			continue
		default:
		}
		p.killedBy = "stop"
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
				p.mu.Lock()
				err := p.exitErr
				p.mu.Unlock()
				// Killed by the SIGTERM itself: a process started a moment before, whose
				// handler was not installed yet. Nothing was in flight.
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
						err = nil
					}
				}
				if err != nil {
					emu.Lock()
					errs = append(errs, fmt.Errorf("%s stopped with %v: see %s", p.name, err, p.logPath))
					emu.Unlock()
				}
			case <-time.After(stopTimeout):
				_ = cmd.Process.Kill()
				<-exited
				emu.Lock()
				errs = append(errs, fmt.Errorf("%s did not stop within %s of SIGTERM and was killed: see %s", p.name, stopTimeout, p.logPath))
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ownExits lists every exit no one asked for, over all processes.
func (s *supervisor) ownExits() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []string
	for _, p := range s.procs {
		p.mu.Lock()
		all = append(all, p.ownExits...)
		p.mu.Unlock()
	}
	return all
}

// waitHealthy polls url until it answers 200, the process exits, or startTimeout passes.
func waitHealthy(ctx context.Context, url string, exited <-chan struct{}, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before answering %s: see %s", url, logPath)
		case <-ctx.Done():
			return fmt.Errorf("no answer from %s (%w): see %s", url, context.Cause(ctx), logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastLine is the last non-empty line of a log file, cut to 300 bytes.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}

// workDone is how much work p's process has done since it started, read from its /metrics
// (--ops-addr): committed units of run work plus webhook attempts. ok is false when the
// process did not answer.
func (p *proc) workDone(ctx context.Context) (n float64, ok bool) {
	if p.ops == "" {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.ops+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "svcflow_step_duration_seconds_count") && !strings.HasPrefix(line, "svcflow_webhook_attempts_total") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			n += v
		}
	}
	return n, resp.StatusCode == http.StatusOK
}
