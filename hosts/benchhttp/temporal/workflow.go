package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/workflow"
)

// taskQueue is the worker's task queue.
const taskQueue = "svcflow-bench"

// LedgerInput is a run's input: benchhttp's {"id": "acct-K", "amount": A}.
type LedgerInput struct {
	ID     string
	Amount int
}

// ledger is the activities' store: the accounts (filled with every key before the clock
// starts) and the rows written, in this process's memory under one mutex.
type ledger struct {
	mu       sync.Mutex
	accounts map[string]int
	rows     []ledgerRow
}

type ledgerRow struct{ Run, Text string }

func newLedger(keys int) *ledger {
	l := &ledger{accounts: make(map[string]int, keys)}
	for k := range keys {
		l.accounts[fmt.Sprintf("acct-%d", k)] = 0
	}
	return l
}

// Upsert is the first step: the run's account takes its amount.
func (l *ledger) Upsert(_ context.Context, in LedgerInput) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accounts[in.ID] = in.Amount
	return in.Amount, nil
}

// Read is the second step: the account read back, when the amount is over 10 (the ledger
// workflow's filter); else nothing.
func (l *ledger) Read(_ context.Context, in LedgerInput) (int, error) {
	if in.Amount <= 10 {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accounts[in.ID], nil
}

// Write is the third step: one row keyed by the run.
func (l *ledger) Write(_ context.Context, run, text string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, ledgerRow{Run: run, Text: text})
	return len(l.rows), nil
}

func (l *ledger) rowCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.rows)
}

// stepTimeout bounds each step, as an activity must be.
const stepTimeout = 30 * time.Second

// ledgerWorkflow runs the three steps as local activities (local is true) or as activity
// tasks, and returns the row count after its write.
func ledgerWorkflow(l *ledger, local bool) func(workflow.Context, LedgerInput) (int, error) {
	return func(ctx workflow.Context, in LedgerInput) (int, error) {
		call := func(fn any, args ...any) (int, error) {
			var out int
			var f workflow.Future
			if local {
				ctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: stepTimeout})
				f = workflow.ExecuteLocalActivity(ctx, fn, args...)
			} else {
				ctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: stepTimeout})
				f = workflow.ExecuteActivity(ctx, fn, args...)
			}
			err := f.Get(ctx, &out)
			return out, err
		}
		if _, err := call(l.Upsert, in); err != nil {
			return 0, err
		}
		if _, err := call(l.Read, in); err != nil {
			return 0, err
		}
		run := workflow.GetInfo(ctx).WorkflowExecution.ID
		return call(l.Write, run, fmt.Sprintf("%s moved %d", in.ID, in.Amount))
	}
}
