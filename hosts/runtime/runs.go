package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// Run is a run as GET /runs lists it.
type Run struct {
	ID              string            `json:"id" doc:"Run id (run-<uuid>)."`
	WorkflowID      string            `json:"workflow_id"`
	WorkflowName    string            `json:"workflow_name" doc:"The workflow's current name; empty when the workflow was deleted."`
	WorkflowVersion int               `json:"workflow_version" doc:"The workflow version the run executes."`
	Status          svctype.RunStatus `json:"status"`
	Reason          string            `json:"reason,omitempty" doc:"Why the run ended, when it failed or was cancelled."`
	Input           json.RawMessage   `json:"input" doc:"The run's input object; a large input is a reference to GET /runs/{runId}/context/input."`
	CreatedAt       time.Time         `json:"created_at" doc:"When the run started."`
	UpdatedAt       time.Time         `json:"updated_at"`
	FinishedAt      *time.Time        `json:"finished_at,omitempty" doc:"When the run ended (completed, failed, cancelled, rejected)."`
	DurationMS      *int64            `json:"duration_ms,omitempty" doc:"finished_at - created_at in milliseconds, once the run ended."`
}

func runOf(r engine.ListedRun) Run {
	out := Run{
		ID: r.ID, WorkflowID: r.WorkflowID, WorkflowName: r.WorkflowName, WorkflowVersion: r.WorkflowVersion,
		Status: r.Status, Reason: r.Reason, Input: r.Input, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		FinishedAt: r.FinishedAt,
	}
	if r.FinishedAt != nil {
		ms := r.FinishedAt.Sub(r.CreatedAt).Milliseconds()
		out.DurationMS = &ms
	}
	return out
}

// CancelBody is the optional body of POST /runs/{runId}/cancel.
type CancelBody struct {
	Reason string `json:"reason,omitempty" maxLength:"2000" doc:"Why; carried by workflow_run_cancelled."`
}

// RunPath is the input of the routes under /runs/{runId}.
type RunPath struct {
	OrgParam
	RunID string `path:"runId" doc:"Run id."`
}

var runNotFound = failure{notFound: "run not found"}

func (s *Server) registerRuns() {
	o := op("get-run-status", http.MethodGet, "/runs/{runId}/status", "A run's status, context and steps", "Runs")
	o.Description = "With `?wait=<duration>` (a Go duration, at most 60s) the answer is held until the " +
		"run's status differs from `last_status` (default `running`): at once when it already does, " +
		"else as soon as a worker (in any process) commits the change, else at the deadline with the " +
		"status unchanged. A long poll holds no database connection while it waits."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, runNotFound, s.getRunStatus)

	o = op("get-run-evidence", http.MethodGet, "/runs/{runId}/evidence", "A run's durable record: steps, effects in order, decisions, counts", "Runs")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, runNotFound, s.getRunEvidence)

	o = op("list-runs", http.MethodGet, "/runs", "List the organization's runs, newest first", "Runs")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listRuns)

	o = op("list-run-events", http.MethodGet, "/runs/{runId}/events", "A run's events, oldest first", "Runs")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, failure{notFound: "run not found", in: "query"}, s.listRunEvents)

	o = op("cancel-run", http.MethodPost, "/runs/{runId}/cancel", "Cancel a running or paused run", "Runs")
	o.Description = "Ends the run as cancelled and emits workflow_run_cancelled with the reason and the actor " +
		"{type: api, id: X-Actor-Id or \"api\"}. A run that already ended answers 409."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict}
	register(s, o, failure{notFound: "run not found", conflict: "the run has already ended"}, s.cancelRun)
}

type getRunStatusInput struct {
	RunPath
	WaitParam
	LastStatus svctype.RunStatus `query:"last_status" doc:"With ?wait=: the status the caller last saw; the answer comes when the run's status differs from it (default running)."`
	StatusParams
}

func (s *Server) getRunStatus(ctx context.Context, in *getRunStatusInput) (*answer[*engine.RunStatusDoc], error) {
	wait, err := in.duration()
	if err != nil {
		return nil, err
	}
	opts := engine.StatusOptions{OmitContext: !in.Context}
	var doc *engine.RunStatusDoc
	if wait > 0 {
		doc, err = s.waitStatus(ctx, in.OrgID, in.RunID, svctype.RunStatus(orDefault(string(in.LastStatus), string(svctype.RunRunning))), wait, opts)
	} else {
		doc, err = s.eng.RunStatusWith(ctx, in.OrgID, in.RunID, opts)
	}
	if err != nil {
		return nil, err
	}
	return &answer[*engine.RunStatusDoc]{Body: doc}, nil
}

func (s *Server) getRunEvidence(ctx context.Context, in *RunPath) (*answer[*engine.Evidence], error) {
	ev, err := s.eng.Evidence(ctx, in.OrgID, in.RunID)
	if err != nil {
		return nil, err
	}
	return &answer[*engine.Evidence]{Body: ev}, nil
}

