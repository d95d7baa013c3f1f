package runtime

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// RetryBody is the body of POST /runs/{runId}/retry.
type RetryBody struct {
	Reason string `json:"reason" minLength:"1" maxLength:"2000" doc:"Why the run is retried; kept in the new run's evidence (retry.reason) and carried by workflow_run_retried."`
}

// RetriedRun is the answer of POST /runs/{runId}/retry: the new run.
type RetriedRun struct {
	ID              string            `json:"id" doc:"The new run's id."`
	Status          svctype.RunStatus `json:"status" doc:"running: a worker executes it."`
	RetryOf         string            `json:"retry_of" doc:"The failed run it retries."`
	FromStep        int               `json:"from_step" doc:"The top-level step it starts at: the one that failed."`
	WorkflowID      string            `json:"workflow_id"`
	WorkflowVersion int               `json:"workflow_version" doc:"The failed run's version, whatever the workflow's current one."`
}

// RunOperationFilter is the runs a run operation matches: the runs listing's filter.
type RunOperationFilter struct {
	WorkflowID    string              `json:"workflow_id,omitempty" maxLength:"200" doc:"Only runs of this workflow."`
	Status        []svctype.RunStatus `json:"status,omitempty" maxItems:"7" doc:"Only runs in one of these statuses."`
	CreatedAfter  *time.Time          `json:"created_after,omitempty" doc:"Only runs created at or after this time."`
	CreatedBefore *time.Time          `json:"created_before,omitempty" doc:"Only runs created before this time."`
	RunID         string              `json:"run_id,omitempty" maxLength:"40" doc:"A run id, or its beginning."`
	Key           string              `json:"key,omitempty" maxLength:"256" doc:"Only runs whose workflow's search keys found this value in their input."`
}

// runFilterOf is the engine's filter for f (without paging).
func runFilterOf(f RunOperationFilter) engine.RunFilter {
	out := engine.RunFilter{WorkflowID: f.WorkflowID, RunID: f.RunID, Key: f.Key}
	for _, st := range f.Status {
		out.Statuses = append(out.Statuses, st)
	}
	if f.CreatedAfter != nil {
		out.CreatedAfter = *f.CreatedAfter
	}
	if f.CreatedBefore != nil {
		out.CreatedBefore = *f.CreatedBefore
	}
	return out
}

// operationFilterOf is f as an operation's answer shows it.
func operationFilterOf(f engine.RunFilter) RunOperationFilter {
	out := RunOperationFilter{WorkflowID: f.WorkflowID, RunID: f.RunID, Key: f.Key}
	for _, st := range f.Statuses {
		out.Status = append(out.Status, st)
	}
	if !f.CreatedAfter.IsZero() {
		out.CreatedAfter = &f.CreatedAfter
	}
	if !f.CreatedBefore.IsZero() {
		out.CreatedBefore = &f.CreatedBefore
	}
	return out
}

// RunOperationBody is the body of POST /run-operations.
type RunOperationBody struct {
	Action svctype.RunOperationAction `json:"action" enum:"cancel,retry" doc:"cancel: cancel each run that has not ended; retry: retry each failed run from its failed step."`
	Filter RunOperationFilter         `json:"filter" doc:"The runs to act on: those that match it when the operation is created."`
	Reason string                     `json:"reason" minLength:"1" maxLength:"2000" doc:"Why; recorded on each run as its cancel's or retry's reason."`
	DryRun bool                       `json:"dry_run,omitempty" doc:"Only count the runs it would touch (matched); nothing is done or kept."`
}

