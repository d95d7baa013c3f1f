package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/svcflow/svcflow/internal/svcbin"
)

// scenario is one chaos run's settings.
type scenario struct {
	name string // "postgres" or "sqlite"
	bin  string
	dir  string // its own temporary directory: database file, process logs
	out  io.Writer

	runs     int
	chaosFor time.Duration // how long processes are killed
	killMin  time.Duration // the pause between two kills is drawn in [killMin, killMax)
	killMax  time.Duration
	lease    time.Duration // --lease of every process
	// workers is the number of worker processes on PostgreSQL; SQLite runs one serve.
	workers int
	// pgRestart restarts the machine's PostgreSQL once, halfway through the chaos.
	pgRestart bool
	// pgBase is the server the PostgreSQL scenario creates its database on.
	pgBase string
	seed   uint64
	// failRate is the fraction of first attempts the receiver fails.
	failRate float64
	// settle bounds each wait after the chaos (runs to settle, deliveries to end).
	settle time.Duration
}

// chaosLog is what the chaos did.
type chaosLog struct {
	mu         sync.Mutex
	kills      int
	busyKills  int // kills of a process that was doing work right before
	pgRestarts int
	pgDown     time.Duration
	ownExits   []string
	notes      []string
}

func (l *chaosLog) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
}

