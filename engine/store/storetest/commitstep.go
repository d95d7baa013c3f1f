package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testCommitStep writes a step's commit through storage.CommitStep (one statement on
// PostgreSQL) and through the calls it stands for, and checks that both leave the same
// rows; that a commit whose job lost its lease, or whose run is not the organization's,
// fails with the call's error and, rolled back, leaves nothing; and that events are
// numbered in order.
func testCommitStep(t *testing.T, b *bundle) {
	commit := func(t *testing.T, way func(context.Context, storage.Tx, *storage.StepCommit) error, org string, r *svctype.Run, job *svctype.Job, final bool) error {
		t.Helper()
		finished := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
		return b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
			run := *r
			run.OrgID = org
			run.Cursor = svctype.Cursor{Step: 1}
			run.UpdatedAt = finished
			sc := &storage.StepCommit{
				OrgID: org, Run: &run,
				Context: []storage.ContextPut{
					{Key: "row", Value: json.RawMessage(`{"a":1,"s":"x"}`)},
					{Key: "list", Value: json.RawMessage(`[1,2,3]`)},
				},
				Step: &svctype.StepRecord{RunID: r.ID, Index: 0, Type: "custom-table", Status: svctype.StepCompleted,
					Output: json.RawMessage(`{"a":1}`), StartedAt: &finished, FinishedAt: &finished},
				Events: []svctype.Event{
					{OrgID: org, RunID: r.ID, Event: "step.started", Payload: json.RawMessage(`{"i":0}`)},
					{OrgID: org, RunID: r.ID, Event: "step.completed", Payload: json.RawMessage(`{"i":1}`)},
				},
			}
			if !final && job != nil {
				sc.Renew, sc.Lease = job, time.Hour
			}
			if final {
				run.Status, run.FinishedAt = svctype.RunCompleted, &finished
				sc.Events = append(sc.Events, svctype.Event{OrgID: org, RunID: r.ID, Event: "workflow_run_completed", Payload: json.RawMessage(`{"i":2}`)})
				sc.Complete = job
			}
			if err := way(ctx, tx, sc); err != nil {
				return err
			}
			for i := 1; i < len(sc.Events); i++ {
				if sc.Events[i].Seq <= sc.Events[i-1].Seq || sc.Events[0].Seq == 0 {
					return errors.New("events not numbered in order")
				}
			}
			return nil
		})
	}
	read, claim := b.readCommitted, b.claimRunJob

	// Both ways, a step in the middle and the last one: the same rows.
	for _, final := range []bool{false, true} {
		var results []committedRun
		for _, way := range []func(context.Context, storage.Tx, *storage.StepCommit) error{storage.CommitStep, commitByCalls} {
			r := b.run(t, orgA, "wf", time.Time{})
			job := claim(t, r)
			require.NoError(t, commit(t, way, orgA, r, job, final))
			results = append(results, read(t, r))
			b.afterCommit(t, job, final)
		}
		require.Equal(t, results[1], results[0], "one statement and the calls leave the same rows (final %v)", final)
		want := svctype.RunRunning
		if final {
			want = svctype.RunCompleted
		}
		require.Equal(t, want, results[0].Status)
		require.Equal(t, map[string]string{"row": `{"a":1,"s":"x"}`, "list": `[1,2,3]`}, results[0].Context)
		require.Equal(t, []stepSeen{{0, svctype.StepCompleted}}, results[0].Steps)
	}

	// A lost lease, when the commit completes the job or renews it: the call's error, and
	// nothing written.
	r := b.run(t, orgA, "wf", time.Time{})
	for _, final := range []bool{true, false} {
		job := claim(t, r)
		lost := *job
		lost.LeaseToken = "not-the-token"
		err := commit(t, storage.CommitStep, orgA, r, &lost, final)
		require.ErrorIs(t, err, storage.ErrLeaseLost, "final %v", final)
		after := read(t, r)
		require.Equal(t, svctype.RunRunning, after.Status, "rolled back")
		require.Empty(t, after.Context)
		require.Empty(t, after.Steps)
		require.Empty(t, after.Events)
		require.NoError(t, b.s.CompleteJob(b.ctx, job), "the job still holds its own lease")
	}

	// Another organization's run: not found, and nothing written to either.
	err := commit(t, storage.CommitStep, orgB, r, nil, false)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.Equal(t, svctype.RunRunning, read(t, r).Status)
	require.Empty(t, read(t, r).Events)
}