// RunOperation is a run operation as it stands.
type RunOperation struct {
	ID      string                      `json:"id,omitempty" doc:"Operation id (rop-<uuid>); absent from a dry run's answer."`
	Action  svctype.RunOperationAction  `json:"action"`
	Filter  RunOperationFilter          `json:"filter"`
	Reason  string                      `json:"reason"`
	Actor   engine.Actor                `json:"actor"`
	Status  svctype.RunOperationStatus  `json:"status" doc:"pending until a worker counts its runs (matched), running while it works through them, then completed."`
	DryRun  bool                        `json:"dry_run,omitempty" doc:"This answer only counted the runs."`
	Matched int                         `json:"matched" doc:"Runs the filter matched when the operation was created."`
	Done    int                         `json:"done" doc:"Runs cancelled or retried."`
	Skipped int                         `json:"skipped" doc:"Runs that needed nothing by the time the worker reached them: ended, retried already, or no longer matching."`
	Failed  int                         `json:"failed" doc:"Runs the action failed on (errors says why, for the first 100)."`
	Errors  []svctype.RunOperationError `json:"errors" nullable:"false"`
	// Times.
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

func runOperationOf(op svctype.RunOperation) RunOperation {
	out := RunOperation{ID: op.ID, Action: op.Action, Reason: op.Reason, Actor: op.Actor, Status: op.Status,
		Matched: op.Matched, Done: op.Done, Skipped: op.Skipped, Failed: op.Failed, Errors: op.Errors,
		CreatedAt: op.CreatedAt, UpdatedAt: op.UpdatedAt, FinishedAt: op.FinishedAt}
	if out.Errors == nil {
		out.Errors = []svctype.RunOperationError{}
	}
	if f, err := engine.RunOperationFilter(&op); err == nil {
		out.Filter = operationFilterOf(f)
	}
	return out
}

var runOperationNotFound = failure{notFound: "run operation not found"}

func (s *Server) registerRunOps() {
	o := op("retry-run", http.MethodPost, "/runs/{runId}/retry", "Retry a failed run from the step that failed", "Runs")
	o.DefaultStatus = http.StatusCreated
	o.Description = "Starts a new run (`retry_of` names the failed one; the failed run's evidence gains `retried_by`) " +
		"at the step that failed, with the failed run's workflow version and input. The steps before it are not run " +
		"again: their outputs are reused, so no table row is written and no outside call is made a second time. " +
		"A foreach that failed at element k goes on at k. The reason and the actor are kept in the new run's evidence " +
		"(`retry`) and carried by workflow_run_retried. A run that did not fail, or was retried already, answers 409; " +
		"GET /runs/{runId}/retry-plan says beforehand what the retry will run again."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity}
	register(s, o, failure{notFound: "run not found", conflictSaid: true}, s.retryRun)

	o = op("get-run-retry-plan", http.MethodGet, "/runs/{runId}/retry-plan", "What a retry of a failed run will run again, and what it reaches outside", "Runs")
	o.Description = "The step the retry starts at (and the element, for a foreach), the steps it reuses, and every step " +
		"it runs again (inside loops and onFalse branches too) with the outside calls each makes: http actions with " +
		"method and host, database queries, model calls, agents and their tools; a step that waits for a person says so. " +
		"409 as POST /runs/{runId}/retry."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, failure{notFound: "run not found", conflictSaid: true}, s.retryPlan)

	o = op("create-run-operation", http.MethodPost, "/run-operations", "Cancel or retry every run a filter matches", "Runs")
	o.DefaultStatus = http.StatusAccepted
	o.Description = "Answers 202 with the operation (status pending); a worker counts the runs the filter matches now " +
		"(runs started later are not touched) and acts on them in batches of 100, keeping its progress " +
		"(GET /run-operations/{runOperationId}). A run that needs nothing by then (ended, retried already) is skipped, " +
		"so an operation whose worker stopped midway acts on no run twice. With `dry_run: true` the answer is 200 " +
		"with only `matched`, and nothing is done or kept."
	o.Responses = map[string]*huma.Response{
		"200": {Description: "A dry run: how many runs the operation would touch."},
	}
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusUnprocessableEntity}
	register(s, o, failure{}, s.createRunOperation)

	o = op("get-run-operation", http.MethodGet, "/run-operations/{runOperationId}", "A run operation's progress and outcome", "Runs")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, runOperationNotFound, s.getRunOperation)

	o = op("list-run-operations", http.MethodGet, "/run-operations", "The organization's run operations, newest first", "Runs")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listRunOperations)
}

