package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/agent/llm"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// turn is one claim of an agent run's job: the loop runs until the agent ends, pauses or
// uses its slice, every model and tool call made as an outside call with an intent, every
// checkpoint saved in a transaction fenced by the job's lease.
type turn struct {
	a     *Agents
	job   *svctype.Job
	run   *svctype.AgentRun
	st    *agent.State
	model agent.Model // the organization's, made on the first call
}

func (a *Agents) turnJob(ctx context.Context, job *svctype.Job) error {
	complete := func() error {
		return a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error { return Tx(stx).CompleteJob(ctx, job) })
	}
	r, err := a.store.GetAgentRun(ctx, job.OrgID, job.RunID)
	if errors.Is(err, core.ErrNotFound) {
		return complete()
	}
	if err != nil {
		return err
	}
	if agent.Status(r.Status) != agent.StatusRunning {
		return complete()
	}
	var st agent.State
	if err := json.Unmarshal(r.State, &st); err != nil {
		return fmt.Errorf("agent run %s: stored state: %w", r.ID, err)
	}
	t := &turn{a: a, job: job, run: r, st: &st}
	var in Input
	var c *checked
	if err = json.Unmarshal(r.Config, &in); err == nil {
		c, err = check(in)
	}
	if err != nil {
		st.Status, st.Reason = agent.StatusFailed, "the stored request is not valid: "+err.Error()
		return t.save(ctx, &st)
	}
	tb, err := a.resolveTools(ctx, t, c.decls)
	if err != nil {
		return err
	}
	tb.account = in.OAuthAccount
	claimed := time.Now()
	loop := &agent.Loop{Model: t, Tools: tb, Checkpoints: agent.CheckpointFunc(t.save), Now: a.now, Tokens: llm.Tokens,
		Yield: func() bool { return time.Since(claimed) >= slice }}
	if err := loop.Run(ctx, c.cfg, &st); err != nil {
		return err
	}
	if st.Status != agent.StatusRunning {
		return nil // its last checkpoint completed the job
	}
	// The slice is spent: back to the queue, behind the jobs due now.
	job.RunAt = time.Time{}
	if err := a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error { return Tx(stx).RenewJob(ctx, job, 0) }); err != nil {
		return err
	}
	a.core.Notify()
	return nil
}

// key is the idempotency key of the current iteration's call of kind (model, tool).
func (t *turn) key(kind string) string {
	return fmt.Sprintf("%s/%d/%s", t.run.ID, t.st.Iterations+1, kind)
}

// Chat is the model call of the current iteration, as an outside call.
func (t *turn) Chat(ctx context.Context, req agent.Request) (*agent.Response, error) {
	if t.model == nil {
		key, err := t.a.core.Secret(ctx, t.run.OrgID, orgconfig.LLMAPIKey)
		if errors.Is(err, core.ErrNotFound) || errors.Is(err, orgconfig.ErrNoMasterKey) {
			return nil, fmt.Errorf("%w: the organization has no org config key %s", ErrNoModelKey, orgconfig.LLMAPIKey)
		}
		if err != nil {
			return nil, err
		}
		base, err := t.a.core.Secret(ctx, t.run.OrgID, orgconfig.LLMBaseURL)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return nil, err
		}
		if t.model, err = t.a.model(base, key); err != nil {
			return nil, err
		}
	}
	var resp *agent.Response
	var callErr error
	if err := t.outside(ctx, t.key("model"), func(ctx context.Context) { resp, callErr = t.model.Chat(ctx, req) }); err != nil {
		return nil, err
	}
	return resp, callErr
}

