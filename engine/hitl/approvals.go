// Package hitl is the people in the loop: PbotApproval and PbotForm steps, which pause their
// run (core pause kinds) until a person decides or submits, their expiry and reminder
// timers, and the form_schema_v1 a model drafts for a form pause or for POST /forms/generate.
// A decision or a submission resumes the run through the core's one resume path.
package hitl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Approvals. A PbotApproval step pauses its run: in the step's transaction it writes an
// approval record (approver role, rendered comment, resolved request payload, expiry), emits
// pbot_approval_requested, sets the run to paused with its cursor on the step and
// completes the run's job. Nothing is held in memory while a person decides. A decision
// (DecideApproval) resumes the run in one transaction: the decision on the record, the
// context keys __approved, __comment and __approval_decisions, pbot_approval_decided, and
// either the run's next job (approved) or its end as rejected. An expiry is a job that
// decides as rejected with comment "expired".

// ErrAgentFormsDisabled: the organization does not have the agent_forms feature (403).
var ErrAgentFormsDisabled = errors.New("agent_forms_disabled")

// Deadlines that passed: a decision or a submit at or after the pause's expires_at is
// refused, even before the worker's timer has closed the pause (410).
var (
	ErrApprovalExpired  = errors.New("the approval expired: it takes no decision after its expires_at")
	ErrFormPauseExpired = errors.New("the form expired: it takes no submission after its expires_at")
)

// HITL is the pauses for people of every organization: approvals, form pauses and the
// forms a model drafts for them.
type HITL struct {
	core  *core.Core
	store Store
	log   *slog.Logger
	now   func() time.Time
	model func(baseURL, apiKey string) (agent.Model, error)
}

// New returns the pauses over st; model returns the client of an organization's model
// (form drafting).
func New(c *core.Core, st Store, model func(baseURL, apiKey string) (agent.Model, error)) *HITL {
	return &HITL{core: c, store: st, log: c.Logger(), now: c.Now, model: model}
}

// Register puts the pause kinds PbotApproval and PbotForm, their timers' jobs and their
// cancel hook on c.
func (e *HITL) Register(c *core.Core) {
	c.RegisterPause(ApprovalStep, core.PauseKind{Check: approvalProblems, Pause: e.requestApproval, Synopsis: "{approver_role, comment}"})
	c.RegisterPause(FormStep, core.PauseKind{Check: formProblems, Pause: e.requestForm, Synopsis: "{expected_keys}"})
	c.RegisterJob(JobApprovalExpire, e.expireApproval)
	c.RegisterJob(JobFormExpire, e.formTimer)
	c.RegisterJob(JobFormReminder, e.formTimer)
	c.OnCancel(e.closePause)
}

// ApprovalStep is the step type that asks a role for a decision.
const ApprovalStep = "PbotApproval"

// DefaultApproverRole is the role of an approval whose step names none.
const DefaultApproverRole = "approver"

// JobApprovalExpire decides an approval that reached its expires_at (payload {approval_id}).
const JobApprovalExpire = "approval_expire"

// Approval events (spec section 6).
const (
	EventApprovalRequested = "pbot_approval_requested"
	EventApprovalDecided   = "pbot_approval_decided"
)

// ApprovalExpiredComment is the comment of a decision made by expiry.
const ApprovalExpiredComment = "expired"