// commitByCalls is storage.CommitStepByCalls as a CommitStep way.
func commitByCalls(ctx context.Context, tx storage.Tx, c *storage.StepCommit) error {
	return storage.CommitStepByCalls(ctx, tx, c)
}

// testStartRun starts runs through storage.StartRun (one statement on PostgreSQL) and
// through the calls it stands for, and checks that both leave the same rows, that the job
// gets its id and the events their numbers, and that a run id taken already is a conflict
// that, rolled back, leaves nothing.
func testStartRun(t *testing.T, b *bundle) {
	start := func(way func(context.Context, storage.Tx, *storage.RunStart) error, id string) (*svctype.Job, []svctype.Event, error) {
		run := &svctype.Run{
			ID: id, OrgID: orgA, WorkflowID: "wf", WorkflowVersion: 2, Status: svctype.RunRunning,
			Input: json.RawMessage(`{"shown":true}`), Definition: json.RawMessage(`{"actions":[]}`),
		}
		job := &svctype.Job{OrgID: orgA, Kind: svctype.JobRunStep, RunID: id, RunAt: time.Now().Add(-time.Second)}
		evs := []svctype.Event{
			{OrgID: orgA, RunID: id, Event: "workflow_run_started", Payload: json.RawMessage(`{"i":0}`)},
			{OrgID: orgA, RunID: id, Event: "other", Payload: json.RawMessage(`{"i":1}`)},
		}
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
			return way(ctx, tx, &storage.RunStart{Run: run, Input: json.RawMessage(`{"full":[1,2]}`), Job: job, Events: evs})
		})
		return job, evs, err
	}
	type stored struct {
		Run     svctype.Run
		Input   string
		Events  []string
		JobKind string
	}
	read := func(t *testing.T, id string) stored {
		t.Helper()
		r, err := b.s.GetRun(b.ctx, orgA, id)
		require.NoError(t, err)
		r.ID, r.CreatedAt, r.UpdatedAt = "", time.Time{}, time.Time{}
		c, err := b.s.GetContext(b.ctx, orgA, id, "input")
		require.NoError(t, err)
		out := stored{Run: *r, Input: string(c["input"])}
		page, err := b.s.ListRunEvents(b.ctx, orgA, id, svctype.ListOptions{Limit: 10})
		require.NoError(t, err)
		for _, e := range page.Items {
			out.Events = append(out.Events, e.Event+" "+string(e.Payload))
		}
		return out
	}
	var results []stored
	for _, way := range []func(context.Context, storage.Tx, *storage.RunStart) error{storage.StartRun, startByCalls} {
		id := newID()
		job, evs, err := start(way, id)
		require.NoError(t, err)
		require.NotZero(t, job.ID)
		require.NotZero(t, evs[0].Seq)
		require.Less(t, evs[0].Seq, evs[1].Seq)
		results = append(results, read(t, id))
		claimed, err := b.s.ClaimJobs(b.ctx, 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1, "the run's job is due")
		require.Equal(t, job.ID, claimed[0].ID)
		require.Equal(t, id, claimed[0].RunID)
		require.NoError(t, b.s.CompleteJob(b.ctx, &claimed[0]))
	}
	require.Equal(t, results[1], results[0], "one statement and the calls leave the same rows")
	require.JSONEq(t, `{"full":[1,2]}`, results[0].Input)

	// A run id taken already: a conflict, and nothing else written.
	id := newID()
	_, _, err := start(storage.StartRun, id)
	require.NoError(t, err)
	_, _, err = start(storage.StartRun, id)
	require.ErrorIs(t, err, storage.ErrConflict)
	require.Len(t, read(t, id).Events, 2, "the second start's events were rolled back")
	require.Equal(t, 1, b.countJobs(t), "only the first start's job")
}

// startByCalls is storage.StartRunByCalls as a StartRun way.
func startByCalls(ctx context.Context, tx storage.Tx, r *storage.RunStart) error {
	return storage.StartRunByCalls(ctx, tx, r)
}
