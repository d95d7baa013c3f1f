package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
)

// A workflow's loop step with mode react runs an agent as an agent run of its own
// (agent-<uuid>): the step starts it in its transaction and waits, the run still running
// and the step processing (a core pause kind that keeps the run running). When the agent
// asks a person the workflow run is paused with it, and released when it is resumed; when
// the agent ends, its result {status, answer, confidence, iterations} is written to the
// run's context under result_key (else the step's outputKey) and the run goes on, whatever
// the agent's status: the workflow decides what a failed or over-budget agent means.

// reactKind is the pause kind of loop mode react.
func (a *Agents) reactKind() core.PauseKind {
	return core.PauseKind{Check: reactProblems, Pause: a.startReact, KeepRunning: true}
}

// reactInput reads a react step's (resolved) properties as an agent request.
func reactInput(props map[string]any) (Input, string, error) {
	b, err := json.Marshal(props)
	if err != nil {
		return Input{}, "", err
	}
	var p struct {
		Input
		MaxIterations int            `json:"max_iterations"`
		OnStuck       *agent.OnStuck `json:"on_stuck"`
		ResultKey     string         `json:"result_key"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return Input{}, "", err
	}
	in := p.Input
	in.Config.MaxIterations, in.Config.OnStuck = p.MaxIterations, p.OnStuck
	return in, p.ResultKey, nil
}

// reactProblems checks a react loop's properties at create time (its objective may hold
// @paths and doc: tokens, resolved at run time).
func reactProblems(props map[string]any, at string) []core.Problem {
	in, _, err := reactInput(props)
	if err != nil {
		return []core.Problem{{Pointer: at, Message: "not a react loop: " + err.Error()}}
	}
	if rk, ok := props["result_key"]; ok {
		if s, isString := rk.(string); !isString || s == "" {
			return []core.Problem{{Pointer: at + "/result_key", Message: "must be a context key"}}
		}
	}
	_, err = check(in)
	var ve *core.ValidationError
	if err == nil || !asValidation(err, &ve) {
		return nil
	}
	out := make([]core.Problem, 0, len(ve.Problems))
	for _, p := range ve.Problems {
		ptr := p.Pointer
		if strings.HasPrefix(ptr, "/config/") && !strings.HasPrefix(ptr, "/config/llm_budget") {
			ptr = strings.TrimPrefix(ptr, "/config") // max_iterations and on_stuck are the step's own properties
		}
		out = append(out, core.Problem{Pointer: at + ptr, Message: p.Message})
	}
	return out
}

func asValidation(err error, ve **core.ValidationError) bool {
	v, ok := err.(*core.ValidationError)
	if ok {
		*ve = v
	}
	return ok
}

var docToken = regexp.MustCompile(`doc:doc_[A-Za-z0-9-]+(?:@[0-9]+)?`)

// expandDocs replaces each doc: token of s with the rows it names, as JSON.
func (a *Agents) expandDocs(ctx context.Context, orgID, s string) (string, error) {
	var failed error
	out := docToken.ReplaceAllStringFunc(s, func(tok string) string {
		if failed != nil {
			return tok
		}
		rows, err := a.core.Evaluator().Resolve(svctype.WithOrg(ctx, orgID), tok, nil)
		if err != nil {
			failed = fmt.Errorf("objective %s: %w", tok, err)
			return tok
		}
		b, err := json.Marshal(rows)
		if err != nil {
			failed = err
			return tok
		}
		return string(b)
	})
	return out, failed
}

// startReact starts a react step's agent run in the step's transaction.
func (a *Agents) startReact(ctx context.Context, stx storage.Tx, p *core.PauseCall) error {
	props, err := p.Properties(ctx)
	if err != nil {
		return err
	}
	in, resultKey, err := reactInput(props)
	if err != nil {
		return err
	}
	if in.Objective, err = a.expandDocs(ctx, p.Run.OrgID, in.Objective); err != nil {
		return err
	}
	c, err := check(in)
	if err != nil {
		return err
	}
	if resultKey == "" {
		resultKey = p.Step.OutputKey
	}
	stored := struct {
		Input
		ResultKey string `json:"result_key,omitempty"`
	}{c.in, resultKey}
	cfgJSON, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	state, err := json.Marshal(agent.Start(c.cfg))
	if err != nil {
		return err
	}
	now := a.now().UTC()
	r := &svctype.AgentRun{ID: "agent-" + uuid.NewString(), OrgID: p.Run.OrgID, ParentRunID: p.Run.ID, ParentStep: p.Index,
		Status: svctype.AgentStatus(agent.StatusRunning), Config: cfgJSON, State: state, CreatedAt: now, UpdatedAt: now}
	tx := Tx(stx)
	if err := tx.CreateAgentRun(ctx, r); err != nil {
		return err
	}
	if err := tx.EnqueueJob(ctx, &svctype.Job{OrgID: r.OrgID, Kind: JobTurn, RunID: r.ID}); err != nil {
		return err
	}
	p.Emit(
		p.Event(core.EventStepStarted, map[string]any{"run_id": p.Run.ID, "step_index": p.Index, "step_type": p.Step.Type}),
		p.Event(core.EventLoopStarted, map[string]any{"run_id": p.Run.ID, "step_id": strconv.Itoa(p.Index), "step_index": p.Index,
			"mode": LoopMode, "total_items": 0, "agent_run_id": r.ID}))
	p.SetInputSummary(map[string]any{"objective": clip(in.Objective, 500), "tools": len(c.decls), "model": c.cfg.Model})
	p.AddEffect(svctype.Effect{Kind: "agent_run_started", Target: r.ID})
	return nil
}

// resultKeyOf is the context key a workflow agent's result goes to.
func resultKeyOf(r *svctype.AgentRun) string {
	var c struct {
		ResultKey string `json:"result_key"`
	}
	_ = json.Unmarshal(r.Config, &c)
	return c.ResultKey
}

// parentTx tells a workflow agent's run of the agent's new status, in the agent's
// checkpoint transaction: paused with it, released, or resumed past the step with the
// result. It reports whether the parent run changed.
func (a *Agents) parentTx(ctx context.Context, stx storage.Tx, r *svctype.AgentRun, st *agent.State, prev agent.Status) (bool, error) {
	tx := Tx(stx)
	parent, err := tx.GetRun(ctx, r.OrgID, r.ParentRunID)
	if err != nil {
		return false, err
	}
	if parent.Status.Terminal() {
		return false, nil // cancelled meanwhile: nothing waits for the result
	}
	switch {
	case st.Status == agent.StatusPaused:
		return true, a.core.HoldTx(ctx, stx, parent, true)
	case st.Status == agent.StatusRunning && prev == agent.StatusPaused:
		return true, a.core.HoldTx(ctx, stx, parent, false)
	case !st.Status.Ended():
		return false, nil
	}
	res := st.Result()
	out, _ := json.Marshal(res)
	if key := resultKeyOf(r); key != "" {
		if err := tx.PutContext(ctx, r.OrgID, parent.ID, key, out); err != nil {
			return false, err
		}
	}
	now := a.now().UTC()
	return true, a.core.ResumeTx(ctx, stx, parent, core.Resume{Step: svctype.StepRecord{RunID: parent.ID, Index: r.ParentStep,
		Type: core.LoopStep, Status: svctype.StepCompleted, FinishedAt: &now, Output: out,
		Effects: []svctype.Effect{{Kind: "agent_run_" + string(st.Status), Target: r.ID,
			Detail: map[string]any{"iterations": st.Iterations, "reason": st.Reason}}}}})
}

// cancelChildren cancels the agent runs of a workflow run being cancelled (a core cancel
// hook): they stop, and their jobs go.
func (a *Agents) cancelChildren(ctx context.Context, stx storage.Tx, run *svctype.Run, _ svctype.Actor) error {
	tx := Tx(stx)
	kids, err := tx.AgentRunsOf(ctx, run.OrgID, run.ID)
	if err != nil {
		return err
	}
	for i := range kids {
		k, err := tx.GetAgentRun(ctx, run.OrgID, kids[i].ID)
		if err != nil {
			return err
		}
		if agent.Status(k.Status).Ended() {
			continue
		}
		var st agent.State
		if err := json.Unmarshal(k.State, &st); err != nil {
			return err
		}
		st.Status, st.Reason = agent.StatusCancelled, "its workflow run was cancelled"
		if k.State, err = json.Marshal(&st); err != nil {
			return err
		}
		now := a.now().UTC()
		k.Status, k.Reason, k.UpdatedAt, k.FinishedAt = svctype.AgentStatus(st.Status), st.Reason, now, &now
		if err := tx.SaveAgentRun(ctx, k); err != nil {
			return err
		}
		if err := tx.DeleteJobs(ctx, run.OrgID, JobTurn, k.ID, ""); err != nil {
			return err
		}
		if err := a.statusEvents(ctx, stx, k, &st); err != nil {
			return err
		}
	}
	return nil
}
