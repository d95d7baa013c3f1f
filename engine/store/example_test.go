package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

func Example() {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	w := &svctype.Workflow{OrgID: "acme", Name: "invoices", Definition: json.RawMessage(`{"steps":[]}`)}
	if err := s.CreateWorkflow(ctx, w); err != nil {
		log.Fatal(err)
	}
	got, err := s.GetWorkflow(ctx, "acme", w.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Dialect(), got.Name, got.Version)

	// Another organization does not see it.
	_, err = s.GetWorkflow(ctx, "globex", w.ID)
	fmt.Println(errors.Is(err, storage.ErrNotFound))
	// Output:
	// sqlite invoices 1
	// true
}

// A step commit: the job moves on, the step's output and record land, and the event goes
// to the outbox, all or nothing.
func ExampleStore_InTx() {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	run := &svctype.Run{OrgID: "acme", WorkflowID: "wf", Status: svctype.RunRunning}
	if err := s.CreateRun(ctx, run, time.Time{}); err != nil {
		log.Fatal(err)
	}
	if err := s.EnqueueJob(ctx, &svctype.Job{OrgID: "acme", Kind: svctype.JobRunStep, RunID: run.ID}); err != nil {
		log.Fatal(err)
	}
	jobs, err := s.ClaimJobs(ctx, 10, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	job := jobs[0]

	err = s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.PutContext(ctx, "acme", run.ID, "step_0", json.RawMessage(`{"matched":3}`)); err != nil {
			return err
		}
		if err := tx.PutStep(ctx, "acme", &svctype.StepRecord{RunID: run.ID, Index: 0, Type: "matcher", Status: svctype.StepCompleted}); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, []svctype.Event{{OrgID: "acme", RunID: run.ID, Event: "step_completed"}}); err != nil {
			return err
		}
		return tx.CompleteJob(ctx, &job) // ErrLeaseLost, and nothing lands, if the lease expired
	})
	if err != nil {
		log.Fatal(err)
	}
	runContext, _ := s.GetContext(ctx, "acme", run.ID)
	left, _ := s.ClaimJobs(ctx, 10, time.Minute) // the completed job is gone
	fmt.Println(string(runContext["step_0"]), len(left))
	// Output: {"matched":3} 0
}