type retryRunInput struct {
	RunPath
	ActorID string `header:"X-Actor-Id" maxLength:"200" doc:"Who retries, recorded as the actor id (default \"api\"); a person the gateway vouches for (X-Svc-Identity, the console's) is recorded as {type: user, id: their email} instead."`
	IdentityHeader
	Body RetryBody
}

// actorOf is who acts: the person the gateway vouches for, else the caller's X-Actor-Id.
func (s *Server) actorOf(orgID, identity, actorID string) engine.Actor {
	if who := s.person(orgID, identity); who != "" {
		return engine.Actor{Type: "user", ID: who}
	}
	return engine.Actor{Type: "api", ID: orDefault(actorID, "api")}
}

func (s *Server) retryRun(ctx context.Context, in *retryRunInput) (*answer[RetriedRun], error) {
	actor := s.actorOf(in.OrgID, in.Identity, in.ActorID)
	run, err := s.eng.RetryRun(ctx, in.OrgID, in.RunID, in.Body.Reason, actor)
	if err != nil {
		return nil, err
	}
	return &answer[RetriedRun]{Body: RetriedRun{ID: run.ID, Status: run.Status, RetryOf: in.RunID, FromStep: run.Cursor.Step,
		WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion}}, nil
}

func (s *Server) retryPlan(ctx context.Context, in *RunPath) (*answer[*engine.RetryPlan], error) {
	plan, err := s.eng.RetryPlan(ctx, in.OrgID, in.RunID)
	if err != nil {
		return nil, err
	}
	return &answer[*engine.RetryPlan]{Body: plan}, nil
}

type createRunOperationInput struct {
	OrgParam
	ActorID string `header:"X-Actor-Id" maxLength:"200" doc:"Who asks, recorded as the actor id (default \"api\"); a person the gateway vouches for is recorded as {type: user, id: their email}."`
	IdentityHeader
	Body RunOperationBody
}

type runOperationAnswer struct {
	Status int
	Body   RunOperation
}

func (s *Server) createRunOperation(ctx context.Context, in *createRunOperationInput) (*runOperationAnswer, error) {
	actor := s.actorOf(in.OrgID, in.Identity, in.ActorID)
	op, err := s.eng.CreateRunOperation(ctx, in.OrgID, engine.RunOperationInput{
		Action: in.Body.Action, Reason: in.Body.Reason, DryRun: in.Body.DryRun,
		Filter: runFilterOf(in.Body.Filter),
	}, actor)
	if err != nil {
		return nil, err
	}
	out := &runOperationAnswer{Status: http.StatusAccepted, Body: runOperationOf(*op)}
	if in.Body.DryRun {
		out.Status, out.Body.DryRun = http.StatusOK, true
	}
	return out, nil
}

type runOperationPath struct {
	OrgParam
	OperationID string `path:"runOperationId" maxLength:"200" doc:"Operation id."`
}

func (s *Server) getRunOperation(ctx context.Context, in *runOperationPath) (*answer[RunOperation], error) {
	op, err := s.eng.GetRunOperation(ctx, in.OrgID, in.OperationID)
	if err != nil {
		return nil, err
	}
	return &answer[RunOperation]{Body: runOperationOf(*op)}, nil
}

type listRunOperationsInput struct {
	OrgParam
	Paging
}

func (s *Server) listRunOperations(ctx context.Context, in *listRunOperationsInput) (*answer[List[RunOperation]], error) {
	page, err := s.eng.ListRunOperations(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[RunOperation]]{Body: listOf(page, runOperationOf)}, nil
}
