package core_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// TestIdempotencyKeyNamesOneRequest: a key repeated with the same request (the same
// workflow and input, its keys in any order, any white space) answers the first run; with
// another input or another workflow it is ErrIdempotencyKeyReused and starts nothing.
func TestIdempotencyKeyNamesOneRequest(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		w := b.Workflow(t, "o1", "a", `{"actions": []}`)
		other := b.Workflow(t, "o1", "b", `{"actions": []}`)
		key := engine.ExecuteOptions{IdempotencyKey: "signup-42"}
		first, err := b.Eng.Execute(b.Ctx, "o1", w.ID, json.RawMessage(`{"email": "ada@example.com", "n": 1.50, "tags": ["a", "b"]}`), key)
		require.NoError(t, err)

		same, err := b.Eng.Execute(b.Ctx, "o1", w.ID, json.RawMessage("{ \"tags\": [\"a\",\"b\"],\n \"n\": 1.50, \"email\": \"ada@example.com\" }"), key)
		require.NoError(t, err)
		require.Equal(t, first.ID, same.ID, "the same request, written otherwise")

		for name, call := range map[string]struct {
			workflow string
			input    string
		}{
			"another input":           {w.ID, `{"email": "grace@example.com", "n": 1.50, "tags": ["a", "b"]}`},
			"a number written apart":  {w.ID, `{"email": "ada@example.com", "n": 1.5, "tags": ["a", "b"]}`},
			"another order in arrays": {w.ID, `{"email": "ada@example.com", "n": 1.50, "tags": ["b", "a"]}`},
			"no input":                {w.ID, ``},
			"another workflow":        {other.ID, `{"email": "ada@example.com", "n": 1.50, "tags": ["a", "b"]}`},
		} {
			run, err := b.Eng.Execute(b.Ctx, "o1", call.workflow, json.RawMessage(call.input), key)
			require.ErrorIs(t, err, engine.ErrIdempotencyKeyReused, name)
			require.Nil(t, run, name)
		}
		page, err := b.Eng.ListRuns(b.Ctx, "o1", engine.RunFilter{ListOptions: svctype.ListOptions{Limit: 10}})
		require.NoError(t, err)
		require.Len(t, page.Items, 1, "a refused key starts nothing")

		// The key is the organization's: another one uses it for its own request.
		w2 := b.Workflow(t, "o2", "a", `{"actions": []}`)
		_, err = b.Eng.Execute(b.Ctx, "o2", w2.ID, json.RawMessage(`{"x": 1}`), key)
		require.NoError(t, err)
		// Without a body, a key names the empty input.
		none, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{IdempotencyKey: "empty"})
		require.NoError(t, err)
		again, err := b.Eng.Execute(b.Ctx, "o1", w.ID, json.RawMessage(`{}`), engine.ExecuteOptions{IdempotencyKey: "empty"})
		require.NoError(t, err)
		require.Equal(t, none.ID, again.ID)
	})
}

// TestExecuteAtAVersion: ExecuteOptions.WorkflowVersion runs a version the workflow had,
// not its current one; a version it never had is ErrNotFound.
func TestExecuteAtAVersion(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		w := b.Workflow(t, "o1", "v", `{"actions": []}`)
		_, err := b.Eng.UpdateWorkflow(b.Ctx, "o1", w.ID, engine.WorkflowInput{Name: "v", Definition: json.RawMessage(`{"actions": []}`)})
		require.NoError(t, err)
		run, err := b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{WorkflowVersion: 1})
		require.NoError(t, err)
		require.Equal(t, 1, run.WorkflowVersion)
		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err := b.Eng.RunStatus(b.Ctx, "o1", run.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status)
		require.Equal(t, 1, doc.WorkflowVersion)
		_, err = b.Eng.Execute(b.Ctx, "o1", w.ID, nil, engine.ExecuteOptions{WorkflowVersion: 3})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = b.Eng.Execute(b.Ctx, "o2", w.ID, nil, engine.ExecuteOptions{WorkflowVersion: 1})
		require.ErrorIs(t, err, engine.ErrNotFound, "another organization's workflow is not found")
	})
}
