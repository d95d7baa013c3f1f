package worker_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for pgBackendCPU
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
)

// What a run costs PostgreSQL, for BenchmarkRunsPostgresProcesses: the statements its
// processes send (counted on the client side, by pgx's tracer in each process:
// pg_stat_statements needs shared_preload_libraries, which a shared test server may not
// load, and it cannot tell one test schema's statements from another's) and the CPU time of
// the backends serving them, read from /proc when the server runs on this machine.

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on Linux.
const clockTicks = 100

// withAppName is dsn with application_name set, so that pg_stat_activity names the
// backends of every connection opened with it.
func withAppName(tb testing.TB, dsn, app string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	require.NoError(tb, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgBackendCPU reads the CPU time (utime + stime) of the PostgreSQL backends whose
// application_name starts with app: the connections of the benchmark and of its worker
// processes, LISTEN included (a claimer's is named app + " claimer ..."), none of another
// test's. A backend that ends between two readings is
// missed: the benchmark's pools keep theirs open.
type pgBackendCPU struct {
	admin *sql.DB
	app   string
	start map[int]time.Duration
}

// startBackendCPU takes the first reading; ok is false when the server's processes are not
// readable here (another machine) or the server cannot be asked.
func startBackendCPU(tb testing.TB, app string) (*pgBackendCPU, bool) {
	tb.Helper()
	admin, err := sql.Open("pgx", os.Getenv(store.PostgresDSNEnv))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = admin.Close() })
	p := &pgBackendCPU{admin: admin, app: app}
	start, err := p.read()
	if err != nil || len(start) == 0 {
		tb.Logf("PostgreSQL's CPU not measured: %v (%d backends readable)", err, len(start))
		return nil, false
	}
	p.start = start
	return p, true
}

// since is the CPU the backends used since the first reading; a backend opened since
// counts whole.
func (p *pgBackendCPU) since() (time.Duration, error) {
	now, err := p.read()
	if err != nil {
		return 0, err
	}
	var d time.Duration
	for pid, t := range now {
		d += t - p.start[pid]
	}
	return d, nil
}

func (p *pgBackendCPU) read() (map[int]time.Duration, error) {
	rows, err := p.admin.QueryContext(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1 || '%'`, p.app)
	if err != nil {
		return nil, err
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			_ = rows.Close()
			return nil, err
		}
		pids = append(pids, pid)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	cpu := map[int]time.Duration{}
	for _, pid := range pids {
		if t, err := procCPU(pid); err == nil {
			cpu[pid] = t
		}
	}
	return cpu, nil
}

// procCPU is utime + stime of a process, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: state (field 3) first, utime and
	// stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// addCounts adds the counts of from to into.
func addCounts(into, from map[string]int) {
	for k, v := range from {
		into[k] += v
	}
}

// countsTotal sums counts.
func countsTotal(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// countsByKind lists counts per run, largest first, one line each, with the first text
// counted under each kind when example gives one (cut to width characters).
func countsByKind(counts map[string]int, runs int, example func(string) string, width int) string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(x, y string) int {
		if counts[x] != counts[y] {
			return counts[y] - counts[x]
		}
		return strings.Compare(x, y)
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %6.2f/run  %s", float64(counts[k])/float64(runs), k)
		if example != nil {
			if ex := strings.Join(strings.Fields(example(k)), " "); ex != "" {
				if len(ex) > width {
					ex = ex[:width] + "..."
				}
				fmt.Fprintf(&b, "\n              %s", ex)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
