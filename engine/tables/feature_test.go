package tables_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/store"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/engine/tables"
)

// TestReadLimits: a custom-table read returns at most 1,000 rows unless it says otherwise,
// and a limit resolved at run time above 10,000 fails the step, clearly.
func TestReadLimits(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		_, err := b.Eng.CreateTable(b.Ctx, "o1", "big", map[string]string{"i": "number"})
		require.NoError(t, err)
		require.NoError(t, b.St.InTx(b.Ctx, func(ctx context.Context, tx engine.Tx) error {
			for i := range 1001 {
				if _, err := tx.InsertRow(ctx, "o1", "big", map[string]any{"i": i}); err != nil {
					return err
				}
			}
			return nil
		}))
		w := b.Workflow(t, "o1", "reads", `{"actions": [
		  {"type": "custom-table", "outputKey": "dflt", "properties": {"table": "big", "operation": "read"}},
		  {"type": "custom-table", "outputKey": "some", "properties": {"table": "big", "operation": "read", "limit": "@input.n"}},
		  {"type": "custom-table", "outputKey": "counts", "properties": {"table": "big", "operation": "write",
		    "fields": {"i": "@dflt.length"}}}]}`)
		doc := b.Execute(t, "o1", w.ID, `{"n": 3}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Len(t, doc.Context["dflt"], tables.DefaultReadLimit, "a read without limit is bounded")
		require.Len(t, doc.Context["some"], 3)
		require.Equal(t, json.Number("0"), doc.Context["dflt"].([]any)[0].(map[string]any)["i"], "oldest first")

		for _, n := range []string{"10001", "0", `"ten"`, "2.5"} {
			doc = b.Execute(t, "o1", w.ID, `{"n": `+n+`}`)
			require.Equal(t, svctype.RunFailed, doc.Status, n)
			require.Contains(t, doc.Reason, "limit", n)
			require.Contains(t, doc.Reason, "10000", n)
		}
	})
}

// TestUpsertKeysIndexed: the first upsert on a key set declares an index on it. On SQLite it
// is built in the step's transaction; on PostgreSQL a job builds it once the writes in
// flight have ended. Either way the worker leaves it ready, covering every row.
func TestUpsertKeysIndexed(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		_, err := b.Eng.CreateTable(b.Ctx, "o1", "accts", map[string]string{"id": "text", "n": "number"})
		require.NoError(t, err)
		// Rows written before any upsert: the build must cover them.
		for i := range 30 {
			_, err := b.St.InsertRow(b.Ctx, "o1", "accts", map[string]any{"id": fmt.Sprint("old-", i), "n": 0})
			require.NoError(t, err)
		}
		w := b.Workflow(t, "o1", "up", `{"actions": [
		  {"type": "custom-table", "properties": {"table": "accts", "operation": "upsert", "keys": ["id"], "values": ["@input.id"], "fields": {"n": 1}}}
		]}`)
		doc := b.Execute(t, "o1", w.ID, `{"id": "new"}`)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		_, err = b.Eng.Work(b.Ctx) // the build job, where there is one
		require.NoError(t, err)
		ixs, err := b.St.TableIndexes(b.Ctx, "o1", "accts")
		require.NoError(t, err)
		require.Len(t, ixs, 1)
		require.Equal(t, "id", ixs[0].Key())
		require.Equal(t, svctype.IndexReady, ixs[0].State)
		for _, id := range []string{"old-7", "new"} {
			rows, err := b.Eng.ReadRows(b.Ctx, "o1", "accts", map[string]any{"id": id}, 0)
			require.NoError(t, err)
			require.Len(t, rows, 1, id)
		}
		require.Zero(t, store.CountAllJobs(t, b.St), "the build job is done")
	})
}

// TestRegisterPutsTheStepKind: the feature puts custom-table in the engine's Environment,
// an empty one included, and leaves a kind of that name the embedding program registered.
func TestRegisterPutsTheStepKind(t *testing.T) {
	t.Parallel()
	const def = `{"actions": [{"type": "custom-table", "outputKey": "out", "properties": {"table": "notes", "operation": "write", "fields": {"text": "x"}}}]}`
	b := enginetest.Setup(t, "sqlite", engine.Config{Env: engine.NewEmptyEnvironment()})
	b.CustomerTables(t, "o1")
	doc := b.Execute(t, "o1", b.Workflow(t, "o1", "w", def).ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.Equal(t, map[string]any{"table": "notes", "written": json.Number("1"), "dropped": []any{}}, doc.Context["out"])

	env := engine.NewEnvironment()
	env.RegisterStep(tables.CustomTable, func(context.Context, *svctype.StepCall) (any, error) { return "mine", nil })
	b = enginetest.Setup(t, "sqlite", engine.Config{Env: env})
	doc = b.Execute(t, "o1", b.Workflow(t, "o1", "w", def).ID, `{}`)
	require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
	require.Equal(t, "mine", doc.Context["out"])
}