// requestApproval pauses a run at a PbotApproval step (core.PauseKind.Pause): in the step's
// transaction it records the approval, its expiry timer and its event.
func (e *HITL) requestApproval(ctx context.Context, stx storage.Tx, p *core.PauseCall) error {
	tx := Tx(stx)
	props, err := p.Properties(ctx)
	if err != nil {
		return err
	}
	run := p.Run
	a := svctype.Approval{ID: "apr_" + uuid.NewString(), OrgID: run.OrgID, RunID: run.ID, WorkflowID: run.WorkflowID,
		StepIndex: p.Index, ApproverRole: DefaultApproverRole, Status: svctype.ApprovalPending, CreatedAt: e.now().UTC()}
	if role, _ := props["approver_role"].(string); role != "" {
		a.ApproverRole = role
	}
	if v, ok := props["comment"]; ok && v != nil {
		a.Comment = fmt.Sprint(v)
	}
	payload := props["request_payload"]
	if payload == nil {
		payload = map[string]any{}
	}
	if a.RequestPayload, err = json.Marshal(payload); err != nil {
		return fmt.Errorf("request_payload: %w", err)
	}
	if secs, ok := svctype.Float(props["expires_in_seconds"]); ok && secs > 0 {
		at := a.CreatedAt.Add(time.Duration(secs * float64(time.Second)))
		a.ExpiresAt = &at
		payload, _ := json.Marshal(map[string]string{"approval_id": a.ID})
		// Due at expires_at: the engine's clock is its store's (store.WithNow).
		job := &svctype.Job{OrgID: a.OrgID, Kind: JobApprovalExpire, RunID: a.RunID, RunAt: at, Payload: payload}
		if err := tx.EnqueueJob(ctx, job); err != nil {
			return err
		}
	}
	if err := tx.CreateApproval(ctx, &a); err != nil {
		return err
	}
	p.Emit(
		p.Event(core.EventStepStarted, map[string]any{"run_id": run.ID, "step_index": p.Index, "step_type": p.Step.Type}),
		p.Event(EventApprovalRequested, map[string]any{
			"run_id": run.ID, "step_id": strconv.Itoa(p.Index), "workflow_id": run.WorkflowID,
			"comment": a.Comment, "request_payload": json.RawMessage(a.RequestPayload), "status": a.Status,
		}))
	p.SetInputSummary(props)
	p.AddEffect(svctype.Effect{Kind: "approval_requested", Target: a.ApproverRole,
		Detail: withExpiry(map[string]any{"approval_id": a.ID}, a.ExpiresAt)})
	return nil
}

// ApprovalDecision is a decision on an approval.
type ApprovalDecision struct {
	Approved bool
	Comment  string
	// By is who decided ({type: api|user|system, id}).
	By svctype.Actor
}

// PendingApproval returns the run's pending approval (core.ErrNotFound when it has none).
func (e *HITL) PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if _, err := e.store.GetRun(ctx, orgID, runID); err != nil {
		return nil, err
	}
	return e.store.PendingApproval(ctx, orgID, runID)
}

// Approval returns one of the organization's approvals by its id (core.ErrNotFound).
func (e *HITL) Approval(ctx context.Context, orgID, id string) (*svctype.Approval, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetApproval(ctx, orgID, id)
}

// ListApprovals pages the organization's approvals, newest first.
func (e *HITL) ListApprovals(ctx context.Context, orgID string, f storage.ApprovalFilter) (svctype.Page[svctype.Approval], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.Approval]{}, err
	}
	switch f.Status {
	case "", svctype.ApprovalPending, svctype.ApprovalApproved, svctype.ApprovalRejected, svctype.ApprovalCancelled:
	default:
		return svctype.Page[svctype.Approval]{}, &core.ValidationError{Problems: []core.Problem{{Pointer: "/status", Message: "one of pending, approved, rejected, cancelled"}}}
	}
	return e.store.ListApprovals(ctx, orgID, f)
}

