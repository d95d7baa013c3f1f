package core

import (
	"context"
	"strconv"

	"github.com/svcflow/svcflow/engine/svctype"
)

// CallPlanner describes the outside calls a step of a type it knows makes (ok false for a
// type it does not know): features register one for their step types (an action's HTTP
// target, an agent's model), so that a retry's plan can say what running a step again
// reaches outside.
type CallPlanner func(ctx context.Context, orgID string, step *svctype.Step) (calls []svctype.PlannedCall, ok bool, err error)

// RegisterCallPlanner adds a planner PlanSteps asks, in registration order.
func (e *Core) RegisterCallPlanner(p CallPlanner) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.planners = append(e.reg.planners, p)
}

// DeliveryPlanner describes the deliveries the events named would cause in an
// organization (a webhook feature's catch-all and registrations), as outside calls of kind
// webhook: what a run emits reaches outside too, whatever its steps.
type DeliveryPlanner func(ctx context.Context, orgID string, events []string) ([]svctype.PlannedCall, error)

// RegisterDeliveryPlanner adds a planner PlanDeliveries asks.
func (e *Core) RegisterDeliveryPlanner(p DeliveryPlanner) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	e.reg.deliveryPlanners = append(e.reg.deliveryPlanners, p)
}

// PlanDeliveries lists the deliveries the events named would cause in orgID, from every
// registered DeliveryPlanner; none without one (an engine with no webhooks).
func (e *Core) PlanDeliveries(ctx context.Context, orgID string, events []string) ([]svctype.PlannedCall, error) {
	e.reg.mu.RLock()
	planners := e.reg.deliveryPlanners
	e.reg.mu.RUnlock()
	out := []svctype.PlannedCall{}
	for _, p := range planners {
		calls, err := p(ctx, orgID, events)
		if err != nil {
			return nil, err
		}
		out = append(out, calls...)
	}
	return out, nil
}

func (e *Core) callPlanners() []CallPlanner {
	e.reg.mu.RLock()
	defer e.reg.mu.RUnlock()
	return e.reg.planners
}

// PlanSteps lists the steps a run started at cursor at runs, in definition order: the
// top-level steps from at.Step on, the steps of their loops and onFalse branches, each
// with the outside calls it makes. A foreach at the cursor says from which element.
func (e *Core) PlanSteps(ctx context.Context, run *svctype.Run, at svctype.Cursor) ([]svctype.PlannedStep, error) {
	def, err := e.definition(run)
	if err != nil {
		return nil, err
	}
	var out []svctype.PlannedStep
	for i := max(at.Step, 0); i < len(def.Actions); i++ {
		var from *int
		if i == at.Step && at.Loop != nil {
			n := at.Loop.Next
			from = &n
		}
		if out, err = e.planStep(ctx, run.OrgID, &def.Actions[i], i, strconv.Itoa(i), from, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *Core) planStep(ctx context.Context, orgID string, step *svctype.Step, index int, path string, from *int, out []svctype.PlannedStep) ([]svctype.PlannedStep, error) {
	ps := svctype.PlannedStep{Path: path, Index: index, Type: step.Type, Calls: []svctype.PlannedCall{}, FromElement: from}
	if step.Type != LoopStep { // a loop of another mode (an agent's) runs as a pause kind, for no person
		_, ps.Pauses = e.stepPause(step)
	}
	found := false
	for _, p := range e.callPlanners() {
		calls, ok, err := p(ctx, orgID, step)
		if err != nil {
			return nil, err
		}
		if ok {
			ps.Calls, found = append(ps.Calls, calls...), true
			break
		}
	}
	if !found && step.Type != LoopStep {
		kind, ok, err := e.lookupKind(ctx, nil, orgID, step.Type)
		if err != nil {
			return nil, err
		}
		if ok && kind.IO != nil {
			ps.Calls = append(ps.Calls, svctype.PlannedCall{Kind: "outside", Detail: step.Type})
		}
	}
	out = append(out, ps)
	if mode, _ := step.Properties["mode"].(string); step.Type == LoopStep && mode == loopForeach {
		subs, err := loopSteps(step.Properties)
		if err != nil {
			return nil, err
		}
		for k := range subs {
			if out, err = e.planStep(ctx, orgID, &subs[k], index, path+"/steps/"+strconv.Itoa(k), nil, out); err != nil {
				return nil, err
			}
		}
	}
	if step.OnFalse != nil {
		return e.planStep(ctx, orgID, step.OnFalse, index, path+"/onFalse", nil, out)
	}
	return out, nil
}
