package engine

import "github.com/svcflow/svcflow/engine/hitl"

// Approvals, form pauses and drafted forms (engine/hitl).
type (
	ApprovalDecision = hitl.ApprovalDecision
	FormSubmission   = hitl.FormSubmission
	FormGeneration   = hitl.FormGeneration
	FormCreation     = hitl.FormCreation
	GeneratedForm    = hitl.GeneratedForm
)

const (
	ApprovalStep           = hitl.ApprovalStep
	FormStep               = hitl.FormStep
	DefaultApproverRole    = hitl.DefaultApproverRole
	ApprovalExpiredComment = hitl.ApprovalExpiredComment
	JobApprovalExpire      = hitl.JobApprovalExpire
	JobFormExpire          = hitl.JobFormExpire
	JobFormReminder        = hitl.JobFormReminder
	EventApprovalRequested = hitl.EventApprovalRequested
	EventApprovalDecided   = hitl.EventApprovalDecided
	EventFormPauseCreated  = hitl.EventFormPauseCreated
	EventFormSubmitted     = hitl.EventFormSubmitted
	EventFormExpired       = hitl.EventFormExpired
	EventFormReminder      = hitl.EventFormReminder
	FormSchemaAuthored     = hitl.FormSchemaAuthored
	FormSchemaTextFields   = hitl.FormSchemaTextFields
	FormSchemaGenerated    = hitl.FormSchemaGenerated
	FormSchemaCached       = hitl.FormSchemaCached
	FormSchemaFallback     = hitl.FormSchemaFallback
)
