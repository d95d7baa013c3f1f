package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestBeginGoesWithTheFirstStatement: on PostgreSQL a transaction's BEGIN goes to the
// server with its first statement when that is one of the store's prepared ones (one round
// trip), before it otherwise, and not at all when the transaction sends nothing; in every
// case the transaction is one: a later failure, or fn's error, leaves nothing of the first
// statement, and a failed first statement leaves the connection usable.
func TestBeginGoesWithTheFirstStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const org = "org-a"
	setup := func(t *testing.T) (*store.Store, *store.StatementCounter, *svctype.Run) {
		var c store.StatementCounter
		s := store.OpenCountingPostgres(t, store.NewTestDSN(t, "postgres"), &c)
		run := &svctype.Run{ID: "run-1", OrgID: org, WorkflowID: "wf", WorkflowVersion: 1,
			Status: svctype.RunRunning, Input: json.RawMessage(`{}`), Definition: json.RawMessage(`{}`)}
		require.NoError(t, s.CreateRun(ctx, run, time.Time{}))
		c.Take()
		return s, &c, run
	}
	// commit is a step commit that moves the run's cursor to step and writes key = value.
	commit := func(run *svctype.Run, step int, key, value string) *storage.StepCommit {
		r := *run
		r.Cursor = svctype.Cursor{Step: step}
		return &storage.StepCommit{OrgID: org, Run: &r,
			Context: []storage.ContextPut{{Key: key, Value: json.RawMessage(value)}}}
	}
	// kinds is how many statements of each verb counts holds, "pipelined BEGIN" apart.
	kinds := func(counts map[string]int) map[string]int {
		out := map[string]int{}
		for k, n := range counts {
			verb, _, _ := strings.Cut(strings.TrimPrefix(k, store.PipelinedPrefix), " ")
			if strings.HasPrefix(k, store.PipelinedPrefix) {
				verb = store.PipelinedPrefix + verb
			}
			out[verb] += n
		}
		return out
	}
	cursorAndKey := func(t *testing.T, s *store.Store, key string) (int, bool) {
		got, err := s.GetRun(ctx, org, "run-1")
		require.NoError(t, err)
		vals, err := s.GetContext(ctx, org, "run-1", key)
		require.NoError(t, err)
		_, ok := vals[key]
		return got.Cursor.Step, ok
	}

	t.Run("one round trip for BEGIN and a step commit", func(t *testing.T) {
		t.Parallel()
		s, c, run := setup(t)
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			return storage.CommitStep(ctx, tx, commit(run, 1, "k", `1`))
		}))
		counts := c.Take()
		require.Equal(t, map[string]int{"pipelined BEGIN": 1, "WITH": 1, "COMMIT": 1}, kinds(counts))
		require.Equal(t, 2, store.RoundTrips(counts))
		step, ok := cursorAndKey(t, s, "k")
		require.Equal(t, 1, step)
		require.True(t, ok)
	})

	t.Run("fn's error after the first statement leaves nothing", func(t *testing.T) {
		t.Parallel()
		s, c, run := setup(t)
		boom := errors.New("boom")
		err := s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := storage.CommitStep(ctx, tx, commit(run, 1, "k", `1`)); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, map[string]int{"pipelined BEGIN": 1, "WITH": 1, "ROLLBACK": 1}, kinds(c.Take()))
		step, ok := cursorAndKey(t, s, "k")
		require.Equal(t, 0, step, "the run as it was")
		require.False(t, ok, "the key not written")
	})

	t.Run("a later statement's failure leaves nothing of the first", func(t *testing.T) {
		t.Parallel()
		s, _, run := setup(t)
		err := s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := storage.CommitStep(ctx, tx, commit(run, 1, "k", `1`)); err != nil {
				return err
			}
			// A NUL in text: PostgreSQL refuses it, and the transaction is aborted.
			return storage.CommitStep(ctx, tx, commit(run, 2, "j\x00", `2`))
		})
		require.Error(t, err)
		step, ok := cursorAndKey(t, s, "k")
		require.Equal(t, 0, step)
		require.False(t, ok)
	})

	t.Run("a failed first statement leaves the connection usable", func(t *testing.T) {
		t.Parallel()
		s, _, run := setup(t)
		for range 3 { // more tries than the pool has idle connections in use here
			err := s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
				return storage.CommitStep(ctx, tx, commit(run, 1, "j\x00", `1`))
			})
			require.Error(t, err)
		}
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			return storage.CommitStep(ctx, tx, commit(run, 2, "k", `2`))
		}))
		step, ok := cursorAndKey(t, s, "k")
		require.Equal(t, 2, step)
		require.True(t, ok)
	})

	t.Run("another first statement sends BEGIN before it", func(t *testing.T) {
		t.Parallel()
		s, c, run := setup(t)
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			if _, err := tx.GetRun(ctx, org, run.ID); err != nil {
				return err
			}
			return storage.CommitStep(ctx, tx, commit(run, 1, "k", `1`))
		}))
		counts := kinds(c.Take())
		require.Equal(t, 1, counts["BEGIN"])
		require.Zero(t, counts[store.PipelinedPrefix+"BEGIN"])
		require.Equal(t, 1, counts["COMMIT"])
		step, _ := cursorAndKey(t, s, "k")
		require.Equal(t, 1, step)
	})

	t.Run("a Tx used after its end is done", func(t *testing.T) {
		t.Parallel()
		s, _, run := setup(t)
		var kept storage.Tx
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
			kept = tx
			return nil
		}))
		// The connection is back in the pool, maybe in another transaction: nothing is sent.
		err := storage.CommitStep(ctx, kept, commit(run, 1, "k", `1`))
		require.ErrorIs(t, err, sql.ErrTxDone)
		step, ok := cursorAndKey(t, s, "k")
		require.Equal(t, 0, step)
		require.False(t, ok)
	})

	t.Run("a transaction that sends nothing costs nothing", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		require.NoError(t, s.InTx(ctx, func(context.Context, storage.Tx) error { return nil }))
		boom := errors.New("boom")
		require.ErrorIs(t, s.InTx(ctx, func(context.Context, storage.Tx) error { return boom }), boom)
		require.Empty(t, c.Take())
	})
}
