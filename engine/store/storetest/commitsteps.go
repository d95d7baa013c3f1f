package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testCommitSteps writes the commits of three steps of one run through storage.CommitSteps
// (one statement on PostgreSQL) and one CommitStepByCalls each, and checks that both leave
// the same rows: every step record, the later value of a key two commits write, the run as
// the last leaves it, every event in order, numbered in order; that the first commit's
// renewal keeps the lease, or the last's completion deletes the job; and that a lost lease
// or another organization's run fails the whole, which rolled back leaves nothing.
func testCommitSteps(t *testing.T, b *bundle) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	commits := func(org string, r *svctype.Run, job *svctype.Job, final bool) ([]*storage.StepCommit, *svctype.Run) {
		run := *r
		run.OrgID = org
		var cs []*storage.StepCommit
		for i := range 3 {
			sc := &storage.StepCommit{OrgID: org, Run: &run,
				Context: []storage.ContextPut{{Key: "k", Value: json.RawMessage(fmt.Sprintf(`{"from":%d}`, i))}},
				Step: &svctype.StepRecord{RunID: r.ID, Index: i, Type: "custom-table", Status: svctype.StepCompleted,
					Output: json.RawMessage(`{"a":1}`), StartedAt: &at, FinishedAt: &at},
				Events: []svctype.Event{
					{OrgID: org, RunID: r.ID, Event: "step.started", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))},
					{OrgID: org, RunID: r.ID, Event: "step.completed", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))},
				},
			}
			if i == 1 {
				sc.Context = append(sc.Context, storage.ContextPut{Key: "only1", Value: json.RawMessage(`[1]`)})
			}
			cs = append(cs, sc)
		}
		if job != nil {
			cs[0].Renew, cs[0].Lease = job, time.Hour
		}
		run.Cursor, run.UpdatedAt = svctype.Cursor{Step: 3}, at
		if final {
			run.Status, run.FinishedAt = svctype.RunCompleted, &at
			cs[2].Events = append(cs[2].Events, svctype.Event{OrgID: org, RunID: r.ID, Event: "workflow_run_completed", Payload: json.RawMessage(`{}`)})
			cs[2].Complete = job
		}
		return cs, &run
	}
	byCalls := func(ctx context.Context, tx storage.Tx, cs []*storage.StepCommit) error {
		for _, c := range cs {
			if err := storage.CommitStepByCalls(ctx, tx, c); err != nil {
				return err
			}
		}
		return nil
	}
	read, claim := b.readCommitted, b.claimRunJob

	for _, final := range []bool{false, true} {
		var results []committedRun
		for _, way := range []func(context.Context, storage.Tx, []*storage.StepCommit) error{storage.CommitSteps, byCalls} {
			r := b.run(t, orgA, "wf", time.Time{})
			job := claim(t, r)
			cs, _ := commits(orgA, r, job, final)
			require.NoError(t, b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error { return way(ctx, tx, cs) }))
			var last int64
			for _, c := range cs {
				for _, e := range c.Events {
					require.Greater(t, e.Seq, last, "every commit's events numbered, in order")
					require.NotEmpty(t, e.DeliveryID)
					last = e.Seq
				}
			}
			results = append(results, read(t, r))
			b.afterCommit(t, job, final)
		}
		require.Equal(t, results[1], results[0], "one statement and the calls leave the same rows (final %v)", final)
		got := results[0]
		require.Equal(t, map[string]string{"k": `{"from":2}`, "only1": `[1]`}, got.Context, "the later value of a key written twice")
		require.Equal(t, []stepSeen{{0, svctype.StepCompleted}, {1, svctype.StepCompleted}, {2, svctype.StepCompleted}}, got.Steps)
		require.Equal(t, svctype.Cursor{Step: 3}, got.Cursor)
		want := []string{}
		for i := range 3 {
			want = append(want, fmt.Sprintf(`step.started {"i":%d}`, i), fmt.Sprintf(`step.completed {"i":%d}`, i))
		}
		if final {
			require.Equal(t, svctype.RunCompleted, got.Status)
			want = append(want, "workflow_run_completed {}")
		}
		require.Equal(t, want, got.Events)
	}

	// A lost lease, renewed by the first commit or completed by the last: the call's error,
	// and nothing of any commit written.
	r := b.run(t, orgA, "wf", time.Time{})
	for _, final := range []bool{true, false} {
		job := claim(t, r)
		lost := *job
		lost.LeaseToken = "not-the-token"
		cs, _ := commits(orgA, r, &lost, final)
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error { return storage.CommitSteps(ctx, tx, cs) })
		require.ErrorIs(t, err, storage.ErrLeaseLost, "final %v", final)
		after := read(t, r)
		require.Equal(t, svctype.RunRunning, after.Status, "rolled back")
		require.Empty(t, after.Context)
		require.Empty(t, after.Steps)
		require.Empty(t, after.Events)
		require.NoError(t, b.s.CompleteJob(b.ctx, job), "the job still holds its own lease")
	}

	// Another organization's run: not found, and nothing written.
	cs, _ := commits(orgB, r, nil, false)
	err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error { return storage.CommitSteps(ctx, tx, cs) })
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.Empty(t, read(t, r).Events)
	require.Empty(t, read(t, r).Steps)
}
