package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/hosts/gateway"
	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
)

// A serve stopped while it starts (SIGTERM right after the gateway listens) cancels the
// context the announcement reads the store with: that is no failure of serve, which must
// still exit 0 (it exited 1 with "gwstore: list accounts: context canceled"). A store that
// cannot answer is advice lost, logged, not a gateway stopped.
func TestAnnounceWhileStopping(t *testing.T) {
	t.Parallel()
	st := store.OpenTest(t, "sqlite")
	gw := gateway.New(gateway.Options{Store: gwstore.New(st.Shared())})
	var logs, human, out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, dev := range []bool{false, true} {
		f := &gatewayFlags{addr: "127.0.0.1:8081", devToken: dev, stderr: &human}
		require.NoError(t, f.announce(ctx, gw, "127.0.0.1:8081", log, &out), "dev token %v", dev)
	}
	require.Contains(t, human.String(), "the console is at http://127.0.0.1:8081/console")
	require.Empty(t, out.String(), "no token was made")
	require.NotContains(t, logs.String(), "could not tell", "a stop is not a store failing")

	// The store failing while the gateway runs: logged, and serve goes on.
	require.NoError(t, st.Close())
	logs.Reset()
	f := &gatewayFlags{addr: "127.0.0.1:8081", stderr: &human}
	require.NoError(t, f.announce(context.Background(), gw, "127.0.0.1:8081", log, &out))
	require.Contains(t, logs.String(), "could not tell whether the gateway has an account")
}
