package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
)

// testReady: a migrated store is ready; one that cannot answer (its context ended, or the
// store closed) is not, and says so with its own error rather than ErrSchemaBehind.
func testReady(t *testing.T, b *bundle) {
	require.NoError(t, b.s.Ready(b.ctx))

	ended, cancel := context.WithCancel(b.ctx)
	cancel()
	err := b.s.Ready(ended)
	require.Error(t, err, "a probe whose time is up is not an answer")
	require.False(t, errors.Is(err, storage.ErrSchemaBehind), "%v", err)

	require.NoError(t, b.s.Close())
	err = b.s.Ready(b.ctx)
	require.Error(t, err, "a closed store is not ready")
	require.False(t, errors.Is(err, storage.ErrSchemaBehind), "%v", err)
}
