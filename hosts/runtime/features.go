package runtime

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/engine"
	"github.com/svcflow/svcflow/engine/svctype"
)

// FormGenerateBody is the body of POST /forms/generate.
type FormGenerateBody struct {
	Intent       string         `json:"intent" maxLength:"4000" doc:"What the form is for."`
	ExpectedKeys []string       `json:"expected_keys" maxItems:"200" doc:"The keys the form must collect: each becomes a field key (snake_case)."`
	Hints        map[string]any `json:"hints,omitempty" doc:"Anything that helps the model (audience, language, tone)."`
	Create       map[string]any `json:"create,omitempty" doc:"Create an external form with the schema: not in this build (422)."`
}

func (s *Server) registerFeatures() {
	o := op("get-org-features", http.MethodGet, "/org-features", "The organization's features", "Forms")
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	huma.Register(s.api, o, func(ctx context.Context, in *OrgParam) (*struct{ Body svctype.OrgFeatures }, error) {
		f, err := s.eng.OrgFeatures(ctx, in.OrgID)
		if err != nil {
			return nil, s.fail(ctx, err, failure{})
		}
		return &struct{ Body svctype.OrgFeatures }{Body: f}, nil
	})

	o = op("set-org-features", http.MethodPut, "/org-features", "Set the organization's features", "Forms")
	o.Description = "agent_forms: form generation with the organization's model (POST /forms/generate, and the schema of a " +
		"PbotForm pause whose step authors none, drafted once per workflow version and step)."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		Body svctype.OrgFeatures
	}) (*struct{ Body svctype.OrgFeatures }, error) {
		f, err := s.eng.SetOrgFeatures(ctx, in.OrgID, in.Body)
		if err != nil {
			return nil, s.fail(ctx, err, failure{})
		}
		return &struct{ Body svctype.OrgFeatures }{Body: f}, nil
	})

	o = op("generate-form", http.MethodPost, "/forms/generate", "Draft a form_schema_v1 with the organization's model", "Forms")
	o.Description = "The model may use the ten permitted types; its form is validated and sent back once with the " +
		"problems, then replaced by one text field per expected key (source fallback, also when the organization " +
		"has no api:llm_api_key). 403 agent_forms_disabled without the agent_forms feature."
	o.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden}
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		OrgParam
		Body FormGenerateBody
	}) (*struct{ Body *engine.GeneratedForm }, error) {
		if in.Body.Create != nil {
			return nil, s.fail(ctx, &engine.ValidationError{Problems: []engine.Problem{{Pointer: "/create",
				Message: "external forms are not in this build yet: generate without create"}}}, failure{})
		}
		g, err := s.eng.GenerateForm(ctx, in.OrgID, engine.FormGeneration{Intent: in.Body.Intent, ExpectedKeys: in.Body.ExpectedKeys, Hints: in.Body.Hints})
		if err != nil {
			return nil, s.fail(ctx, err, failure{})
		}
		return &struct{ Body *engine.GeneratedForm }{Body: g}, nil
	})
}
