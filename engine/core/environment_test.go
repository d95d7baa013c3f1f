package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestRegisterActionCustomTable: an embedding program declares a custom-table action in
// code, as it does an nway_match one: the action's properties are resolved in the step's
// scope and the step's own properties go over them; a kind without an Action form is
// refused, naming the kinds that have one.
func TestRegisterActionCustomTable(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	b.CustomerTables(t, "o1")
	env := b.Eng.Environment()
	require.NoError(t, env.RegisterAction("log_note", "custom-table", map[string]any{
		"table": "notes", "operation": "write", "fields": map[string]any{"text": "{{input.text}}", "n": 1},
	}))
	w := b.Workflow(t, "o1", "notes", `{"actions": [
	  {"type": "log_note", "properties": {}},
	  {"type": "log_note", "properties": {"fields": {"text": "given", "n": 2}}}]}`)
	require.Empty(t, w.Warnings)
	doc := b.Execute(t, "o1", w.ID, `{"text": "hello"}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	rows, err := b.Eng.ReadRows(b.Ctx, "o1", "notes", nil, 0)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, "hello", rows[0].Data["text"])
	require.Equal(t, "given", rows[1].Data["text"])

	err = env.RegisterAction("x", "matcher", map[string]any{})
	require.ErrorContains(t, err, `action kind "matcher" is not available in this environment (custom-table, nway_match)`)
	require.ErrorContains(t, env.RegisterAction("y", "custom-table", map[string]any{"table": "notes", "operation": "drop"}), "properties/operation")
}
