package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcflow/svcflow/internal/svcbin"
	"github.com/svcflow/svcflow/internal/testlog"
)

// TestChaosSmall keeps the chaos program from rotting: a small scenario (30 runs, kills
// every 1-2 s for 8 s) on SQLite, and on PostgreSQL when SVC_TEST_POSTGRES_DSN is set, with
// the same checks as `make chaos`. It never restarts the machine's PostgreSQL: other tests
// use it at the same time; that belongs to `make chaos` alone.
func TestChaosSmall(t *testing.T) {
	t.Parallel()
	// Not deferred: the parallel subtests run after this function returns.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	testlog.Gather(t, dir) // the svcflow processes' logs
	bin, err := svcbin.Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	scenarios := []string{"sqlite"}
	if os.Getenv("SVC_TEST_POSTGRES_DSN") != "" {
		scenarios = append(scenarios, "postgres")
	} else {
		t.Log("SVC_TEST_POSTGRES_DSN is unset: the postgres scenario is skipped")
	}
	for _, name := range scenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			sc := &scenario{name: name, bin: bin, dir: filepath.Join(dir, name), out: &out,
				runs: 30, chaosFor: 8 * time.Second, killMin: time.Second, killMax: 2 * time.Second,
				lease: 2 * time.Second, workers: 3, pgRestart: false, pgBase: postgresBase(""),
				seed: uint64(time.Now().UnixNano()), failRate: 0.2, settle: 30 * time.Second}
			rep, err := sc.run(ctx)
			if rep != nil {
				rep.print(&out)
			}
			t.Log("\n" + out.String())
			if err != nil {
				t.Fatal(err)
			}
			if !rep.ok() {
				t.Fatalf("%d invariants failed (seed %d)", len(rep.failures), sc.seed)
			}
			if rep.kills < 2 {
				t.Fatalf("%d kills: the chaos did not happen", rep.kills)
			}
		})
	}
}
