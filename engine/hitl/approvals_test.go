package hitl_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/internal/enginetest"
	"github.com/svcflow/svcflow/engine/svctype"
)

// approvalFlow writes a row, asks role for a decision, writes another row.
const approvalFlow = `{"actions": [
	{"type": "custom-table", "properties": {"table": "ledger", "operation": "write", "fields": {"step": "before"}}},
	{"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "Pay {{input.amount}} to {{input.payee}}",
		"request_payload": {"amount": "@input.amount", "payee": "@input.payee"}}},
	{"type": "custom-table", "properties": {"table": "ledger", "operation": "write", "fields": {"step": "after"}}}
]}`

func approvalSetup(t *testing.T, b *enginetest.Bundle) string {
	t.Helper()
	_, err := b.Eng.CreateTable(b.Ctx, "o", "ledger", map[string]string{"step": "text"})
	require.NoError(t, err)
	w := b.Workflow(t, "o", "pay", approvalFlow)
	require.Empty(t, w.Warnings)
	return w.ID
}

func ledgerSteps(t *testing.T, b *enginetest.Bundle) []string {
	t.Helper()
	rows, err := b.Eng.ReadRows(b.Ctx, "o", "ledger", nil, 0)
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, r.Data["step"].(string))
	}
	return out
}

func TestApprovalApprovedResumesTheRun(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := approvalSetup(t, b)
		doc := b.Execute(t, "o", wf, `{"amount": 120, "payee": "ACME"}`)
		require.Equal(t, svctype.RunPaused, doc.Status)
		require.Equal(t, []string{"before"}, ledgerSteps(t, b))
		require.Equal(t, svctype.StepProcessing, doc.Steps[1].Status)
		ev, err := b.Eng.Evidence(b.Ctx, "o", doc.ID)
		require.NoError(t, err)
		waiting := ev.Steps[1]
		require.NotNil(t, waiting.StartedAt)
		require.Contains(t, string(waiting.InputSummary), "finance")

		a, err := b.Eng.PendingApproval(b.Ctx, "o", doc.ID)
		require.NoError(t, err)
		require.Regexp(t, `^apr_`, a.ID)
		require.Equal(t, "finance", a.ApproverRole)
		require.Equal(t, "Pay 120 to ACME", a.Comment)
		require.JSONEq(t, `{"amount": 120, "payee": "ACME"}`, string(a.RequestPayload))
		require.Equal(t, svctype.ApprovalPending, a.Status)
		require.Contains(t, b.Events(t, "o", doc.ID), engine.EventApprovalRequested)

		// Nothing runs while it waits.
		n, err := b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		require.Zero(t, n)

		_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 0, engine.ApprovalDecision{Approved: true})
		require.ErrorIs(t, err, engine.ErrConflict, "not paused at step 0")
		_, err = b.Eng.DecideApproval(b.Ctx, "other-org", doc.ID, 1, engine.ApprovalDecision{Approved: true})
		require.ErrorIs(t, err, engine.ErrNotFound, "another org's run")

		decided, err := b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 1, engine.ApprovalDecision{Approved: true, Comment: "ok", By: engine.Actor{Type: "user", ID: "ada"}})
		require.NoError(t, err)
		require.Equal(t, svctype.ApprovalApproved, decided.Status)
		_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 1, engine.ApprovalDecision{Approved: false})
		require.ErrorIs(t, err, engine.ErrConflict, "a second decision")

		_, err = b.Eng.Work(b.Ctx)
		require.NoError(t, err)
		doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunCompleted, doc.Status, doc.Reason)
		require.Equal(t, true, doc.Context["__approved"])
		require.Equal(t, "ok", doc.Context["__comment"])
		require.Equal(t, map[string]any{"1": map[string]any{"approved": true, "comment": "ok"}}, doc.Context["__approval_decisions"])
		require.Equal(t, []string{"before", "after"}, ledgerSteps(t, b))
		require.Contains(t, b.Events(t, "o", doc.ID), engine.EventApprovalDecided)
		// The decided step keeps the start and the resolved input it had while it waited.
		ev, err = b.Eng.Evidence(b.Ctx, "o", doc.ID)
		require.NoError(t, err)
		decidedStep := ev.Steps[1]
		require.Equal(t, svctype.StepCompleted, decidedStep.Status)
		require.JSONEq(t, string(waiting.InputSummary), string(decidedStep.InputSummary))
		require.NotNil(t, decidedStep.StartedAt)
		require.True(t, waiting.StartedAt.Equal(*decidedStep.StartedAt), "started %v, kept %v", waiting.StartedAt, decidedStep.StartedAt)
	})
}

