package runtime

import (
	"context"
	"net/http"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

// FormGenerateBody is the body of POST /forms/generate.
type FormGenerateBody struct {
	Intent       string         `json:"intent" maxLength:"4000" doc:"What the form is for."`
	ExpectedKeys []string       `json:"expected_keys" maxItems:"200" doc:"The keys the form must collect: each becomes a field key (snake_case)."`
	Hints        map[string]any `json:"hints,omitempty" doc:"Anything that helps the model (audience, language, tone)."`
	Create       *FormCreate    `json:"create,omitempty" doc:"Also create an external form with the generated schema; the answer's form is that form."`
}

// FormCreate is the external form POST /forms/generate creates with the schema it drafts.
type FormCreate struct {
	Name              string `json:"name" doc:"The form's name, 1-200 characters."`
	IsPublic          bool   `json:"is_public,omitempty" doc:"Serve it on the public routes."`
	TriggerWorkflowID string `json:"trigger_workflow_id,omitempty" doc:"The workflow each submission starts."`
}

// GeneratedForm is the answer of POST /forms/generate.
type GeneratedForm struct {
	Schema     *forms.Schema `json:"schema" doc:"The form_schema_v1 document."`
	Source     string        `json:"source" enum:"llm,fallback" doc:"llm: the model's form; fallback: one text field per expected key."`
	Attempts   int           `json:"attempts" minimum:"1" maximum:"2" doc:"1 or 2: the model calls made, or 1 for the fallback drafted without a model call."`
	ModelCalls int           `json:"model_calls" minimum:"0" maximum:"2" doc:"The model calls made: 0 when the organization has no model key (api:llm_api_key)."`
	Form       *ExternalForm `json:"form,omitempty" doc:"The external form created, only with create."`
}

func (s *Server) registerFeatures() {
	o := op("get-org-features", http.MethodGet, "/org-features", "The organization's features", "Forms")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{}, s.getOrgFeatures)

	o = op("set-org-features", http.MethodPut, "/org-features", "Set the organization's features", "Forms")
	o.Description = "agent_forms: form generation with the organization's model (POST /forms/generate, and the schema of a " +
		"PbotForm pause whose step authors none, drafted once per workflow version and step)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	register(s, o, failure{}, s.setOrgFeatures)

	o = op("generate-form", http.MethodPost, "/forms/generate", "Draft a form_schema_v1 with the organization's model", "Forms")
	o.Description = "The model may use the ten permitted types; its form is validated and sent back once with the " +
		"problems, then replaced by one text field per expected key (source fallback, also when the organization " +
		"has no api:llm_api_key). With `create`, the schema is also stored as an external form (its name and trigger " +
		"checked before the model is asked: 422 under /create). 403 agent_forms_disabled without the agent_forms feature."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden}
	register(s, o, failure{}, s.generateForm)
}

func (s *Server) getOrgFeatures(ctx context.Context, in *OrgParam) (*answer[svctype.OrgFeatures], error) {
	f, err := s.eng.OrgConfig.OrgFeatures(ctx, in.OrgID)
	if err != nil {
		return nil, err
	}
	return &answer[svctype.OrgFeatures]{Body: f}, nil
}

type setOrgFeaturesInput struct {
	OrgParam
	Body svctype.OrgFeatures
}

func (s *Server) setOrgFeatures(ctx context.Context, in *setOrgFeaturesInput) (*answer[svctype.OrgFeatures], error) {
	f, err := s.eng.OrgConfig.SetOrgFeatures(ctx, in.OrgID, in.Body)
	if err != nil {
		return nil, err
	}
	return &answer[svctype.OrgFeatures]{Body: f}, nil
}

type generateFormInput struct {
	OrgParam
	Body FormGenerateBody
}

func (s *Server) generateForm(ctx context.Context, in *generateFormInput) (*answer[GeneratedForm], error) {
	gen := engine.FormGeneration{Intent: in.Body.Intent, ExpectedKeys: in.Body.ExpectedKeys, Hints: in.Body.Hints}
	if c := in.Body.Create; c != nil {
		gen.Create = &engine.FormCreation{Name: c.Name, IsPublic: c.IsPublic, TriggerWorkflowID: c.TriggerWorkflowID}
	}
	g, err := s.eng.GenerateForm(ctx, in.OrgID, gen)
	if err != nil {
		return nil, err
	}
	out := GeneratedForm{Schema: g.Schema, Source: g.Source, Attempts: g.Attempts, ModelCalls: g.ModelCalls}
	if g.Form != nil {
		f := externalFormOf(*g.Form)
		out.Form = &f
	}
	return &answer[GeneratedForm]{Body: out}, nil
}
