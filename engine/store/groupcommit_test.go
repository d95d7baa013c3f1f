package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/store"
)

// groupBundle is a SQLite store with a table of names its tests' transactions insert, and
// a channel told each time a caller starts to wait for the writer.
type groupBundle struct {
	s      *store.Store
	ctx    context.Context
	queued chan struct{}

	mu  sync.Mutex
	ran []string // the functions that ran, in order
}

func setupGroup(t *testing.T) *groupBundle {
	t.Helper()
	b := &groupBundle{s: store.OpenTest(t, "sqlite"), ctx: context.Background(), queued: make(chan struct{}, 64)}
	for _, q := range []string{
		`CREATE TABLE gc_rows (name TEXT PRIMARY KEY)`,
		`CREATE TABLE gc_parent (id TEXT PRIMARY KEY)`,
		`CREATE TABLE gc_child (id TEXT PRIMARY KEY, parent TEXT REFERENCES gc_parent(id) DEFERRABLE INITIALLY DEFERRED)`,
	} {
		require.NoError(t, store.ExecWriter(b.ctx, b.s, q))
	}
	store.OnWriterQueue(b.s, func() { b.queued <- struct{}{} })
	return b
}

type txFunc = func(ctx context.Context, tx storage.Tx) error

// insert is a transaction that notes it ran and inserts name.
func (b *groupBundle) insert(name string) txFunc {
	return func(ctx context.Context, tx storage.Tx) error {
		b.note(name)
		return store.ExecTx(ctx, tx, `INSERT INTO gc_rows (name) VALUES (?)`, name)
	}
}

func (b *groupBundle) note(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ran = append(b.ran, name)
}

func (b *groupBundle) order() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slicesClone(b.ran)
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// call is one InTx call started by start: its error, and the value it panicked with.
type call struct {
	done     chan struct{}
	err      error
	panicked any
}

func (c *call) wait() error {
	<-c.done
	return c.err
}

// start calls InTx with fn on a goroutine of its own and returns once the call waits for
// the writer (which the test holds).
func (b *groupBundle) start(t *testing.T, ctx context.Context, fn txFunc) *call {
	t.Helper()
	c := &call{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer func() { c.panicked = recover() }()
		c.err = b.s.InTx(ctx, fn)
	}()
	<-b.queued
	return c
}

func (b *groupBundle) rows(t *testing.T) []string {
	t.Helper()
	got, err := store.QueryStrings(b.ctx, b.s, `SELECT name FROM gc_rows ORDER BY name`)
	require.NoError(t, err)
	return got
}

// commits is how many commits InTx made, and how many calls they carried, since the
// bundle's last look.
func (b *groupBundle) commitsSince(commits0, calls0 int64) (int64, int64) {
	commits, calls := b.s.GroupCommits()
	return commits - commits0, calls - calls0
}

var errRefused = errors.New("refused by the test")

