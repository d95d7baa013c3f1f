package runtime

import (
	"context"
	"net/http"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// FormSubmitBody is the body of POST /forms/{runId}/{stepId}/submit.
type FormSubmitBody struct {
	Data Object `json:"data" doc:"The submission, flat: {<key>: <value>}. Every expected key is required; values are checked against the pause's form_schema_v1."`
}

// FormPath names a run's form pause.
type FormPath struct {
	RunPath
	StepID int `path:"stepId" minimum:"0" doc:"The zero-based index of the PbotForm step."`
}

var formNotFound = failure{notFound: "run or form not found",
	conflict: "the form is not open: it was submitted or expired (or the run is not waiting at this step)"}

func (s *Server) registerForms() {
	o := op("list-pending-forms", http.MethodGet, "/forms/pending", "The organization's open form pauses, newest first", "Forms")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{in: "query"}, s.listPendingForms)

	o = op("get-form-pause", http.MethodGet, "/forms/{runId}/{stepId}", "A run's form pause, its schema and submission", "Forms")
	o.Description = "The pause (form_pause_id, status open|submitted|expired, expected_keys, expires_at), its resolved " +
		"form_schema_v1, and once submitted the submission (submission_id, submitted_at, the data)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound}
	register(s, o, formNotFound, s.getFormPause)

	o = op("submit-form", http.MethodPost, "/forms/{runId}/{stepId}/submit", "Submit a run's form pause", "Forms")
	o.Description = "The first valid submit adds each key to the run's context (@<key>), emits form_submitted and " +
		"resumes the run, once. A submit missing an expected key, or failing the schema, is 422 naming each problem " +
		"and changes nothing; any later submit (two racing included) is 409. With X-Svc-Identity from the gateway, " +
		"the pause records claimed_by (the signed-in person's email). At or after the pause's expires_at 410 " +
		"form_expired, even before the pause is closed. A key the engine owns (input, __...) is 422."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict, http.StatusGone}
	register(s, o, formNotFound, s.submitForm)
}

type listPendingFormsInput struct {
	OrgParam
	Paging
}

func (s *Server) listPendingForms(ctx context.Context, in *listPendingFormsInput) (*answer[List[svctype.FormPause]], error) {
	page, err := s.eng.HITL.PendingForms(ctx, in.OrgID, in.options())
	if err != nil {
		return nil, err
	}
	return &answer[List[svctype.FormPause]]{Body: listOf(page, same[svctype.FormPause])}, nil
}

func (s *Server) getFormPause(ctx context.Context, in *FormPath) (*answer[*svctype.FormPause], error) {
	p, err := s.eng.HITL.FormPause(ctx, in.OrgID, in.RunID, in.StepID)
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.FormPause]{Body: p}, nil
}

type submitFormInput struct {
	FormPath
	IdentityHeader
	Body FormSubmitBody
}

func (s *Server) submitForm(ctx context.Context, in *submitFormInput) (*answer[*svctype.FormPause], error) {
	p, err := s.eng.HITL.SubmitForm(ctx, in.OrgID, in.RunID, in.StepID, engine.FormSubmission{Data: in.Body.Data,
		ClaimedBy: s.person(in.OrgID, in.Identity)})
	if err != nil {
		return nil, err
	}
	return &answer[*svctype.FormPause]{Body: p}, nil
}
