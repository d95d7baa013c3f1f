package core_test

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestStepLogLinesNameTheirRun: what a step logs names its organization, run, step index
// and step type, so an operator finds a run's lines with one filter.
func TestStepLogLinesNameTheirRun(t *testing.T) {
	t.Parallel()
	b := enginetest.SetupLogged(t, "sqlite", false)
	// A custom action over nway_match with stored tolerances: the call's own are discarded,
	// which the step logs.
	require.NoError(t, b.Eng.Environment().RegisterAction("recon_logged", "nway_match", map[string]any{
		"sets":       []any{map[string]any{"key": "bank", "records": "@input.bank"}, map[string]any{"key": "erp", "records": "@input.erp"}},
		"matchOn":    []any{"inv"},
		"tolerances": map[string]any{"amount": map[string]any{"type": "abs", "value": 0.0}},
	}))
	w := b.Workflow(t, "org-logs", "logged", `{"actions": [{"type": "recon_logged", "properties": {
	    "bank": "@input.bank", "erp": "@input.erp", "tolerances": {"amount": {"type": "abs", "value": 5}}}}]}`)
	doc := b.Execute(t, "org-logs", w.ID, `{"bank": [{"inv": "A", "amount": 1}], "erp": [{"inv": "A", "amount": 1}]}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)

	var line string
	sc := bufio.NewScanner(strings.NewReader(b.Logs.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "discarded parameters") {
			line = sc.Text()
		}
	}
	require.NotEmpty(t, line, "the step logged the discarded parameters: %s", b.Logs.String())
	for _, field := range []string{"org_id=org-logs", "run_id=" + doc.ID, "step_index=0", "step_type=recon_logged"} {
		require.Contains(t, line, field)
	}
}
