package migrationtest_test

import (
	"testing"

	"github.com/svcflow/svcflow/internal/testlog"
)

// TestMain gathers the package's logs with the suite's (internal/testlog).
func TestMain(m *testing.M) { testlog.Main(m) }
