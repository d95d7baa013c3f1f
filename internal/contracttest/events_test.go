package contracttest

import (
	"net/http"
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

func TestEventsCheckDelivery(t *testing.T) {
	c := NewEvents(filepath.Join("..", "..", "openapi", "openapi.yaml"))
	body := []byte(`{"delivery_id":"dlv_1","event":"step.started","timestamp":"2026-01-02T03:04:05.678Z","payload":{"run_id":"r"}}`)
	h := http.Header{}
	h.Set("X-Svc-Delivery-Id", "dlv_1")
	h.Set("X-Svc-Timestamp", "1767323045")
	require.NoError(t, c.CheckDelivery(h, body))
	h.Set("X-Svc-Signature", "sha256=00")
	require.ErrorContains(t, c.CheckDelivery(h, body), "X-Svc-Signature")
	h.Del("X-Svc-Signature")
	h.Del("X-Svc-Timestamp")
	require.ErrorContains(t, c.CheckDelivery(h, body), "X-Svc-Timestamp is missing")
	h.Set("X-Svc-Timestamp", "1767323045")
	require.ErrorContains(t, c.CheckDelivery(h, []byte(`{"delivery_id":"dlv_1","event":"nope","timestamp":"2026-01-02T03:04:05.678Z","payload":{}}`)), "not a webhook")
	require.Error(t, c.CheckDelivery(h, []byte(`{"delivery_id":"dlv_1","event":"step.started","timestamp":"yesterday","payload":{}}`)))
	require.Error(t, c.CheckDelivery(h, []byte(`{"id":"dlv_1","event":"step.started","timestamp":"2026-01-02T03:04:05.678Z","payload":{}}`)))
}