// run runs the scenario and returns its report; an error is a failure to run it (not an
// invariant that failed: those are in the report).
func (sc *scenario) run(ctx context.Context) (rep *report, err error) {
	began := time.Now()
	if err := os.MkdirAll(sc.dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(sc.seed, uint64(len(sc.name))))
	rcv, err := newReceiver(sc.seed, sc.failRate)
	if err != nil {
		return nil, err
	}
	defer rcv.close()

	addr, err := svcbin.FreeAddr()
	if err != nil {
		return nil, err
	}
	common := []string{"--lease", sc.lease.String(), "--allow-private-targets"}
	sup := &supervisor{}
	clog := &chaosLog{}
	sup.onOwnExit = func(p *proc, why string) {
		clog.mu.Lock()
		clog.ownExits = append(clog.ownExits, why)
		clog.mu.Unlock()
		fmt.Fprintf(sc.out, "  FINDING: %s (restarted)\n", why)
	}
	var dropDB func() error // the PostgreSQL scenario's database, dropped once its processes stopped
	defer func() {
		serr := sup.stopAll()
		if dropDB != nil {
			serr = errors.Join(serr, dropDB())
		}
		if serr == nil {
			return
		}
		if rep != nil {
			rep.fail("at the end: %v", serr)
		} else {
			err = errors.Join(err, serr)
		}
	}()

	var victims []*proc // what the chaos kills
	// withOps adds --ops-addr on a free port to a process's arguments.
	withOps := func(p *proc) (*proc, error) {
		a, err := svcbin.FreeAddr()
		if err != nil {
			return nil, err
		}
		p.ops, p.args = a, append(p.args, "--ops-addr", a)
		return p, nil
	}
	switch sc.name {
	case "postgres":
		name := fmt.Sprintf("chaos_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
		dsn, drop, err := createDatabase(ctx, sc.pgBase, name)
		if err != nil {
			return nil, err
		}
		dropDB = drop
		mctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, merr := exec.CommandContext(mctx, sc.bin, "migrate", "--db", dsn).CombinedOutput()
		cancel()
		if merr != nil {
			return nil, fmt.Errorf("svcflow migrate: %v: %s", merr, out)
		}
		fmt.Fprintf(sc.out, "  database %s migrated; 1 runtime, %d workers, --lease %s\n", name, sc.workers, sc.lease)
		rt := &proc{name: "runtime", bin: sc.bin, logPath: filepath.Join(sc.dir, "runtime.log"), health: "http://" + addr + "/health",
			args: append([]string{"runtime", "--db", dsn, "--runtime-addr", addr}, common...)}
		if err := sup.add(ctx, rt); err != nil {
			return nil, err
		}
		for i := range sc.workers {
			w, err := withOps(&proc{name: fmt.Sprintf("worker-%d", i+1), bin: sc.bin, logPath: filepath.Join(sc.dir, fmt.Sprintf("worker-%d.log", i+1)),
				args: append([]string{"worker", "--db", dsn, "--workers", "4"}, common...)})
			if err != nil {
				return nil, err
			}
			if err := sup.add(ctx, w); err != nil {
				return nil, err
			}
			victims = append(victims, w)
		}
	case "sqlite":
		dsn := "sqlite:" + filepath.Join(sc.dir, "chaos.db")
		srv, err := withOps(&proc{name: "serve", bin: sc.bin, logPath: filepath.Join(sc.dir, "serve.log"), health: "http://" + addr + "/health",
			args: append([]string{"serve", "--db", dsn, "--runtime-addr", addr, "--gateway-addr", "", "--workers", "4"}, common...)})
		if err != nil {
			return nil, err
		}
		if err := sup.add(ctx, srv); err != nil {
			return nil, err
		}
		fmt.Fprintf(sc.out, "  svcflow serve on %s, --lease %s\n", dsn, sc.lease)
		victims = append(victims, srv)
	default:
		return nil, fmt.Errorf("unknown scenario %q", sc.name)
	}

	c := newClient("http://" + addr)
	wfs, hooks, err := setup(ctx, c, rcv.base)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	plans := makePlans(sc.runs, rng)
	outcomes := make([]*outcome, len(plans))
	for i := range outcomes {
		outcomes[i] = &outcome{}
	}
	d := &driver{c: c, wfs: wfs, chaosOver: make(chan struct{}), rng: rand.New(rand.NewPCG(sc.seed, 7))}

	// The workload: runs started over the first 60% of the chaos, each followed by its own
	// goroutine. Every wait is bounded by runCtx.
	runCtx, cancelRuns := context.WithTimeout(ctx, sc.chaosFor+3*sc.settle)
	defer cancelRuns()
	var wg sync.WaitGroup
	span := sc.chaosFor * 6 / 10
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := outcomes[i]
			select {
			case <-runCtx.Done():
				o.set(func(o *outcome) { o.err = runCtx.Err() })
				return
			case <-time.After(span * time.Duration(i) / time.Duration(len(plans))):
			}
			if err := d.execute(runCtx, p, o); err != nil {
				o.set(func(o *outcome) { o.err = err })
				return
			}
			if err := d.follow(runCtx, p, o); err != nil {
				o.set(func(o *outcome) { o.err = err })
			}
		}()
	}

	// The chaos: a victim killed every killMin-killMax and started again; PostgreSQL
	// restarted once halfway.
	chaosStart := time.Now()
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		pgAt := chaosStart.Add(sc.chaosFor / 2)
		restarted := !sc.pgRestart
		for {
			pause := sc.killMin + time.Duration(rng.Int64N(int64(sc.killMax-sc.killMin)+1))
			if time.Since(chaosStart)+pause >= sc.chaosFor {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			if !restarted && time.Now().After(pgAt) {
				restarted = true
				took, err := restartPostgres(ctx)
				clog.mu.Lock()
				if err == nil {
					clog.pgRestarts++
					clog.pgDown = took
				}
				clog.mu.Unlock()
				if err != nil {
					clog.note("PostgreSQL restart failed: %v", err)
					fmt.Fprintf(sc.out, "  PostgreSQL restart FAILED: %v\n", err)
				} else {
					fmt.Fprintf(sc.out, "  %5.1fs PostgreSQL restarted (pg_ctlcluster took %s)\n", time.Since(chaosStart).Seconds(), took.Round(time.Millisecond))
				}
				continue
			}
			v := victims[rng.IntN(len(victims))]
			if !v.running() {
				continue // exited by itself: the supervisor is starting it again
			}
			// Busy: the victim committed work in the 300 ms before its kill, so the kill
			// most likely cut some in flight.
			before, ok1 := v.workDone(ctx)
			time.Sleep(300 * time.Millisecond)
			after, ok2 := v.workDone(ctx)
			if err := sup.kill(v); err != nil {
				clog.note("kill %s: %v", v.name, err)
				continue
			}
			clog.mu.Lock()
			clog.kills++
			if ok1 && ok2 && after > before {
				clog.busyKills++
			}
			clog.mu.Unlock()
			// A worker comes back after a moment (the others take its runs after the
			// lease); serve, the only process, at once.
			if v.health == "" {
				time.Sleep(500 * time.Millisecond)
			}
			sctx, cancel := context.WithTimeout(ctx, startTimeout)
			if err := sup.start(sctx, v); err != nil {
				clog.note("restart %s after SIGKILL: %v", v.name, err)
				fmt.Fprintf(sc.out, "  restart of %s after SIGKILL failed: %v\n", v.name, err)
			}
			cancel()
		}
	}()
	<-chaosDone
	close(d.chaosOver)
	chaosTook := time.Since(chaosStart)
	fmt.Fprintf(sc.out, "  chaos over after %.1fs: %d kills, %d PostgreSQL restarts\n", chaosTook.Seconds(), clog.kills, clog.pgRestarts)

	// Every process must be up again (the supervisor restarts one that exited by itself).
	for _, p := range sup.procs {
		if !p.running() {
			sctx, cancel := context.WithTimeout(ctx, startTimeout)
			if err := sup.start(sctx, p); err != nil {
				cancel()
				return nil, fmt.Errorf("%s is down after the chaos and does not start: %w", p.name, err)
			}
			cancel()
		}
	}

	// Settle: every driver returns when its run ended or (late plans) paused.
	settled := make(chan struct{})
	go func() { wg.Wait(); close(settled) }()
	select {
	case <-settled:
	case <-time.After(sc.settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rep = &report{scenario: sc.name, runs: len(plans), chaosFor: chaosTook}
	rep.afterChaos = countStatuses(outcomes)
	if err := rep.checkSettled(runCtx, d, plans, outcomes); err != nil {
		return rep, err
	}

	// Decide what was left paused and wait for every run to end.
	for i, p := range plans {
		o := outcomes[i]
		if !o.get().leftPaused || o.get().err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.follow(runCtx, p, o); err != nil {
				o.set(func(o *outcome) { o.err = err })
			}
		}()
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(sc.settle):
		rep.fail("runs still not ended %s after the pauses were decided", sc.settle)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rep.final, rep.executes = countStatuses(outcomes), countExecutes(outcomes)
	rep.checkRuns(plans, outcomes)

	if err := rep.checkRows(runCtx, c, plans, outcomes); err != nil {
		return rep, err
	}
	if err := rep.checkDeliveries(runCtx, c, rcv, hooks, plans, outcomes, sc.settle); err != nil {
		return rep, err
	}
	clog.mu.Lock()
	rep.kills, rep.busyKills, rep.pgRestarts, rep.pgDown = clog.kills, clog.busyKills, clog.pgRestarts, clog.pgDown
	rep.ownExits = append(rep.ownExits, clog.ownExits...)
	rep.notes = append(rep.notes, clog.notes...)
	clog.mu.Unlock()
	for _, p := range sup.procs {
		rep.starts = append(rep.starts, fmt.Sprintf("%s %d", p.name, p.starts))
	}
	rep.took = time.Since(began)
	return rep, nil
}
