package store

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
)

// result is a sql.Result whose RowsAffected answers n or fails with err.
type result struct {
	n   int64
	err error
}

func (r result) LastInsertId() (int64, error) { return 0, errors.New("not supported") }
func (r result) RowsAffected() (int64, error) { return r.n, r.err }

// TestAffectedRows: a failure to count affected rows surfaces as itself, never as zero rows
// (which callers would report as a conflict, a missing row or a lost lease). The driver
// error cannot be provoked through a real database, hence the stub.
func TestAffectedRows(t *testing.T) {
	t.Parallel()
	driverErr := errors.New("driver: connection reset")
	cases := []struct {
		name     string
		none     func(op string) error
		sentinel error
	}{
		{"conflict", conflict, storage.ErrConflict},
		{"not found", notFound, storage.ErrNotFound},
		{"lease lost", leaseLost, storage.ErrLeaseLost},
	}

	n, err := affectedRows("op", result{n: 3})
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	_, err = affectedRows("update run", result{err: driverErr})
	require.ErrorIs(t, err, driverErr)
	require.Contains(t, err.Error(), "store: update run:")

	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, checkAffected("op", result{n: 1}, tt.none))
			require.ErrorIs(t, checkAffected("op", result{n: 0}, tt.none), tt.sentinel)

			err := checkAffected("complete job", result{err: driverErr}, tt.none)
			require.ErrorIs(t, err, driverErr)
			for _, s := range []error{storage.ErrConflict, storage.ErrNotFound, storage.ErrLeaseLost} {
				require.NotErrorIs(t, err, s, "a failure to count is not %v", s)
			}
		})
	}
}

// TestPageErr: a listing's malformed cursor is the store's invalid-cursor error (which the
// API answers as a bad request), any other error is wrapped for the operation.
func TestPageErr(t *testing.T) {
	t.Parallel()
	_, _, err := decodeTimeCursor("not a cursor!")
	require.ErrorIs(t, err, storage.ErrInvalidCursor)
	require.EqualError(t, err, "store: invalid cursor")
	_, err = decodeCursor(encodeCursor("a", "b"), 1)
	require.EqualError(t, err, "store: invalid cursor")

	require.ErrorIs(t, pageErr("list things", sql.ErrNoRows), storage.ErrNotFound)
	require.EqualError(t, pageErr("list things", errors.New("boom")), "store: list things: boom")
	require.NoError(t, pageErr("list things", nil))
}
