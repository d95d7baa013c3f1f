package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/expr"
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

func init() {
	features = append(features, func(e *Engine) {
		e.jobHandlers[JobApprovalExpire] = e.expireApproval
	})
}

// pauseSignal is how a step that pauses its run stops the executor: the step's transaction
// commits its writes with the run paused.
type pauseSignal struct{ reason string }

func (p *pauseSignal) Error() string { return "paused: " + p.reason }

// requestApproval runs a PbotApproval step at index in tx: it records the approval and its
// event and returns a pauseSignal.
func (e *Engine) requestApproval(ctx context.Context, tx Tx, st *runState, step *svctype.Step, index int, vars expr.Vars, c *commit) error {
	if c.inner {
		return errors.New("a PbotApproval step cannot run inside a foreach element: put it at the top level")
	}
	resolved, err := e.eval.Resolve(svctype.WithOrg(ctx, st.run.OrgID), step.Properties, vars)
	if err != nil {
		return err
	}
	props, _ := resolved.(map[string]any)
	a := svctype.Approval{ID: "apr_" + uuid.NewString(), OrgID: st.run.OrgID, RunID: st.run.ID, WorkflowID: st.run.WorkflowID,
		StepIndex: index, ApproverRole: DefaultApproverRole, Status: svctype.ApprovalPending, CreatedAt: e.now().UTC()}
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
	if secs, ok := props["expires_in_seconds"].(float64); ok && secs > 0 {
		at := a.CreatedAt.Add(time.Duration(secs * float64(time.Second)))
		a.ExpiresAt = &at
		payload, _ := json.Marshal(map[string]string{"approval_id": a.ID})
		// run_at on the store's clock: the wait from the engine's now.
		job := &svctype.Job{OrgID: a.OrgID, Kind: JobApprovalExpire, RunID: a.RunID, RunAt: time.Now().Add(at.Sub(a.CreatedAt)), Payload: payload}
		if err := tx.EnqueueJob(ctx, job); err != nil {
			return err
		}
	}
	if err := tx.CreateApproval(ctx, &a); err != nil {
		return err
	}
	c.events = append(c.events,
		e.event(st.run, EventStepStarted, map[string]any{"run_id": st.run.ID, "step_index": index, "step_type": step.Type}),
		e.event(st.run, EventApprovalRequested, map[string]any{
			"run_id": st.run.ID, "step_id": strconv.Itoa(index), "workflow_id": st.run.WorkflowID,
			"comment": a.Comment, "request_payload": json.RawMessage(a.RequestPayload), "status": a.Status,
		}))
	c.rec.InputSummary = summarize(props)
	c.rec.Effects = append(c.rec.Effects, svctype.Effect{Kind: "approval_requested", Target: a.ApproverRole,
		Detail: map[string]any{"approval_id": a.ID, "expires_at": a.ExpiresAt}})
	return &pauseSignal{reason: "approval " + a.ID}
}

// pauseRun commits, in tx, the pause of a run at step index: the step in progress, the run
// paused with its cursor on the step, the step's events, and the end of the run's job.
func (e *Engine) pauseRun(ctx context.Context, tx Tx, job *svctype.Job, st *runState, c *commit) error {
	c.rec.Status = svctype.StepProcessing
	if err := tx.PutStep(ctx, st.run.OrgID, &c.rec); err != nil {
		return err
	}
	st.run.Status, st.run.UpdatedAt = svctype.RunPaused, e.now().UTC()
	if err := tx.UpdateRun(ctx, st.run); err != nil {
		return err
	}
	if err := e.appendEvents(ctx, tx, c.events, nil); err != nil {
		return err
	}
	return tx.CompleteJob(ctx, job)
}

// ApprovalDecision is a decision on an approval.
type ApprovalDecision struct {
	Approved bool
	Comment  string
	// By is who decided ({type: api|user|system, id}).
	By Actor
}

// PendingApproval returns the run's pending approval (ErrNotFound when it has none).
func (e *Engine) PendingApproval(ctx context.Context, orgID, runID string) (*svctype.Approval, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if _, err := e.store.GetRun(ctx, orgID, runID); err != nil {
		return nil, err
	}
	return e.store.PendingApproval(ctx, orgID, runID)
}

// ListApprovals pages the organization's approvals, newest first.
func (e *Engine) ListApprovals(ctx context.Context, orgID string, f ApprovalFilter) (svctype.Page[svctype.Approval], error) {
	if err := checkOrg(orgID); err != nil {
		return svctype.Page[svctype.Approval]{}, err
	}
	switch f.Status {
	case "", svctype.ApprovalPending, svctype.ApprovalApproved, svctype.ApprovalRejected, svctype.ApprovalCancelled:
	default:
		return svctype.Page[svctype.Approval]{}, &ValidationError{Problems: []Problem{{"/status", "one of pending, approved, rejected, cancelled"}}}
	}
	return e.store.ListApprovals(ctx, orgID, f)
}

// DecideApproval records a decision on the approval a run is paused at, at stepIndex, and
// resumes the run: approved, it continues with the next step; rejected, it ends as
// rejected (what earlier steps wrote stays). ErrNotFound for another organization's run;
// ErrConflict when the run is not paused at that step (or the approval was decided).
func (e *Engine) DecideApproval(ctx context.Context, orgID, runID string, stepIndex int, d ApprovalDecision) (*svctype.Approval, error) {
	if err := checkOrg(orgID); err != nil {
		return nil, err
	}
	if d.By.Type == "" {
		d.By.Type = "api"
	}
	var out *svctype.Approval
	err := e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		run, err := tx.GetRun(ctx, orgID, runID)
		if err != nil {
			return err
		}
		a, err := tx.PendingApproval(ctx, orgID, runID)
		if errors.Is(err, ErrNotFound) || (err == nil && (a.StepIndex != stepIndex || run.Status != svctype.RunPaused)) {
			return fmt.Errorf("%w: run %s is not waiting for a decision at step %d", ErrConflict, runID, stepIndex)
		}
		if err != nil {
			return err
		}
		if err := e.decide(ctx, tx, run, a, d); err != nil {
			return err
		}
		out = a
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.runChanged(orgID, runID)
	e.notify()
	return out, nil
}