func TestApprovalRejectedEndsTheRunKeepingRows(t *testing.T) {
	t.Parallel()
	enginetest.ForEachDialect(t, func(t *testing.T, b *enginetest.Bundle) {
		wf := approvalSetup(t, b)
		doc := b.Execute(t, "o", wf, `{"amount": 9, "payee": "X"}`)
		require.Equal(t, svctype.RunPaused, doc.Status)
		_, err := b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 1, engine.ApprovalDecision{Approved: false, Comment: "no"})
		require.NoError(t, err)
		doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
		require.NoError(t, err)
		require.Equal(t, svctype.RunRejected, doc.Status)
		require.Equal(t, false, doc.Context["__approved"])
		require.Equal(t, []string{"before"}, ledgerSteps(t, b), "rows already written stay")
		page, err := b.Eng.RunEvents(b.Ctx, "o", doc.ID, svctype.ListOptions{Limit: 100})
		require.NoError(t, err)
		last := page.Items[len(page.Items)-1]
		require.Equal(t, engine.EventRunCompleted, last.Event)
		require.JSONEq(t, `{"status": "rejected"}`, string(mustField(t, last.Payload, "result")))
	})
}

func mustField(t *testing.T, payload json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(payload, &m))
	return m[key]
}

// Several required signers are several approval steps with different roles, in sequence.
func TestApprovalSignersInSequence(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	w := b.Workflow(t, "o", "two", `{"actions": [
		{"type": "PbotApproval", "properties": {"approver_role": "manager", "comment": "first"}},
		{"type": "PbotApproval", "properties": {"approver_role": "finance", "comment": "second"}}]}`)
	doc := b.Execute(t, "o", w.ID, `{}`)
	require.Equal(t, svctype.RunPaused, doc.Status)
	pending, err := b.Eng.ListApprovals(b.Ctx, "o", engine.ApprovalFilter{Status: svctype.ApprovalPending, Role: "manager"})
	require.NoError(t, err)
	require.Len(t, pending.Items, 1)
	_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 1, engine.ApprovalDecision{Approved: true})
	require.ErrorIs(t, err, engine.ErrConflict, "finance cannot sign before the manager")
	_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 0, engine.ApprovalDecision{Approved: true, Comment: "m"})
	require.NoError(t, err)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	a, err := b.Eng.PendingApproval(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, "finance", a.ApproverRole)
	require.Equal(t, 1, a.StepIndex)
	_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 1, engine.ApprovalDecision{Approved: true, Comment: "f"})
	require.NoError(t, err)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunCompleted, doc.Status)
	require.Equal(t, map[string]any{"0": map[string]any{"approved": true, "comment": "m"}, "1": map[string]any{"approved": true, "comment": "f"}},
		doc.Context["__approval_decisions"])
}

// An approval past expires_at is decided as rejected, comment "expired", by the worker.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	clk := enginetest.NewClock(time.Now())
	b := enginetest.Setup(t, "sqlite", engine.Config{Now: clk.Now})
	w := b.Workflow(t, "o", "expiring", `{"actions": [{"type": "PbotApproval", "properties": {"expires_in_seconds": 0.2}}]}`)
	doc := b.Execute(t, "o", w.ID, `{}`)
	require.Equal(t, svctype.RunPaused, doc.Status)
	a, err := b.Eng.PendingApproval(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, engine.DefaultApproverRole, a.ApproverRole)
	require.NotNil(t, a.ExpiresAt)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	a, err = b.Eng.PendingApproval(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.ApprovalPending, a.Status, "not before it expires")
	clk.Advance(300 * time.Millisecond)
	_, err = b.Eng.Work(b.Ctx)
	require.NoError(t, err)
	doc, err = b.Eng.RunStatus(b.Ctx, "o", doc.ID)
	require.NoError(t, err)
	require.Equal(t, svctype.RunRejected, doc.Status)
	require.Equal(t, engine.ApprovalExpiredComment, doc.Context["__comment"])
	_, err = b.Eng.DecideApproval(b.Ctx, "o", doc.ID, 0, engine.ApprovalDecision{Approved: true})
	require.ErrorIs(t, err, engine.ErrConflict, "decided by expiry")
}

func TestApprovalPropertiesAreChecked(t *testing.T) {
	t.Parallel()
	b := enginetest.Setup(t, "sqlite")
	_, err := b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "bad", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotApproval", "properties": {"approver_role": "", "expires_in_seconds": -1, "request_payload": "x"}}]}`)})
	var ve *engine.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 3)
	_, err = b.Eng.CreateWorkflow(b.Ctx, "o", engine.WorkflowInput{Name: "forever", Definition: json.RawMessage(
		`{"actions": [{"type": "PbotApproval", "properties": {"expires_in_seconds": 1e12}}]}`)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "/definition/actions/0/properties/expires_in_seconds", ve.Problems[0].Pointer)
}
