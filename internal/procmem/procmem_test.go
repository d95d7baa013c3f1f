package procmem_test

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/internal/procmem"
	"github.com/svcflow/svcflow/internal/testlog"
)

func TestMain(m *testing.M) { testlog.Main(m) }

var sink []byte

// TestPeakFollowsMemory: touching 64 MiB raises the peak by about that much; after a reset
// the peak is back to what the process holds now.
func TestPeakFollowsMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, ok := procmem.Bytes(0, "VmHWM", "RssAnon")
	require.True(t, ok)
	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = 1
	}
	peak, ok := procmem.Bytes(os.Getpid(), "VmHWM")
	require.True(t, ok)
	require.GreaterOrEqual(t, peak[0], before[0]+60<<20)
	sink = nil
	debug.FreeOSMemory() // the 64 MiB back to the system, so the resident set shrinks
	if !procmem.ResetPeak(0) {
		t.Skip("this kernel does not reset the peak")
	}
	after, ok := procmem.Bytes(0, "VmHWM", "VmRSS")
	require.True(t, ok)
	require.Less(t, after[0], peak[0], "the reset brought the peak down to the current resident set")
	require.GreaterOrEqual(t, after[0], after[1]-1<<20)
	_, ok = procmem.Bytes(0, "NoSuchField")
	require.False(t, ok)
}
