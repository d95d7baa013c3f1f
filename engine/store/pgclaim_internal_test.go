package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestLastTurn: the organization a PostgreSQL claim took its last job from, which the next
// claim starts after, is the one a round robin over the claimed jobs ends on.
func TestLastTurn(t *testing.T) {
	t.Parallel()
	jobs := func(orgs ...string) []jobModel {
		var ms []jobModel
		for _, o := range orgs {
			ms = append(ms, jobModel{OrgID: o})
		}
		return ms
	}
	for _, c := range []struct {
		name    string
		claimed []jobModel
		lastOrg string
		want    string
	}{
		{"from the start: a b c a b", jobs("a", "a", "b", "b", "c"), "", "b"},
		{"after b: c a", jobs("a", "c"), "b", "a"},
		{"after b: c a c", jobs("c", "a", "c"), "b", "c"},
		{"after c, one organization: a a", jobs("a", "a"), "c", "a"},
		{"after a: b c a", jobs("a", "b", "c"), "a", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, lastTurn(c.claimed, c.lastOrg))
		})
	}
}

// TestClaimsCommitWithoutWaitingForTheirFlush: the claims' pool runs with
// synchronous_commit off, set when it connects, and every other connection of the Store
// (its pool, the connections made from its configuration, such as LISTEN's) keeps the
// server's default, on: only a lease may be lost in a crash, never a run's data.
func TestClaimsCommitWithoutWaitingForTheirFlush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := OpenTest(t, dialectPostgres)
	show := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) string {
		var v string
		require.NoError(t, q.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v))
		return v
	}
	// Both of the claims' pool's connections at once, so that neither answer is the other's.
	c1, err := s.claims.Conn(ctx)
	require.NoError(t, err)
	c2, err := s.claims.Conn(ctx)
	require.NoError(t, err)
	require.Equal(t, "off", show(c1), "the claims' pool")
	require.Equal(t, "off", show(c2), "the claims' pool, its second connection")
	require.NoError(t, c1.Close()) // back to the pool, for the claims below
	require.NoError(t, c2.Close())

	for i := range postgresPoolConns / 2 {
		c, err := s.write.DB.Conn(ctx)
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		require.Equal(t, "on", show(c), "the store's pool, connection %d", i)
	}
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig.Copy())
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var v string
	require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v))
	require.Equal(t, "on", v, "a connection made from the store's configuration (LISTEN's)")

	// The claims still lease: a job enqueued is claimed once.
	require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		return tx.EnqueueJob(ctx, &svctype.Job{OrgID: "org-a", Kind: svctype.JobRunStep, RunID: "r1", RunAt: s.now()})
	}))
	jobs, err := s.ClaimJobs(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.NotEmpty(t, jobs[0].LeaseToken)
	again, err := s.ClaimJobs(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again)
}

// TestClaimLocksByTheKey: a claim locks the jobs it picked through the primary key, one
// by one, whatever plan its prepared statement keeps. A generic plan is made once, with
// the sizes the tables had then: made while the queue was short, as a worker's first
// claims make it, and used after a burst queued thousands, the lock step joined the queue
// to the picked jobs by a hash over a sequential scan of every queued job, at every claim.
func TestClaimLocksByTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := OpenTest(t, dialectPostgres)
	cfg := s.pgConfig.Copy()
	cfg.RuntimeParams["plan_cache_mode"] = "force_generic_plan" // the plan a worker's sixth claim may keep
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	enqueue := func(from, to int) {
		_, err := conn.Exec(ctx, `INSERT INTO jobs (org_id, kind, run_id, run_at, payload)
			SELECT 'org-' || (g % 3), $1, 'r' || g, now() - interval '1 hour' + g * interval '1 ms', '{}'
			FROM generate_series($2::int, $3::int) g`, svctype.JobRunStep, from, to)
		require.NoError(t, err)
	}
	claim := func(explain string) string {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }() // the leases are not kept: every claim sees the same queue
		execute := "EXECUTE claim(now(), 2, '', now() + interval '1 minute')"
		if explain == "" {
			_, err := tx.Exec(ctx, execute)
			require.NoError(t, err)
			return ""
		}
		var out string
		require.NoError(t, tx.QueryRow(ctx, explain+execute).Scan(&out))
		return out
	}
	enqueue(1, 6)
	_, err = conn.Exec(ctx, "PREPARE claim AS "+pgClaim)
	require.NoError(t, err)
	claim("") // the generic plan, made on a queue of six jobs
	enqueue(7, 6000)

	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(claim("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ")), &plans))
	require.Len(t, plans, 1)
	root := plans[0].Plan
	require.Equal(t, 2, root.ActualRows, "the claim leases two jobs")
	var locked *planNode
	root.walk(func(n planNode) {
		if n.Subplan == "CTE locked" {
			locked = &n
		}
	})
	require.NotNil(t, locked, "the plan's CTE locked")
	locked.walk(func(n planNode) {
		require.False(t, n.NodeType == "Seq Scan" && n.Relation == "jobs",
			"the lock step must not scan the queue (6,000 jobs): %s", n.NodeType)
	})
	// Picking reads each organization's oldest jobs (a few index pages each); locking reads
	// the two picked through the key. The queue is 75 pages.
	require.Less(t, locked.SharedHit+locked.SharedRead, 50, "pages the lock step reads")
}

// planNode is a node of EXPLAIN's JSON plan, with what TestClaimReadsWhatItTakes reads.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	Subplan    string     `json:"Subplan Name"`
	ActualRows int        `json:"Actual Rows"`
	SharedHit  int        `json:"Shared Hit Blocks"`
	SharedRead int        `json:"Shared Read Blocks"`
	Plans      []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}
