package contracttest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventsCheck(t *testing.T) {
	c := NewEvents(filepath.Join("..", "..", "openapi", "openapi.yaml"))
	require.NoError(t, c.Check("step.started", []byte(`{"run_id": "r", "step_index": 0, "step_type": "x"}`)))
	require.Error(t, c.Check("step.started", []byte(`{"run_id": "r", "step_index": 0, "step_kind": "x"}`)))
	require.Error(t, c.Check("step.started", []byte(`{"run_id": "r", "step_index": "0", "step_type": "x"}`)))
}
