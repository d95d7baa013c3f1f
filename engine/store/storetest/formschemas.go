package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// testFormSchemas: generated form schemas are kept per organization, workflow, version,
// step and onFalse depth; the first kept wins; another organization never reads one; a
// deleted workflow takes its schemas with it.
func testFormSchemas(t *testing.T, b *bundle) {
	w := b.workflow(t, orgA, "generated_forms")
	at := svctype.FormSchemaKey{OrgID: orgA, WorkflowID: w.ID, WorkflowVersion: 1, StepIndex: 2}
	_, err := b.s.GeneratedFormSchema(b.ctx, at)
	require.ErrorIs(t, err, storage.ErrNotFound)

	first := json.RawMessage(`{"version":"form_schema_v1","pages":[{"id":"main","fields":[{"key":"a","type":"text","label":"A"}]}]}`)
	created := time.Date(2026, 11, 23, 1, 2, 3, 456789123, time.UTC)
	kept, err := b.s.KeepGeneratedFormSchema(b.ctx, &svctype.GeneratedFormSchema{FormSchemaKey: at, Schema: first, Attempts: 2, CreatedAt: created})
	require.NoError(t, err)
	require.Equal(t, at, kept.FormSchemaKey)
	requireJSON(t, string(first), kept.Schema)
	require.Equal(t, 2, kept.Attempts)
	require.True(t, kept.CreatedAt.Equal(created.Truncate(time.Microsecond)))

	// A second draft of the same step, in a transaction: the first stays and is answered.
	err = b.s.InTx(b.ctx, func(ctx context.Context, tx storage.Tx) error {
		again, err := tx.KeepGeneratedFormSchema(ctx, &svctype.GeneratedFormSchema{FormSchemaKey: at, Schema: json.RawMessage(`{"other":true}`), Attempts: 1})
		if err == nil {
			requireJSON(t, string(first), again.Schema)
		}
		return err
	})
	require.NoError(t, err)
	got, err := b.s.GeneratedFormSchema(b.ctx, at)
	require.NoError(t, err)
	requireJSON(t, string(first), got.Schema)
	require.Equal(t, 2, got.Attempts)

	// Every part of the key tells steps apart.
	for _, other := range []svctype.FormSchemaKey{
		{OrgID: orgB, WorkflowID: w.ID, WorkflowVersion: 1, StepIndex: 2},
		{OrgID: orgA, WorkflowID: "another", WorkflowVersion: 1, StepIndex: 2},
		{OrgID: orgA, WorkflowID: w.ID, WorkflowVersion: 2, StepIndex: 2},
		{OrgID: orgA, WorkflowID: w.ID, WorkflowVersion: 1, StepIndex: 3},
		{OrgID: orgA, WorkflowID: w.ID, WorkflowVersion: 1, StepIndex: 2, OnFalse: 1},
	} {
		_, err := b.s.GeneratedFormSchema(b.ctx, other)
		require.ErrorIs(t, err, storage.ErrNotFound, "%+v", other)
	}
	// Org B's schema for the same ids is its own.
	inB := at
	inB.OrgID = orgB
	kept, err = b.s.KeepGeneratedFormSchema(b.ctx, &svctype.GeneratedFormSchema{FormSchemaKey: inB, Schema: json.RawMessage(`{"b":1}`), Attempts: 1})
	require.NoError(t, err)
	requireJSON(t, `{"b":1}`, kept.Schema)
	got, err = b.s.GeneratedFormSchema(b.ctx, at)
	require.NoError(t, err)
	requireJSON(t, string(first), got.Schema)

	// Deleting org B's workflow of that id (it has none) leaves org A's schemas; deleting
	// org A's removes them.
	require.ErrorIs(t, b.s.DeleteWorkflow(b.ctx, orgB, w.ID), storage.ErrNotFound)
	_, err = b.s.GeneratedFormSchema(b.ctx, at)
	require.NoError(t, err)
	require.NoError(t, b.s.DeleteWorkflow(b.ctx, orgA, w.ID))
	_, err = b.s.GeneratedFormSchema(b.ctx, at)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = b.s.GeneratedFormSchema(b.ctx, inB)
	require.NoError(t, err, "org B's schema is not org A's workflow's")
}
