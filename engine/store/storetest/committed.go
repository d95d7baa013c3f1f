package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/svctype"
)

// committedRun is what step commits left of a run in the store: what testCommitStep and
// testCommitSteps compare between a commit's one statement and the calls it stands for.
type committedRun struct {
	Status  svctype.RunStatus
	Cursor  svctype.Cursor
	Context map[string]string // each value as normalised JSON
	Steps   []stepSeen
	Events  []string // "event payload", the payload as normalised JSON
}

// stepSeen is a step record's index and status.
type stepSeen struct {
	Index  int
	Status svctype.StepStatus
}

// readCommitted reads what the store holds of r (organization orgA).
func (b *bundle) readCommitted(t *testing.T, r *svctype.Run) committedRun {
	t.Helper()
	got, err := b.s.GetRun(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	out := committedRun{Status: got.Status, Cursor: got.Cursor, Context: map[string]string{}}
	vals, err := b.s.GetContext(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	for k, v := range vals {
		out.Context[k] = normalJSON(t, v)
	}
	steps, err := b.s.ListSteps(b.ctx, orgA, r.ID)
	require.NoError(t, err)
	for _, s := range steps {
		out.Steps = append(out.Steps, stepSeen{s.Index, s.Status})
	}
	page, err := b.s.ListRunEvents(b.ctx, orgA, r.ID, svctype.ListOptions{Limit: 50})
	require.NoError(t, err)
	for _, e := range page.Items {
		out.Events = append(out.Events, e.Event+" "+normalJSON(t, e.Payload))
	}
	return out
}

// normalJSON is raw decoded and encoded again: stored JSON compared whatever its spacing.
func normalJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var x any
	require.NoError(t, json.Unmarshal(raw, &x), string(raw))
	norm, err := json.Marshal(x)
	require.NoError(t, err)
	return string(norm)
}

// claimRunJob enqueues a run-step job for r (organization orgA) and claims it.
func (b *bundle) claimRunJob(t *testing.T, r *svctype.Run) *svctype.Job {
	t.Helper()
	j := &svctype.Job{OrgID: orgA, Kind: svctype.JobRunStep, RunID: r.ID, RunAt: time.Now().Add(-time.Second), Payload: json.RawMessage(`{}`)}
	require.NoError(t, b.s.EnqueueJob(b.ctx, j))
	claimed, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	return &claimed[0]
}

// afterCommit checks what a step commit left of the run's job: none when the step was the
// run's last (final), else the job still leased for an hour, which no claim takes and its
// own token completes.
func (b *bundle) afterCommit(t *testing.T, job *svctype.Job, final bool) {
	t.Helper()
	if final {
		require.Zero(t, b.countJobs(t), "the run's job is done")
		return
	}
	require.WithinDuration(t, time.Now().Add(time.Hour), *job.LeaseUntil, time.Minute, "the lease kept for an hour")
	again, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again, "the renewed lease holds")
	require.NoError(t, b.s.CompleteJob(b.ctx, job)) // still held by its token
}
