package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/svcflow/svcflow/engine/hitl"
	"github.com/svcflow/svcflow/forms"
)

// GenerateForm asks the organization's model for a form (engine/hitl drafts it) and, with
// in.Create, stores it as an external form (engine/extforms): the form's own fields are
// checked before the model is paid for.
func (e *Engine) GenerateForm(ctx context.Context, orgID string, in FormGeneration) (*GeneratedForm, error) {
	if err := e.HITL.CheckGeneration(ctx, orgID, in); err != nil {
		return nil, err
	}
	if in.Create == nil {
		return e.HITL.DraftForm(ctx, orgID, in)
	}
	// The form's own fields are checked before the model is paid for (with a stand-in schema),
	// and again, with the real one, when the form is stored.
	form := func(schema *forms.Schema) (ExternalFormInput, error) {
		raw, err := json.Marshal(schema)
		return ExternalFormInput{Name: in.Create.Name, IsPublic: in.Create.IsPublic,
			TriggerWorkflowID: in.Create.TriggerWorkflowID, Schema: raw}, err
	}
	standIn, err := form(hitl.FallbackForm(in.ExpectedKeys))
	if err != nil {
		return nil, err
	}
	if err := e.Forms.CheckExternalForm(ctx, orgID, standIn); err != nil {
		return nil, underCreate(err)
	}
	g, err := e.HITL.DraftForm(ctx, orgID, in)
	if err != nil {
		return nil, err
	}
	fin, err := form(g.Schema)
	if err != nil {
		return nil, err
	}
	if g.Form, err = e.Forms.CreateExternalForm(ctx, orgID, fin); err != nil {
		return nil, underCreate(err)
	}
	return g, nil
}

// underCreate moves the pointers of a form's validation problems under /create.
func underCreate(err error) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := &ValidationError{Code: ve.Code}
	for _, p := range ve.Problems {
		out.Problems = append(out.Problems, Problem{Pointer: "/create" + p.Pointer, Message: p.Message})
	}
	return out
}
