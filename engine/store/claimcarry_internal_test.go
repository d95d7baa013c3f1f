package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestClaimRidesInTheWritersTransaction: on SQLite a claim made while a transaction holds
// the writer is left with that transaction, which runs it before it commits; when that
// transaction rolls back, the claim is run on its own before the writer is let go. Either
// way the jobs ClaimJobs returns are leased in the database under the tokens it returned,
// and the jobs it did not return are not.
func TestClaimRidesInTheWritersTransaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		rollBack bool
	}{{"carrier commits", false}, {"carrier rolls back", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, err := Open(ctx, NewTestDSN(t, dialectSQLite))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.Migrate(ctx))
			due := time.Now().Add(-time.Minute)
			for _, run := range []string{"run-1", "run-2", "run-3"} {
				require.NoError(t, s.EnqueueJob(ctx, &svctype.Job{OrgID: "org-1", Kind: svctype.JobRunStep, RunID: run, RunAt: due}))
			}

			held, release := make(chan storage.Tx), make(chan struct{})
			errTx := make(chan error, 1)
			rollBack := errors.New("rolled back")
			go func() {
				errTx <- s.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
					// A write of the carrier's own, so the claim shares a commit with it.
					if err := tx.PutContext(ctx, "org-1", "run-9", "k", []byte(`1`)); err != nil {
						return err
					}
					held <- tx
					<-release
					if tc.rollBack {
						return rollBack
					}
					return nil
				})
			}()
			tx := <-held
			claimed := make(chan []svctype.Job, 1)
			go func() {
				jobs, err := s.ClaimJobs(ctx, 2, time.Minute)
				if err != nil {
					t.Error(err)
				}
				claimed <- jobs
			}()
			require.NoError(t, WaitBlockedBehind(ctx, s, tx))
			s.writer.mu.Lock()
			left := len(s.carried)
			s.writer.mu.Unlock()
			require.Equal(t, 1, left, "the claim is left with the writer's holder, not queued behind it")
			close(release)
			if tc.rollBack {
				require.ErrorIs(t, <-errTx, rollBack)
			} else {
				require.NoError(t, <-errTx)
			}
			jobs := <-claimed
			require.Len(t, jobs, 2)
			require.Equal(t, []string{"run-1", "run-2"}, []string{jobs[0].RunID, jobs[1].RunID}, "oldest first")

			var rows []jobModel
			require.NoError(t, s.read.NewSelect().Model(&rows).Order("id").Scan(ctx))
			require.Len(t, rows, 3)
			for i, j := range jobs {
				require.NotNil(t, rows[i].LeaseToken)
				require.Equal(t, j.LeaseToken, *rows[i].LeaseToken, "the lease returned is the one committed")
				require.EqualValues(t, 1, rows[i].Claims)
			}
			require.Nil(t, rows[2].LeaseToken, "the job not claimed is free")
			got, err := s.GetContext(ctx, "org-1", "run-9")
			require.NoError(t, err)
			require.Equal(t, !tc.rollBack, len(got) == 1, "the carrier's own write commits or not with it")
			s.writer.mu.Lock()
			require.Empty(t, s.carried)
			require.False(t, s.writer.locked, "the writer is free again")
			s.writer.mu.Unlock()
		})
	}
}
