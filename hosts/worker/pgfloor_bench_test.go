package worker_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
)

// BenchmarkPostgresFloor is what a PostgreSQL backend spends on a run's parts that no
// statement of the store can avoid: a round trip, an empty transaction, and a one-row
// commit with and without waiting for its WAL flush. It reports the serving backend's own
// CPU (utime + stime from /proc, so the server must run on this machine) an operation,
// beside wall time: the floor under BenchmarkRunsPostgresProcesses' pg-cpu-ms/run, which
// docs/performance.md ("The floor") adds up from a run's commits and round trips.
func BenchmarkPostgresFloor(b *testing.B) {
	dsn := os.Getenv(store.PostgresDSNEnv)
	if dsn == "" {
		b.Skipf("%s not set", store.PostgresDSNEnv)
	}
	ctx := context.Background()
	table := "svc_floor_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(b, err)
	b.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
		_ = admin.Close(context.Background())
	})
	_, err = admin.Exec(ctx, "CREATE TABLE "+table+" (id bigserial PRIMARY KEY, org_id text NOT NULL, body text NOT NULL)")
	require.NoError(b, err)
	insert := "INSERT INTO " + table + " (org_id, body) VALUES ($1, $2)"

	cases := []struct {
		name        string
		synchronous string // the connection's synchronous_commit
		op          func(*pgx.Conn) error
	}{
		{"round-trip", "on", func(c *pgx.Conn) error {
			var one int
			return c.QueryRow(ctx, "SELECT 1").Scan(&one)
		}},
		{"begin-commit", "on", func(c *pgx.Conn) error {
			if _, err := c.Exec(ctx, "BEGIN"); err != nil {
				return err
			}
			_, err := c.Exec(ctx, "COMMIT")
			return err
		}},
		{"insert-durable", "on", func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, insert, "org", "a row of a run")
			return err
		}},
		{"insert-unflushed", "off", func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, insert, "org", "a row of a run")
			return err
		}},
		{"begin-insert-commit", "on", func(c *pgx.Conn) error {
			if _, err := c.Exec(ctx, "BEGIN"); err != nil {
				return err
			}
			if _, err := c.Exec(ctx, insert, "org", "a row of a run"); err != nil {
				return err
			}
			_, err := c.Exec(ctx, "COMMIT")
			return err
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := pgx.ParseConfig(dsn)
			require.NoError(b, err)
			cfg.RuntimeParams["synchronous_commit"] = tc.synchronous
			conn, err := pgx.ConnectConfig(ctx, cfg)
			require.NoError(b, err)
			defer func() { _ = conn.Close(context.Background()) }()
			require.NoError(b, tc.op(conn)) // prepared (pgx's statement cache) before the timing
			pid := int(conn.PgConn().PID())
			before, err := procCPU(pid)
			if err != nil {
				b.Skipf("the backend's CPU is not readable here: %v", err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := tc.op(conn); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after, err := procCPU(pid)
			require.NoError(b, err)
			us := float64(after-before) / float64(time.Microsecond) / float64(b.N)
			b.ReportMetric(us, "backend-µs/op")
			b.Logf("%s: backend CPU %.1f µs an operation (%s in %d)", tc.name, us, fmt.Sprint(after-before), b.N)
		})
	}
}