// DecideApproval records a decision on the approval a run is paused at, at stepIndex, and
// resumes the run: approved, it continues with the next step; rejected, it ends as
// rejected (what earlier steps wrote stays). core.ErrNotFound for another organization's run;
// core.ErrConflict when the run is not paused at that step (or the approval was decided).
func (e *HITL) DecideApproval(ctx context.Context, orgID, runID string, stepIndex int, d ApprovalDecision) (*svctype.Approval, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if d.By.Type == "" {
		d.By.Type = "api"
	}
	var out *svctype.Approval
	var run *svctype.Run
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		var err error
		run, err = tx.GetRun(ctx, orgID, runID)
		if err != nil {
			return err
		}
		a, err := tx.PendingApproval(ctx, orgID, runID)
		if errors.Is(err, core.ErrNotFound) || (err == nil && (a.StepIndex != stepIndex || run.Status != svctype.RunPaused)) {
			return fmt.Errorf("%w: run %s is not waiting for a decision at step %d", core.ErrConflict, runID, stepIndex)
		}
		if err != nil {
			return err
		}
		if a.ExpiresAt != nil && !e.now().Before(*a.ExpiresAt) {
			return ErrApprovalExpired
		}
		if err := e.decide(ctx, stx, run, a, d); err != nil {
			return err
		}
		out = a
		return nil
	})
	if err != nil {
		return nil, err
	}
	if run.Status.Terminal() { // rejected
		e.core.TraceRunEnd(run)
	}
	e.core.Resumed(orgID, runID)
	return out, nil
}

// decide writes decision d on pending approval a of paused run, in stx.
func (e *HITL) decide(ctx context.Context, stx storage.Tx, run *svctype.Run, a *svctype.Approval, d ApprovalDecision) error {
	tx := Tx(stx)
	now := e.now().UTC()
	a.Approved, a.DecisionComment, a.DecidedBy, a.DecidedAt = &d.Approved, d.Comment, &d.By, &now
	a.Status = svctype.ApprovalRejected
	if d.Approved {
		a.Status = svctype.ApprovalApproved
	}
	if err := tx.DecideApproval(ctx, a); err != nil {
		return err
	}
	// The context keys: __approved, __comment, and the decisions by step index.
	decisions := map[string]any{}
	if raw, err := tx.GetContext(ctx, run.OrgID, run.ID, "__approval_decisions"); err != nil {
		return err
	} else if b, ok := raw["__approval_decisions"]; ok {
		_ = json.Unmarshal(b, &decisions)
	}
	decisions[strconv.Itoa(a.StepIndex)] = map[string]any{"approved": d.Approved, "comment": d.Comment}
	for k, v := range map[string]any{"__approved": d.Approved, "__comment": d.Comment, "__approval_decisions": decisions} {
		b, _ := json.Marshal(v)
		if err := tx.PutContext(ctx, run.OrgID, run.ID, k, b); err != nil {
			return err
		}
	}
	rec := svctype.StepRecord{RunID: run.ID, Index: a.StepIndex, Type: ApprovalStep, Status: svctype.StepCompleted, FinishedAt: &now,
		Output:    core.MustJSON(map[string]any{"approval_id": a.ID, "approved": d.Approved, "comment": d.Comment}),
		Decisions: []svctype.Decision{{Kind: "approval", Result: d.Approved, Reason: d.Comment}},
		Effects: []svctype.Effect{{Kind: "approval_decided", Target: a.ApproverRole,
			Detail: map[string]any{"approval_id": a.ID, "approved": d.Approved, "decided_by": d.By}}}}
	if err := tx.DeleteJobs(ctx, run.OrgID, JobApprovalExpire, run.ID, ""); err != nil {
		return err
	}
	r := core.Resume{Step: rec, Events: []svctype.Event{e.core.Event(run, EventApprovalDecided, map[string]any{
		"run_id": run.ID, "step_id": strconv.Itoa(a.StepIndex), "approval_id": a.ID, "approved": d.Approved,
		"comment": d.Comment, "decided_at": now,
	})}}
	if !d.Approved {
		r.End, r.Reason = svctype.RunRejected, fmt.Sprintf("step %d (%s): rejected: %s", a.StepIndex, ApprovalStep, d.Comment)
	}
	return e.core.ResumeTx(ctx, stx, run, r)
}

