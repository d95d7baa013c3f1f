package hitl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/svcflow/svcflow/agent"
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

// Form generation (POST /forms/generate): a model drafts a form_schema_v1 for an intent and
// its expected keys. The reply is checked (forms.Validate, only the ten generatable types,
// every expected key a field, no password, card or government id number unless an expected
// key asks for one); a reply that fails is sent back once with the problems; a second
// failure, or no model key, falls back to one text field per expected key. The organization
// needs the agent_forms feature.

// FormGeneration is the input of GenerateForm.
type FormGeneration struct {
	Intent       string
	ExpectedKeys []string
	Hints        map[string]any
	// Create, when set, also stores the generated schema as an external form.
	Create *FormCreation
}

// FormCreation is the external form GenerateForm creates with the schema it drafts.
type FormCreation struct {
	Name              string
	IsPublic          bool
	TriggerWorkflowID string
}

// GeneratedForm is what GenerateForm answers.
type GeneratedForm struct {
	Schema *forms.Schema `json:"schema"`
	// Source is "llm" (the model's form) or "fallback" (one text field per expected key).
	Source string `json:"source"`
	// Attempts is 1 or 2 (spec): the model calls made, or 1 for a fallback drafted with no
	// model call (the organization has no model key).
	Attempts int `json:"attempts" minimum:"1" maximum:"2"`
	// ModelCalls is how many model calls were made: 0 when the organization has no key.
	ModelCalls int `json:"model_calls" minimum:"0" maximum:"2"`
	// Form is the external form created with the schema (only with FormGeneration.Create).
	Form *svctype.ExternalForm `json:"form,omitempty"`
}

// sensitive matches the fields a generated form may not ask for unless an expected key does.
var sensitive = regexp.MustCompile(`(?i)pass(word|code|phrase)|pin\b|card.?(number|no)|credit.?card|\bcvv\b|\bcvc\b|` +
	`\bssn\b|social.?security|passport|national.?id|government.?id|tax.?id|driver.?s?.?licen`)

// CheckGeneration validates a form generation's intent and expected keys and that the
// organization has the agent_forms feature (ErrAgentFormsDisabled): what GenerateForm
// checks before it pays for a model call.
func (e *HITL) CheckGeneration(ctx context.Context, orgID string, in FormGeneration) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	var problems []core.Problem
	if strings.TrimSpace(in.Intent) == "" || len(in.Intent) > 4000 {
		problems = append(problems, core.Problem{Pointer: "/intent", Message: "required: what the form is for, at most 4,000 characters"})
	}
	if len(in.ExpectedKeys) == 0 {
		problems = append(problems, core.Problem{Pointer: "/expected_keys", Message: "required: the keys the form must collect"})
	}
	for i, k := range in.ExpectedKeys {
		if !forms.ValidKey(k) {
			problems = append(problems, core.Problem{Pointer: fmt.Sprintf("/expected_keys/%d", i), Message: "a snake_case key"})
		}
	}
	if len(problems) > 0 {
		return &core.ValidationError{Problems: problems}
	}
	features, err := e.store.GetOrgFeatures(ctx, orgID)
	if err != nil {
		return err
	}
	if !features.AgentForms {
		return fmt.Errorf("%w: the organization does not have the agent_forms feature (PUT /org-features)", ErrAgentFormsDisabled)
	}
	return nil
}

// DraftForm is the model's part of a form generation already checked (CheckGeneration):
// the organization's model drafts the form, or it falls back to one text field per
// expected key. Nothing is written.
func (e *HITL) DraftForm(ctx context.Context, orgID string, in FormGeneration) (*GeneratedForm, error) {
	return e.draftForm(ctx, orgID, in, func(ctx context.Context, key string) (string, error) {
		return e.core.Secret(ctx, orgID, key)
	})
}

// FallbackForm is one text field per expected key.
func FallbackForm(expected []string) *forms.Schema { return fallbackForm(expected) }

// fallbackForm is one text field per expected key.
func fallbackForm(expected []string) *forms.Schema {
	return forms.EnsureKeys(blankForm(), expected)
}

// blankForm is a form_schema_v1 of one empty page.
func blankForm() *forms.Schema {
	return &forms.Schema{Version: forms.Version, Pages: []forms.Page{{ID: "main"}}}
}

