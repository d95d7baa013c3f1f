package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/internal/testclock"
)

// TestWriterBusy: WriterBusy adds up the time SQLite's writer was held, by the store's
// clock: a transaction's whole span, a claim's, and not the time between them.
func TestWriterBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := testclock.New(time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC))
	st := store.OpenTest(t, "sqlite", store.WithNow(clk.Now))
	before, ok := st.WriterBusy()
	require.True(t, ok)

	require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		clk.Advance(30 * time.Millisecond) // the transaction's work, as the clock sees it
		return tx.EnqueueJob(ctx, &svctype.Job{OrgID: "o", Kind: "k", RunAt: clk.Now().Add(-time.Second)})
	}))
	clk.Advance(time.Hour) // nobody holds the writer
	busy, _ := st.WriterBusy()
	require.Equal(t, 30*time.Millisecond, busy-before)

	// A transaction that fails holds the writer too.
	require.Error(t, st.InTx(ctx, func(ctx context.Context, tx storage.Tx) error {
		clk.Advance(5 * time.Millisecond)
		return context.Canceled
	}))
	after, _ := st.WriterBusy()
	require.Equal(t, 35*time.Millisecond, after-before)

	jobs, err := st.ClaimJobs(ctx, 1, time.Minute) // a claim takes the writer, the clock stands
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	claimed, _ := st.WriterBusy()
	require.Equal(t, after, claimed)
}

// TestWriterBusyPostgres: PostgreSQL has no one writer to be busy.
func TestWriterBusyPostgres(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "postgres")
	_, ok := st.WriterBusy()
	require.False(t, ok)
}