// decide writes decision d on pending approval a of paused run, in tx.
func (e *Engine) decide(ctx context.Context, tx Tx, run *svctype.Run, a *svctype.Approval, d ApprovalDecision) error {
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
		Output:    mustJSON(map[string]any{"approval_id": a.ID, "approved": d.Approved, "comment": d.Comment}),
		Decisions: []svctype.Decision{{Kind: "approval", Result: d.Approved, Reason: d.Comment}},
		Effects: []svctype.Effect{{Kind: "approval_decided", Target: a.ApproverRole,
			Detail: map[string]any{"approval_id": a.ID, "approved": d.Approved, "decided_by": d.By}}}}
	if err := tx.PutStep(ctx, run.OrgID, &rec); err != nil {
		return err
	}
	evs := []svctype.Event{e.event(run, EventApprovalDecided, map[string]any{
		"run_id": run.ID, "step_id": strconv.Itoa(a.StepIndex), "approval_id": a.ID, "approved": d.Approved,
		"comment": d.Comment, "decided_at": now,
	})}
	if err := tx.DeleteJobs(ctx, run.OrgID, JobApprovalExpire, run.ID, ""); err != nil {
		return err
	}
	if d.Approved {
		run.Status, run.Cursor, run.UpdatedAt = svctype.RunRunning, svctype.Cursor{Step: a.StepIndex + 1}, now
		evs = append(evs, e.event(run, EventStepDone, map[string]any{"run_id": run.ID, "step_index": a.StepIndex}))
		if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: run.OrgID, Kind: svctype.JobRunStep, RunID: run.ID}); err != nil {
			return err
		}
	} else {
		e.finish(run, svctype.RunRejected, fmt.Sprintf("step %d (%s): rejected: %s", a.StepIndex, ApprovalStep, d.Comment))
		evs = append(evs, e.event(run, EventRunCompleted, map[string]any{
			"run_id": run.ID, "workflow_id": run.WorkflowID, "result": map[string]any{"status": svctype.RunRejected},
		}))
	}
	if err := tx.UpdateRun(ctx, run); err != nil {
		return err
	}
	return e.appendEvents(ctx, tx, evs, nil)
}

// expireApproval runs a JobApprovalExpire job: an approval still pending is decided as
// rejected, with comment "expired", by the system.
func (e *Engine) expireApproval(ctx context.Context, job *svctype.Job) error {
	var p struct {
		ApprovalID string `json:"approval_id"`
	}
	_ = json.Unmarshal(job.Payload, &p)
	var changed *svctype.Run
	err := e.store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.RenewJob(ctx, job, e.lease); err != nil {
			return err
		}
		a, err := tx.GetApproval(ctx, job.OrgID, p.ApprovalID)
		if errors.Is(err, ErrNotFound) {
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
		return e.decide(ctx, tx, run, a, ApprovalDecision{Approved: false, Comment: ApprovalExpiredComment, By: Actor{Type: "system", ID: "expiry"}})
	})
	if err == nil && changed != nil {
		e.runChanged(changed.OrgID, changed.ID)
	}
	return err
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// approvalProblems checks a PbotApproval step's properties at create time.
func approvalProblems(props map[string]any, at string) []Problem {
	var out []Problem
	if v, ok := props["approver_role"]; ok {
		if s, isString := v.(string); !isString || s == "" || len(s) > 100 {
			out = append(out, Problem{at + "/approver_role", "a role name: 1-100 characters"})
		}
	}
	if v, ok := props["expires_in_seconds"]; ok {
		if n, isNumber := v.(float64); !isNumber || n <= 0 || n > maxPauseSeconds {
			out = append(out, Problem{at + "/expires_in_seconds", "a number of seconds greater than 0, at most 315,360,000 (ten years)"})
		}
	}
	if v, ok := props["request_payload"]; ok {
		if _, isObject := v.(map[string]any); !isObject {
			out = append(out, Problem{at + "/request_payload", "an object (of @paths and values)"})
		}
	}
	return out
}

// closePause closes what a paused run being cancelled waits for (its pending approval, its
// open form pause) as cancelled, and removes their timers, in tx.
func (e *Engine) closePause(ctx context.Context, tx Tx, run *svctype.Run, actor Actor) error {
	now := e.now().UTC()
	a, err := tx.PendingApproval(ctx, run.OrgID, run.ID)
	switch {
	case err == nil:
		a.Status, a.DecidedBy, a.DecidedAt = svctype.ApprovalCancelled, &actor, &now
		if err := tx.DecideApproval(ctx, a); err != nil {
			return err
		}
	case !errors.Is(err, ErrNotFound):
		return err
	}
	p, err := tx.FormPauseAt(ctx, run.OrgID, run.ID, run.Cursor.Step)
	switch {
	case err == nil && p.Status == svctype.FormPauseOpen:
		p.Status, p.UpdatedAt = svctype.FormPauseCancelled, now
		if err := tx.CloseFormPause(ctx, p); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, ErrNotFound):
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