// draftForm is the model's part of GenerateForm, for input already checked: the
// organization's key and base URL are read through secret (org config), and nothing is
// written. A PbotForm step calls it as its IO half (formDraftKind), outside any transaction.
func (e *HITL) draftForm(ctx context.Context, orgID string, in FormGeneration, secret func(ctx context.Context, key string) (string, error)) (*GeneratedForm, error) {
	fallback := &GeneratedForm{Schema: fallbackForm(in.ExpectedKeys), Source: "fallback", Attempts: 1}
	key, err := secret(ctx, orgconfig.LLMAPIKey)
	if errors.Is(err, core.ErrNotFound) || errors.Is(err, orgconfig.ErrNoMasterKey) {
		return fallback, nil
	}
	if err != nil {
		return nil, err
	}
	baseURL, err := secret(ctx, orgconfig.LLMBaseURL)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return nil, err
	}
	model, err := e.model(baseURL, key)
	if err != nil {
		return nil, err
	}
	hints, _ := json.Marshal(in.Hints)
	msgs := []agent.Message{
		{Role: agent.RoleSystem, Content: formPrompt},
		{Role: agent.RoleUser, Content: fmt.Sprintf("Intent: %s\nExpected keys (each must be a field key): %s\nHints: %s",
			in.Intent, strings.Join(in.ExpectedKeys, ", "), hints)},
	}
	for attempt := 1; attempt <= 2; attempt++ {
		fallback.Attempts, fallback.ModelCalls = attempt, attempt
		resp, err := model.Chat(ctx, agent.Request{Model: orgconfig.DefaultLLMModel, Messages: msgs, MaxTokens: 4000, JSON: true})
		if err != nil {
			e.log.WarnContext(ctx, "form generation: the model failed; falling back", "org_id", orgID, "err", err)
			return fallback, nil
		}
		s, why := checkGenerated(resp.Message.Content, in.ExpectedKeys)
		if why == "" {
			return &GeneratedForm{Schema: s, Source: "llm", Attempts: attempt, ModelCalls: attempt}, nil
		}
		msgs = append(msgs, resp.Message, agent.Message{Role: agent.RoleUser,
			Content: "That form is not valid: " + why + ". Answer the corrected form_schema_v1 JSON only."})
	}
	return fallback, nil
}

// formDraftKind is a PbotForm step's model call (pauseSchema): it drafts the form that in
// describes.
func (e *HITL) formDraftKind(in FormGeneration) svctype.IOFunc {
	return func(ctx context.Context, call *svctype.StepCall) (any, error) {
		return e.draftForm(ctx, call.OrgID, in, call.Secret)
	}
}

// checkGenerated parses and checks a model's form; why says what is wrong ("" when fine).
func checkGenerated(reply string, expected []string) (*forms.Schema, string) {
	s, err := forms.Normalize(json.RawMessage(strings.TrimSpace(reply)))
	if err != nil {
		return nil, "it is not a form_schema_v1 JSON document (" + err.Error() + ")"
	}
	var why []string
	for _, p := range forms.Validate(s) {
		why = append(why, p.Pointer+": "+p.Message)
	}
	allowed := forms.GeneratableTypes()
	for pi, page := range s.Pages {
		for fi, f := range page.Fields {
			at := fmt.Sprintf("/pages/%d/fields/%d", pi, fi)
			if !slices.Contains(allowed, f.Type) {
				why = append(why, fmt.Sprintf("%s: type %q is not one of the ten permitted types", at, f.Type))
			}
			if !slices.Contains(expected, f.Key) && (sensitive.MatchString(f.Key) || sensitive.MatchString(f.Label)) {
				why = append(why, fmt.Sprintf("%s: %q asks for a secret or an identity number that no expected key demands", at, f.Key))
			}
		}
	}
	for _, k := range expected {
		if _, ok := s.Field(k); !ok {
			why = append(why, fmt.Sprintf("expected key %q is not a field", k))
		}
	}
	return s, strings.Join(why, "; ")
}

const formPrompt = `You design web forms. Answer with one JSON object, a form_schema_v1 document and nothing else:
{"version": "form_schema_v1", "title": "...", "description": "...", "pages": [{"id": "main", "title": "...", "fields": [Field, ...]}]}
Field: {"key": snake_case (unique), "type": one of text, multiline, number, money, range, email, date, select, checklist, content,
"label": "...", optional "help", "placeholder", "required", "options": [{"label", "value"}] (required for select and checklist),
"min", "max", "step", "unit" (money and range)}.
Every expected key must be the key of one field. Do not ask for passwords, card numbers or government id numbers
unless an expected key is one.`
