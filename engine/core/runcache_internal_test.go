package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/svctype"
)

func stateWith(input string, vars expr.Vars) *runState {
	return &runState{run: &svctype.Run{Input: json.RawMessage(input)}, vars: vars}
}

// TestRunCacheBytes: the cache drops its oldest states once they hold more than its bytes
// bound, however few they are, and keeps what fits.
func TestRunCacheBytes(t *testing.T) {
	t.Parallel()
	small := stateWith(`{"id":"a"}`, expr.Vars{"input": map[string]any{"id": "a"}})
	big := stateWith(`{}`, expr.Vars{"pairs": expr.NewLazy([]byte("[" + strings.Repeat(`1,`, 50_000) + "1]"))})
	require.Equal(t, 2<<10+2*len(`{"id":"a"}`), stateSize(small))
	require.Greater(t, stateSize(big), 100_000)

	c := newRunCache(100, stateSize(big)+stateSize(small))
	c.put(1, 0, small)
	c.put(2, 0, big) // both fit
	require.Equal(t, 2, c.len())
	c.put(3, 0, small) // over the bytes: the oldest goes
	require.Equal(t, 2, c.len())
	require.Nil(t, c.take(1, 1))
	require.Same(t, big, c.take(2, 1))
	require.Same(t, small, c.take(3, 1))
	require.Zero(t, c.bytes, "taking gives the bytes back")

	c = newRunCache(2, 1<<30) // and the count bound still holds
	for id := range int64(3) {
		c.put(id, 0, small)
	}
	require.Equal(t, 2, c.len())
	require.Nil(t, c.take(0, 1))
}