type listRunsInput struct {
	OrgParam
	Paging
	WorkflowID    string              `query:"workflow_id" maxLength:"200" doc:"Only runs of this workflow."`
	Status        []svctype.RunStatus `query:"status,explode" maxItems:"7" doc:"Only runs in one of these statuses: ?status=failed&status=paused."`
	CreatedAfter  string              `query:"created_after" maxLength:"64" format:"date-time" example:"2026-11-28T00:00:00Z" doc:"Only runs created at or after this time (RFC 3339)."`
	CreatedBefore string              `query:"created_before" maxLength:"64" format:"date-time" example:"2026-11-29T00:00:00Z" doc:"Only runs created before this time (RFC 3339)."`
	RunID         string              `query:"run_id" maxLength:"40" doc:"A run id, or its beginning (at least one character of a-z, 0-9, -): the runs whose id starts with it."`
	Key           string              `query:"key" maxLength:"256" doc:"Only runs whose workflow's search keys found this value in their input (a string, or a number's decimal text), exactly."`
}

func (s *Server) listRuns(ctx context.Context, in *listRunsInput) (*answer[List[Run]], error) {
	f := engine.RunFilter{WorkflowID: in.WorkflowID, RunID: in.RunID, Key: in.Key, ListOptions: in.options()}
	for _, st := range in.Status {
		f.Statuses = append(f.Statuses, st)
	}
	var err error
	if f.CreatedAfter, err = queryTime("created_after", in.CreatedAfter); err != nil {
		return nil, err
	}
	if f.CreatedBefore, err = queryTime("created_before", in.CreatedBefore); err != nil {
		return nil, err
	}
	page, err := s.eng.ListRunsNamed(ctx, in.OrgID, f)
	if err != nil {
		return nil, err
	}
	return &answer[List[Run]]{Body: listOf(page, runOf)}, nil
}

// queryTime parses a time query parameter: RFC 3339, or zero when it is absent; else 422.
func queryTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, newProblem(http.StatusUnprocessableEntity, codeValidation, "validation failed", &ProblemDetail{
			Location: "query." + name, Value: v,
			Message: "must be an RFC 3339 time, such as 2026-11-28T15:04:05Z",
		})
	}
	return t, nil
}

type listRunEventsInput struct {
	RunPath
	Paging
}

func (s *Server) listRunEvents(ctx context.Context, in *listRunEventsInput) (*answer[List[svctype.Event]], error) {
	page, err := s.eng.RunEvents(ctx, in.OrgID, in.RunID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.Event]]{Body: listOf(page, same[svctype.Event])}, nil
}

type cancelRunInput struct {
	RunPath
	ActorID string `header:"X-Actor-Id" maxLength:"200" doc:"Who cancels, recorded as the actor id (default \"api\")."`
	Body    *CancelBody
}

func (s *Server) cancelRun(ctx context.Context, in *cancelRunInput) (*answer[RunRef], error) {
	reason := ""
	if in.Body != nil {
		reason = in.Body.Reason
	}
	actor := engine.Actor{Type: "api", ID: orDefault(in.ActorID, "api")}
	run, err := s.eng.CancelRun(ctx, in.OrgID, in.RunID, reason, actor)
	if err != nil {
		return nil, err
	}
	return &answer[RunRef]{Body: RunRef{ID: run.ID, Status: run.Status}}, nil
}

// WaitParam is the ?wait= of the routes that can hold their answer until a run changes.
type WaitParam struct {
	Wait string `query:"wait" maxLength:"32" example:"30s" doc:"Hold the answer up to this long (a Go duration: 500ms, 30s; at most 60s)."`
}

// duration parses ?wait=: empty is no wait; anything but a Go duration in [0, 60s] is 422.
func (p WaitParam) duration() (time.Duration, error) {
	if p.Wait == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(p.Wait)
	if err != nil || d < 0 || d > engine.MaxWait {
		return 0, newProblem(http.StatusUnprocessableEntity, codeValidation, "validation failed", &ProblemDetail{
			Location: "query.wait", Value: p.Wait,
			Message: "must be a Go duration between 0s and 60s, such as 500ms or 30s",
		})
	}
	return d, nil
}

// waitStatus waits for the run's status to differ from last, then reads its status
// document. A client that goes away ends the wait at once. Its errors are the run's (404
// run not found) on every route that waits, execute's included.
func (s *Server) waitStatus(ctx context.Context, orgID, runID string, last svctype.RunStatus, wait time.Duration, opts engine.StatusOptions) (*engine.RunStatusDoc, error) {
	if _, err := s.eng.WaitRun(ctx, orgID, runID, last, wait); err != nil {
		return nil, s.fail(ctx, err, runNotFound)
	}
	doc, err := s.eng.RunStatusWith(ctx, orgID, runID, opts)
	if err != nil {
		return nil, s.fail(ctx, err, runNotFound)
	}
	return doc, nil
}