// expireApproval runs a JobApprovalExpire job: an approval still pending is decided as
// rejected, with comment "expired", by the system.
func (e *HITL) expireApproval(ctx context.Context, job *svctype.Job) error {
	var p struct {
		ApprovalID string `json:"approval_id"`
	}
	_ = json.Unmarshal(job.Payload, &p)
	var changed *svctype.Run
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.RenewJob(ctx, job, e.core.Lease()); err != nil {
			return err
		}
		a, err := tx.GetApproval(ctx, job.OrgID, p.ApprovalID)
		if errors.Is(err, core.ErrNotFound) {
			return tx.CompleteJob(ctx, job)
		}
		if err != nil {
			return err
		}
		run, err := tx.GetRun(ctx, job.OrgID, a.RunID)
		if err != nil {
			return err
		}
		if a.Status != svctype.ApprovalPending || run.Status != svctype.RunPaused {
			return tx.CompleteJob(ctx, job)
		}
		if err := tx.CompleteJob(ctx, job); err != nil {
			return err
		}
		changed = run
		return e.decide(ctx, stx, run, a, ApprovalDecision{Approved: false, Comment: ApprovalExpiredComment, By: svctype.Actor{Type: "system", ID: "expiry"}})
	})
	if err == nil && changed != nil {
		if changed.Status.Terminal() {
			e.core.TraceRunEnd(changed)
		}
		e.core.RunChanged(changed.OrgID, changed.ID)
	}
	return err
}

// validRole is a role as the gateway lets an organization give it to a person: 1-100
// characters, no surrounding spaces.
func validRole(s string) bool { return s != "" && len(s) <= 100 && strings.TrimSpace(s) == s }

// approvalProblems checks a PbotApproval step's properties at create time.
func approvalProblems(props map[string]any, at string) []core.Problem {
	var out []core.Problem
	if v, ok := props["approver_role"]; ok {
		if s, isString := v.(string); !isString || !validRole(s) {
			out = append(out, core.Problem{Pointer: at + "/approver_role", Message: "a role name: 1-100 characters, no surrounding spaces"})
		}
	}
	if v, ok := props["expires_in_seconds"]; ok {
		if n, isNumber := svctype.Float(v); !isNumber || n <= 0 || n > maxPauseSeconds {
			out = append(out, core.Problem{Pointer: at + "/expires_in_seconds", Message: "a number of seconds greater than 0, at most 315,360,000 (ten years)"})
		}
	}
	if v, ok := props["request_payload"]; ok {
		if _, isObject := v.(map[string]any); !isObject {
			out = append(out, core.Problem{Pointer: at + "/request_payload", Message: "an object (of @paths and values)"})
		}
	}
	return out
}

// closePause closes what a paused run being cancelled waits for (its pending approval, its
// open form pause) as cancelled, and removes their timers, in tx.
func (e *HITL) closePause(ctx context.Context, stx storage.Tx, run *svctype.Run, actor svctype.Actor) error {
	if run.Status != svctype.RunPaused {
		return nil
	}
	tx := Tx(stx)
	now := e.now().UTC()
	a, err := tx.PendingApproval(ctx, run.OrgID, run.ID)
	switch {
	case err == nil:
		a.Status, a.DecidedBy, a.DecidedAt = svctype.ApprovalCancelled, &actor, &now
		if err := tx.DecideApproval(ctx, a); err != nil {
			return err
		}
	case !errors.Is(err, core.ErrNotFound):
		return err
	}
	p, err := tx.FormPauseAt(ctx, run.OrgID, run.ID, run.Cursor.Step)
	switch {
	case err == nil && p.Status == svctype.FormPauseOpen:
		p.Status, p.UpdatedAt = svctype.FormPauseCancelled, now
		if err := tx.CloseFormPause(ctx, p); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, core.ErrNotFound):
		return err
	}
	for _, kind := range []string{JobApprovalExpire, JobFormExpire, JobFormReminder} {
		if err := tx.DeleteJobs(ctx, run.OrgID, kind, run.ID, ""); err != nil {
			return err
		}
	}
	return nil
}

// maxPauseSeconds bounds the timers of a pause (an approval's expiry, a form's TTL and
// reminders): ten years, far past any process, and far inside what a time.Duration holds.
const maxPauseSeconds = 10 * 365 * 24 * 3600