func TestGroupCommit(t *testing.T) {
	t.Parallel()

	t.Run("those that waited commit together in arrival order", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		c0, n0 := b.s.GroupCommits()
		release := store.HoldWriter(b.s)
		var calls []*call
		for _, name := range []string{"d", "c", "b", "a"} {
			calls = append(calls, b.start(t, b.ctx, b.insert(name)))
		}
		// Sees what the functions before it in the group wrote.
		var seen []string
		calls = append(calls, b.start(t, b.ctx, func(ctx context.Context, tx storage.Tx) error {
			b.note("reader")
			var err error
			seen, err = store.QueryStringsTx(ctx, tx, `SELECT name FROM gc_rows ORDER BY name`)
			return err
		}))
		release()
		for _, c := range calls {
			require.NoError(t, c.wait())
		}
		require.Equal(t, []string{"d", "c", "b", "a", "reader"}, b.order())
		require.Equal(t, []string{"a", "b", "c", "d"}, b.rows(t))
		require.Equal(t, []string{"a", "b", "c", "d"}, seen)
		commits, n := b.commitsSince(c0, n0)
		require.Equal(t, int64(1), commits, "one commit")
		require.Equal(t, int64(5), n)
	})

	t.Run("a failing function's writes vanish alone", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		release := store.HoldWriter(b.s)
		a := b.start(t, b.ctx, b.insert("a"))
		failing := b.start(t, b.ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := b.insert("b")(ctx, tx); err != nil {
				return err
			}
			return errRefused
		})
		c := b.start(t, b.ctx, b.insert("c"))
		release()
		require.NoError(t, a.wait())
		require.ErrorIs(t, failing.wait(), errRefused)
		require.NoError(t, c.wait())
		require.Equal(t, []string{"a", "c"}, b.rows(t))
	})

	t.Run("a failing first function is rolled back and the others commit", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		release := store.HoldWriter(b.s)
		failing := b.start(t, b.ctx, func(ctx context.Context, tx storage.Tx) error {
			if err := b.insert("a")(ctx, tx); err != nil {
				return err
			}
			return errRefused
		})
		bCall := b.start(t, b.ctx, b.insert("b"))
		c := b.start(t, b.ctx, b.insert("c"))
		release()
		require.ErrorIs(t, failing.wait(), errRefused)
		require.NoError(t, bCall.wait())
		require.NoError(t, c.wait())
		require.Equal(t, []string{"b", "c"}, b.rows(t))
	})

	t.Run("a caller done before its function starts gets its ctx's error", func(t *testing.T) {
		t.Parallel()
		for _, who := range []int{0, 1} { // the group's leader, a member
			b := setupGroup(t)
			release := store.HoldWriter(b.s)
			ctxs := []context.Context{b.ctx, b.ctx, b.ctx}
			cctx, cancel := context.WithCancel(b.ctx)
			ctxs[who] = cctx
			var calls []*call
			for i, name := range []string{"a", "b", "c"} {
				calls = append(calls, b.start(t, ctxs[i], b.insert(name)))
			}
			cancel()
			release()
			want := []string{"a", "b", "c"}
			for i, c := range calls {
				if i == who {
					require.ErrorIs(t, c.wait(), context.Canceled)
					continue
				}
				require.NoError(t, c.wait())
			}
			want = append(want[:who:who], want[who+1:]...)
			require.Equal(t, want, b.order(), "the cancelled caller's function does not run")
			require.Equal(t, want, b.rows(t))
		}
	})

	t.Run("a panic rolls the group back and panics in its caller", func(t *testing.T) {
		t.Parallel()
		for _, who := range []int{0, 1} {
			b := setupGroup(t)
			release := store.HoldWriter(b.s)
			var calls []*call
			for i, name := range []string{"a", "b", "c"} {
				fn := b.insert(name)
				if i == who {
					fn = func(ctx context.Context, tx storage.Tx) error {
						require.NoError(t, b.insert(name)(ctx, tx))
						panic("boom " + name)
					}
				}
				calls = append(calls, b.start(t, b.ctx, fn))
			}
			release()
			for i, c := range calls {
				err := c.wait()
				if i == who {
					require.Equal(t, "boom "+[]string{"a", "b", "c"}[i], c.panicked)
					continue
				}
				require.Nil(t, c.panicked)
				require.ErrorIs(t, err, storage.ErrTryAgain)
			}
			require.Empty(t, b.rows(t))
			require.NoError(t, b.s.InTx(b.ctx, b.insert("after")), "the writer is free again")
			require.Equal(t, []string{"after"}, b.rows(t))
		}
	})

	t.Run("an error that ends SQLite's transaction aborts the group", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		release := store.HoldWriter(b.s)
		a := b.start(t, b.ctx, b.insert("a"))
		ender := b.start(t, b.ctx, func(ctx context.Context, tx storage.Tx) error {
			b.note("ender")
			// OR ROLLBACK: the conflict rolls back SQLite's whole transaction, savepoints
			// and all.
			return store.ExecTx(ctx, tx, `INSERT OR ROLLBACK INTO gc_rows (name) VALUES ('a')`)
		})
		c := b.start(t, b.ctx, b.insert("c"))
		release()
		require.ErrorIs(t, a.wait(), storage.ErrTryAgain)
		errEnder := ender.wait()
		require.Error(t, errEnder)
		require.NotErrorIs(t, errEnder, storage.ErrTryAgain)
		require.ErrorIs(t, c.wait(), storage.ErrTryAgain)
		require.Equal(t, []string{"a", "ender"}, b.order(), "nothing runs after the transaction ended")
		require.Empty(t, b.rows(t))
		require.NoError(t, b.s.InTx(b.ctx, b.insert("after")), "the writer is free again")
		require.Equal(t, []string{"after"}, b.rows(t))
	})

	t.Run("a commit that fails fails every member", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		release := store.HoldWriter(b.s)
		a := b.start(t, b.ctx, b.insert("a"))
		orphan := b.start(t, b.ctx, func(ctx context.Context, tx storage.Tx) error {
			// A deferred foreign key: checked at COMMIT.
			return store.ExecTx(ctx, tx, `INSERT INTO gc_child (id, parent) VALUES ('x', 'missing')`)
		})
		release()
		errA, errOrphan := a.wait(), orphan.wait()
		require.ErrorContains(t, errA, "FOREIGN KEY")
		require.Equal(t, errA, errOrphan)
		require.Empty(t, b.rows(t))
		require.NoError(t, b.s.InTx(b.ctx, b.insert("after")), "the writer is usable again")
		require.Equal(t, []string{"after"}, b.rows(t))
	})

	t.Run("a claim keeps its turn between groups", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		c0, n0 := b.s.GroupCommits()
		release := store.HoldWriter(b.s)
		a := b.start(t, b.ctx, b.insert("a"))
		claimed := make(chan struct{})
		go func() {
			defer close(claimed)
			unlock := store.HoldWriter(b.s) // as ClaimJobs's UPDATE takes the writer
			b.note("claim")
			unlock()
		}()
		<-b.queued
		d := b.start(t, b.ctx, b.insert("d"))
		release()
		require.NoError(t, a.wait())
		require.NoError(t, d.wait())
		<-claimed
		require.Equal(t, []string{"a", "claim", "d"}, b.order())
		commits, n := b.commitsSince(c0, n0)
		require.Equal(t, int64(2), commits, "d arrived after the claim: a group of its own")
		require.Equal(t, int64(2), n)
	})

	t.Run("a group is bounded and its leader returns before the next group ends", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t)
		c0, n0 := b.s.GroupCommits()
		release := store.HoldWriter(b.s)
		gate := make(chan struct{})
		var calls []*call
		for i := range store.GroupMax + 4 {
			fn := b.insert(fmt.Sprintf("r%02d", i))
			if i == store.GroupMax { // the next group's leader: held until the first group returned
				inner := fn
				fn = func(ctx context.Context, tx storage.Tx) error {
					<-gate
					return inner(ctx, tx)
				}
			}
			calls = append(calls, b.start(t, b.ctx, fn))
		}
		release()
		for _, c := range calls[:store.GroupMax] {
			require.NoError(t, c.wait())
		}
		close(gate)
		for _, c := range calls[store.GroupMax:] {
			require.NoError(t, c.wait())
		}
		require.Len(t, b.rows(t), store.GroupMax+4)
		commits, n := b.commitsSince(c0, n0)
		require.Equal(t, int64(2), commits)
		require.Equal(t, int64(store.GroupMax+4), n)
	})
}
