package core

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Quick steps commit together. After a top-level step has run, the steps that follow it
// and run wholly inside a transaction (a kind with Run and no IO half, no pause, no loop,
// not a read of documents run ahead of its transaction: chainable) are run and committed
// in the same transaction, up to ChainSteps of them and for at most Config.ChainTime
// (default DefaultChainTime) from the unit's start, never longer than the run's slice.
// Each keeps its own step record, events and context values; what changes is one
// transaction, so one commit (on PostgreSQL one WAL flush, on SQLite one turn of the
// writer), for a run of quick steps instead of one each. The unit's step commits (record,
// run, events, context values, job) are written together when its steps have run
// (commitUnit: one statement on PostgreSQL); what its steps write to tables is written as
// they run, so each step sees the table writes of the steps before it.
//
// A crash, a lost lease or a store error rolls the unit back whole: every step in it runs
// again, and none of them made an outside call, so nothing is done twice. When a step
// after the first fails, the unit is run again with its chain stopping before that step
// (stepOnce), so that the steps before it are committed and it fails in a unit of its own,
// as without chains.
const (
	ChainSteps       = 64
	DefaultChainTime = 20 * time.Millisecond
)

// chainedStep is a step committed in the transaction of the step before it.
type chainedStep struct {
	index        int
	c            *commit
	began, ended time.Time
}

// chainBroken is a step of a chain, at index, that did not complete in the unit's
// transaction.
type chainBroken struct {
	index int
	err   error
}

func (b *chainBroken) Error() string { return "a step chained to the one before it: " + b.err.Error() }
func (b *chainBroken) Unwrap() error { return b.err }

// chainSteps runs, in tx, the quick steps that follow the commit first, before step stop,
// while the run is running and the unit has time left, and stages their commits in commits.
// began is the unit's start; each step run is appended to chained.
func (e *Core) chainSteps(ctx context.Context, tx storage.Tx, job *svctype.Job, st *runState, began time.Time, stop int, first *commit, chained *[]chainedStep, commits *[]staged) error {
	def := st.ent.def
	budget := min(e.slice, e.chainTime)
	// The commits before the next step in this unit, and their outputs as it sees them:
	// not in st.vars until the unit has committed. Each output is made a variable once,
	// and only when a step follows to read it (a large one may be decoded for it).
	earlier := []*commit{first}
	pending, added := expr.Vars{}, 0
	for len(*chained) < ChainSteps && st.run.Status == svctype.RunRunning && time.Since(began) < budget {
		i := st.run.Cursor.Step
		if i >= min(stop, len(def.Actions)) {
			return nil
		}
		step := &def.Actions[i]
		ok, err := e.chainable(ctx, tx, st, step)
		if err != nil {
			return &chainBroken{i, err}
		}
		if !ok {
			return nil
		}
		stepBegan := time.Now()
		started := e.now().UTC()
		c := &commit{rec: svctype.StepRecord{RunID: st.run.ID, Index: i, Type: step.Type, Status: svctype.StepCompleted, StartedAt: &started},
			earlier: earlier[:len(earlier):len(earlier)]}
		for ; added < len(earlier); added++ {
			for k, v := range earlier[added].outputs {
				pending[k] = varValue(v, earlier[added].encoded[k])
			}
		}
		vars := e.scope(st, i)
		maps.Copy(vars, pending)
		out, key, status, err := e.execStep(ctx, tx, st, step, i, vars, c)
		if err != nil {
			return &chainBroken{i, fmt.Errorf("step %d (%s): %w", i, step.Type, err)}
		}
		c.complete(status, key, out)
		sc, err := e.stageCommit(ctx, tx, job, st, c, i+1, commits)
		if err != nil {
			return &chainBroken{i, err}
		}
		*commits = append(*commits, staged{index: i, sc: sc})
		*chained = append(*chained, chainedStep{index: i, c: c, began: stepBegan, ended: time.Now()})
		earlier = append(earlier, c)
	}
	return nil
}

// chainable reports whether step runs wholly inside a transaction, whichever way its
// filter goes: it may then commit with the step before it.
//
// A read (a ReadOnly kind) that opens a unit runs ahead of its transaction (workAhead).
// After a step of the unit it runs in the unit's transaction instead, and sees the unit's
// writes as it would have seen them committed, unless its kind takes documents or large
// values whole (DocRows, RawProperties: the matchers): that work grows with documents of up
// to a million rows, and must hold no transaction (on SQLite, the one writer), so such a
// step opens a unit of its own. A read of table rows is bounded by the table's own rules
// (a custom-table read: at most its limit, by an index or on a table of at most
// ScanThreshold rows unless it asks for a scan), as any step's writes are.
func (e *Core) chainable(ctx context.Context, tx storage.Tx, st *runState, step *svctype.Step) (bool, error) {
	for _, s := range []*svctype.Step{step, step.OnFalse} {
		if s == nil {
			continue
		}
		if _, pauses := e.stepPause(s); pauses || s.Type == LoopStep {
			return false, nil
		}
		kind, ok, err := e.lookupKind(ctx, tx, st.run.OrgID, s.Type)
		if err != nil || !ok {
			return false, err
		}
		if kind.IO != nil || kind.Run == nil || readsDocuments(kind) && kind.ReadOnly != nil && kind.ReadOnly(s.Properties) {
			// An outside call is made before its transaction, and a read of documents
			// runs ahead of it (workAhead): either opens a unit of its own.
			return false, nil
		}
	}
	return true, nil
}

// readsDocuments reports whether a kind takes documents or large values whole: its work
// grows with them (the matchers' legs).
func readsDocuments(k svctype.StepKind) bool { return k.DocRows > 0 || len(k.RawProperties) > 0 }
