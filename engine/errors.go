package engine

import (
	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/extforms"
	"github.com/svcflow/svcflow/engine/hitl"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
)

// Sentinel errors of the engine and its features. Stores and the engine wrap them; hosts
// map them to status codes in one place (hosts/runtime). Check with errors.Is.
var (
	// ErrNotFound: the resource does not exist in this organization (another org's resource
	// is not found too: existence is never revealed).
	ErrNotFound = core.ErrNotFound
	// ErrConflict: a unique name is taken, or the resource is in a state that forbids the call.
	ErrConflict = core.ErrConflict
	// ErrLeaseLost: the job's lease expired or the job was removed (a cancelled run) before
	// the worker committed; its transaction is rolled back and nothing it did lands.
	ErrLeaseLost = core.ErrLeaseLost
	// ErrInvalidOrg: the organization id is empty or malformed.
	ErrInvalidOrg = core.ErrInvalidOrg
	// ErrNoContextKey: the run exists but its context has no such key (an ErrNotFound).
	ErrNoContextKey = core.ErrNoContextKey
	// ErrContextChanged: a context key was rewritten while it was streamed out whole.
	ErrContextChanged = core.ErrContextChanged
	// ErrInvalidCursor: a paging cursor that the listing did not issue.
	ErrInvalidCursor = core.ErrInvalidCursor
	// ErrOutcomeUnknown fails a step whose call was made by MaxCallTries claims and never
	// committed: whether the other side acted on it is not known.
	ErrOutcomeUnknown = core.ErrOutcomeUnknown
	// ErrNoOrgConfigKey: the organization has no org config value under the key. It is an
	// ErrNotFound; OrgConfigValue's error names the key (never a value).
	ErrNoOrgConfigKey = orgconfig.ErrNoKey
	// ErrNoMasterKey: the engine has no keyring (Config.Keyring), so org config can be
	// neither written nor read.
	ErrNoMasterKey = orgconfig.ErrNoMasterKey
	// ErrAgentFormsDisabled: the organization does not have the agent_forms feature (403).
	ErrAgentFormsDisabled = hitl.ErrAgentFormsDisabled
	// ErrApprovalExpired: a decision at or after an approval's expires_at (410), even
	// before the worker's timer decided it.
	ErrApprovalExpired = hitl.ErrApprovalExpired
	// ErrFormPauseExpired: a submission at or after a form pause's expires_at (410), even
	// before the worker's timer closed it.
	ErrFormPauseExpired = hitl.ErrFormPauseExpired
	// ErrFormExpired: a submission to an external form after its expires_at (410).
	ErrFormExpired = extforms.ErrFormExpired
	// ErrFormSigninRequired: a submission to an external form with settings.requireAuth and
	// no signed-in person (401 form_signin_required).
	ErrFormSigninRequired = extforms.ErrFormSigninRequired
	// ErrFormTriggerMissing: an external form's trigger workflow no longer exists, so a
	// submission would start nothing (409); nothing is stored.
	ErrFormTriggerMissing = extforms.ErrFormTriggerMissing
	// ErrIdempotencyKeyReused: an Idempotency-Key repeated with another workflow or input
	// than its first request (422 idempotency_key_reused); nothing is started.
	ErrIdempotencyKeyReused = core.ErrIdempotencyKeyReused
	// ErrSchemaBehind: the database answers but lacks migrations this build has (Ready).
	ErrSchemaBehind = storage.ErrSchemaBehind
)

// Validation errors (core.ValidationError): each problem names where and what.
type (
	Problem         = core.Problem
	ValidationError = core.ValidationError
)

// Invalid builds a ValidationError with one problem.
func Invalid(pointer, format string, args ...any) *ValidationError {
	return core.Invalid(pointer, format, args...)
}