// outside makes call as the run core makes every call to another system: its intent
// recorded first (with the job's lease checked), then the call with the worker's slot given
// back, in the I/O pool. A call whose intent was opened MaxCallTries times without its
// result being saved is not made again: outcome unknown.
func (t *turn) outside(ctx context.Context, key string, call func(ctx context.Context)) error {
	var intent *svctype.CallIntent
	err := t.a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.RenewJob(ctx, t.job, t.a.core.Lease()); err != nil {
			return err
		}
		var err error
		_, intent, err = tx.OpenCall(ctx, t.run.OrgID, t.run.ID, key, t.job.LeaseToken, t.a.now())
		return err
	})
	if err != nil {
		return err
	}
	if intent.Tries > core.MaxCallTries {
		return fmt.Errorf("%w: %s was made %d times by workers that stopped before saving its result; not calling again",
			core.ErrOutcomeUnknown, key, intent.Tries-1)
	}
	return t.a.core.OutsideCall(ctx, t.run.OrgID, core.DefaultCallTimeout, call)
}

// save is the loop's checkpoint: the state, the run's status, the calls' intents closed,
// the events of a status change, and the end of the job when the run ends or pauses, in
// one transaction fenced by the job's lease.
func (t *turn) save(ctx context.Context, st *agent.State) error {
	prev := agent.Status(t.run.Status)
	next := *t.run
	var err error
	if next.State, err = json.Marshal(st); err != nil {
		return err
	}
	now := t.a.now().UTC()
	next.Status, next.Reason, next.Iterations, next.UpdatedAt = svctype.AgentStatus(st.Status), st.Reason, st.Iterations, now
	if st.Status.Ended() {
		next.FinishedAt = &now
	}
	parentChanged := false
	err = t.a.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.RenewJob(ctx, t.job, t.a.core.Lease()); err != nil {
			return err
		}
		if err := tx.SaveAgentRun(ctx, &next); err != nil {
			return err
		}
		if err := tx.CloseCalls(ctx, next.OrgID, next.ID); err != nil {
			return err
		}
		if st.Status != prev {
			if err := t.a.statusEvents(ctx, stx, &next, st); err != nil {
				return err
			}
			if next.ParentRunID != "" {
				var err error
				if parentChanged, err = t.a.parentTx(ctx, stx, &next, st, prev); err != nil {
					return err
				}
			}
		}
		if st.Status != agent.StatusRunning {
			return tx.CompleteJob(ctx, t.job)
		}
		return nil
	})
	if err != nil {
		return err
	}
	*t.run = next
	if parentChanged {
		t.a.core.Resumed(next.OrgID, next.ParentRunID)
	}
	return nil
}

// statusEvents are the events of an agent run entering st.Status.
func (a *Agents) statusEvents(ctx context.Context, stx storage.Tx, r *svctype.AgentRun, st *agent.State) error {
	payload := map[string]any{"agent_run_id": r.ID, "status": st.Status, "iterations": st.Iterations}
	switch st.Status {
	case agent.StatusCompleted:
		payload["final_answer"], payload["confidence"] = st.Answer, st.Confidence
		return a.emit(ctx, stx, r, EventCompleted, payload)
	case agent.StatusPaused:
		payload["paused_reason"] = st.Reason
		if err := a.emit(ctx, stx, r, EventPaused, payload); err != nil {
			return err
		}
		if r.ParentRunID != "" {
			return nil // a workflow's agent: its run is paused with it
		}
		p := st.Pause
		if p == nil {
			p = &agent.PauseRequest{Question: st.Reason}
		}
		options := p.Options
		if options == nil {
			options = []string{}
		}
		return a.emit(ctx, stx, r, EventApprovalRequested, map[string]any{
			"source": "standalone_agent", "agent_run_id": r.ID, "run_id": nil, "step_id": nil,
			"question": p.Question, "options": options, "context_summary": p.ContextSummary, "urgency": p.Urgency,
			"status": svctype.ApprovalPending,
		})
	case agent.StatusFailed, agent.StatusBudgetExceeded:
		return a.emit(ctx, stx, r, EventFailed, payload)
	case agent.StatusCancelled:
		return a.emit(ctx, stx, r, EventCancelled, payload)
	}
	return nil
}
