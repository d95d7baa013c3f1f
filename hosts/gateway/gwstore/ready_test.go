package gwstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// testReady: a migrated store is ready; one whose database lacks a gateway migration is
// behind (ErrSchemaBehind), and so is one that lacks an engine migration (the engine's
// error); one that cannot answer (its context ended, or the engine's store closed) is not
// ready and says so with its own error, not as behind.
func testReady(t *testing.T, b *bundle) {
	require.NoError(t, b.s.Ready(b.ctx))
	w := b.st.Shared().Writer()

	_, err := w.ExecContext(b.ctx, "DELETE FROM gateway_migrations WHERE name = ?", "20261128000200")
	require.NoError(t, err)
	err = b.s.Ready(b.ctx)
	require.ErrorIs(t, err, gwstore.ErrSchemaBehind)
	require.NoError(t, b.st.Ready(b.ctx), "the engine's schema is whole")
	require.NoError(t, b.s.Migrate(b.ctx))
	require.NoError(t, b.s.Ready(b.ctx), "migrated again")

	var last string
	require.NoError(t, w.NewRaw("SELECT max(name) FROM bun_migrations").Scan(b.ctx, &last))
	_, err = w.ExecContext(b.ctx, "DELETE FROM bun_migrations WHERE name = ?", last)
	require.NoError(t, err)
	err = b.s.Ready(b.ctx)
	require.ErrorIs(t, err, engine.ErrSchemaBehind, "the engine's migrations are checked too")
	require.False(t, errors.Is(err, gwstore.ErrSchemaBehind), "%v", err)
	require.NoError(t, b.st.Migrate(b.ctx))
	require.NoError(t, b.s.Ready(b.ctx))

	ended, cancel := context.WithCancel(b.ctx)
	cancel()
	err = b.s.Ready(ended)
	require.Error(t, err, "a probe whose time is up is not an answer")
	require.False(t, errors.Is(err, gwstore.ErrSchemaBehind), "%v", err)

	require.NoError(t, b.st.Close())
	err = b.s.Ready(b.ctx)
	require.Error(t, err, "a closed store is not ready")
	require.False(t, errors.Is(err, gwstore.ErrSchemaBehind), "%v", err)
	require.False(t, errors.Is(err, engine.ErrSchemaBehind), "%v", err)
}
