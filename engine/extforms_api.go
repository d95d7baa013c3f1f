package engine

import "github.com/svcflow/svcflow/engine/extforms"

// External forms (engine/extforms).
type (
	ExternalFormInput = extforms.ExternalFormInput
	PublicSubmission  = extforms.PublicSubmission
	SubmittedForm     = extforms.SubmittedForm
)

const (
	EventExternalFormCreated   = extforms.EventExternalFormCreated
	EventExternalFormUpdated   = extforms.EventExternalFormUpdated
	EventExternalFormDeleted   = extforms.EventExternalFormDeleted
	EventExternalFormSubmitted = extforms.EventExternalFormSubmitted
	SubmittedByKey             = extforms.SubmittedByKey
)

// ExternalFormOrg returns the organization an external form id names, and whether the id
// has the shape of one. It reads nothing: the id may name no form.
func ExternalFormOrg(formID string) (string, bool) { return extforms.ExternalFormOrg(formID) }

// FrameAncestor reads an origin of an external form's settings.frameAncestors as the hosted
// page's Content-Security-Policy names it, and whether it is one.
func FrameAncestor(raw string) (string, bool) { return extforms.FrameAncestor(raw) }
