package enginetest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/secrets"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/internal/testclock"
	"github.com/svcflow/svcflow/internal/testlog"
)

// NewKeyring returns a keyring of keys (the first seals).
func NewKeyring(t testing.TB, keys ...[]byte) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.NewKeyring(keys...)
	require.NoError(t, err)
	return kr
}

// GenerateKey returns a new master key.
func GenerateKey(t testing.TB) []byte {
	t.Helper()
	k, err := secrets.GenerateKey()
	require.NoError(t, err)
	testlog.Secret(secrets.EncodeKey(k)) // no log line may hold it
	return k
}

// LockedBuffer is a log destination safe for concurrent writes.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Clock is the clock an engine and its store share in a test (engine.Config.Now and
// store.WithNow: Clock.Now; Setup hands it to both).
type Clock = testclock.Clock

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return testclock.New(t) }

// OrgConfigEngine is an engine over a fresh SQLite store with a keyring, and org's config
// holding values: what the orgconfig: fuzz targets resolve against.
func OrgConfigEngine(tb testing.TB, org string, values map[string]string) *engine.Engine {
	tb.Helper()
	eng, err := engine.New(engine.Config{Store: store.OpenTest(tb, "sqlite"), Keyring: NewKeyring(tb, GenerateKey(tb)), Logger: testlog.Quiet()})
	require.NoError(tb, err)
	for k, v := range values {
		_, _, err := eng.SetOrgConfig(context.Background(), org, k, v)
		require.NoError(tb, err)
	}
	return eng
}
