package store

import (
	"context"
	"database/sql"
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
