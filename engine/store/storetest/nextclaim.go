package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testJobClaimNext: the commit that ends a job's run claims the freed slot's next job in
// its statement (storage.NextClaim) where the store can (PostgreSQL), as ClaimJobs would:
// organizations in turn, oldest first within one, a lease no other claim takes; a commit
// that fails its lease check, or wants nothing, leases nothing. A store that cannot leaves
// the NextClaim untried and the jobs to ClaimJobs.
func testJobClaimNext(t *testing.T, b *bundle) {
	const orgC = "org_c"
	pg := false
	if d, ok := b.s.(interface{ Dialect() string }); ok {
		pg = d.Dialect() == "postgres"
	}
	// runJob enqueues the job of a new run of org, due at runAt.
	runJob := func(org string, runAt time.Time) *svctype.Job {
		r := b.run(t, org, "wf", time.Time{})
		j := &svctype.Job{OrgID: org, Kind: svctype.JobRunStep, RunID: r.ID, RunAt: runAt}
		require.NoError(t, b.s.EnqueueJob(b.ctx, j))
		return j
	}
	// end commits the end of job's run with a claim of want jobs.
	end := func(job *svctype.Job, want int) (*storage.NextClaim, error) {
		run, err := b.s.GetRun(b.ctx, job.OrgID, job.RunID)
		require.NoError(t, err)
		at := time.Now().UTC()
		run.Status, run.FinishedAt, run.UpdatedAt = svctype.RunCompleted, &at, at
		nc := &storage.NextClaim{Want: func() int { return want }, Lease: time.Minute}
		sc := &storage.StepCommit{OrgID: job.OrgID, Run: run, Complete: job, Next: nc}
		return nc, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
			return storage.CommitSteps(ctx, tx, []*storage.StepCommit{sc})
		})
	}
	// drain claims one job, then ends each job's run claiming the next, until none is
	// left; it returns the jobs in the order they were leased.
	drain := func() []svctype.Job {
		first, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, first, 1)
		order := []svctype.Job{first[0]}
		for {
			held := order[len(order)-1]
			nc, err := end(&held, 1)
			require.NoError(t, err)
			if !pg {
				require.False(t, nc.Tried, "this store claims apart")
				require.Empty(t, nc.Jobs)
				next, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
				require.NoError(t, err)
				nc.Jobs = next
			} else {
				require.True(t, nc.Tried)
			}
			if len(nc.Jobs) == 0 {
				return order
			}
			require.Len(t, nc.Jobs, 1, "what was wanted, no more")
			j := nc.Jobs[0]
			require.NotEmpty(t, j.LeaseToken)
			require.WithinDuration(t, time.Now().Add(time.Minute), *j.LeaseUntil, 30*time.Second)
			require.Equal(t, 1, j.Attempts)
			require.EqualValues(t, 1, j.Claims)
			order = append(order, j)
		}
	}
	ids := func(jobs []svctype.Job) []int64 {
		var out []int64
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}

	// Many organizations: one's backlog does not hold back the others' jobs.
	base := time.Now().Add(-time.Hour)
	var backlog []int64
	for i := range 6 {
		backlog = append(backlog, runJob(orgA, base.Add(time.Duration(i)*time.Second)).ID)
	}
	lateB := runJob(orgB, time.Now().Add(-2*time.Second))
	lateC := runJob(orgC, time.Now().Add(-time.Second))
	order := drain()
	require.Len(t, order, 8, "every job, each once")
	for _, late := range []*svctype.Job{lateB, lateC} {
		pos := slices.IndexFunc(order, func(j svctype.Job) bool { return j.ID == late.ID })
		require.LessOrEqual(t, pos, 2, "%s's job within one claim per other organization: %v", late.OrgID, order)
	}
	var gotA []svctype.Job
	for _, j := range order {
		if j.OrgID == orgA {
			gotA = append(gotA, j)
		}
	}
	require.Equal(t, backlog, ids(gotA), "within an organization, oldest first")
	require.Zero(t, b.countJobs(t))

	// One organization: oldest first.
	var one []int64
	for i := range 4 {
		one = append(one, runJob(orgB, base.Add(time.Duration(i)*time.Second)).ID)
	}
	require.Equal(t, one, ids(drain()))

	// A commit that fails its lease check claims nothing: rolled back with it. One that
	// holds its lease claims the waiting job, which no other claim then takes.
	held := runJob(orgA, base)
	waiting := runJob(orgB, base.Add(time.Second))
	got, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []int64{held.ID}, ids(got))
	lost := got[0]
	lost.LeaseToken = "not-the-token"
	nc, err := end(&lost, 1)
	require.ErrorIs(t, err, storage.ErrLeaseLost)
	require.False(t, nc.Tried)
	require.Empty(t, nc.Jobs)
	nc, err = end(&got[0], 1)
	require.NoError(t, err)
	left, err := b.s.ClaimJobs(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	if pg {
		require.True(t, nc.Tried)
		require.Equal(t, []int64{waiting.ID}, ids(nc.Jobs), "the lost lease's commit left it to any claim")
		require.Empty(t, left, "a job leased by a commit is no other claim's")
		got = nc.Jobs
	} else {
		require.Equal(t, []int64{waiting.ID}, ids(left))
		got = left
	}

	// Wanting nothing (a worker draining) claims nothing.
	waiting = runJob(orgA, base)
	nc, err = end(&got[0], 0)
	require.NoError(t, err)
	require.False(t, nc.Tried)
	require.Empty(t, nc.Jobs)
	left, err = b.s.ClaimJobs(b.ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []int64{waiting.ID}, ids(left), "the waiting job was left to any claim")
}
