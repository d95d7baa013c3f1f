// Package extforms is external forms (spec section 2, "External form"): intake forms an
// organization publishes, whose every valid submission is stored and starts the form's
// trigger workflow with the flat payload as input, in one transaction; and the public
// routes' logic, which needs no X-Org-Id because the form id names its organization.
package extforms

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/expr"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

// Routes /external-forms and the public
// /forms/public/{formId}): an intake form whose every valid submission is stored and starts
// the form's trigger workflow with the flat payload as input, in one transaction.
//
// The public routes carry no X-Org-Id: the form id names its organization. An id is
// "frm-" + base64url(org id) + "." + 32 random hex digits, the way an OAuth state names its
// organization, so the store is still only ever asked for (org, id) and no query runs
// across organizations.

// Errors of submissions.
var (
	// ErrFormExpired: a submission to an external form after its expires_at (410).
	ErrFormExpired = errors.New("the form no longer accepts submissions: it expired")
	// ErrFormSigninRequired: a submission to an external form with settings.requireAuth and
	// no signed-in person (401 form_signin_required).
	ErrFormSigninRequired = errors.New("the form requires signing in before submitting")
	// ErrFormTriggerMissing: an external form's trigger workflow no longer exists, so a
	// submission would start nothing (409); nothing is stored.
	ErrFormTriggerMissing = fmt.Errorf("%w: the form's trigger workflow no longer exists", core.ErrConflict)
)

// Forms is the external forms of every organization.
type Forms struct {
	core  *core.Core
	store Store
	now   func() time.Time
}

// New returns the external forms over st; their submissions start runs on c.
func New(c *core.Core, st Store) *Forms { return &Forms{core: c, store: st, now: c.Now} }

// CheckExternalForm validates a form as CreateExternalForm would, writing nothing.
func (e *Forms) CheckExternalForm(ctx context.Context, orgID string, in ExternalFormInput) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	_, err := checkExternalForm(ctx, e.store, orgID, in)
	return err
}

// External form events (spec section 6).
const (
	EventExternalFormCreated   = "external_form_created"
	EventExternalFormUpdated   = "external_form_updated"
	EventExternalFormDeleted   = "external_form_deleted"
	EventExternalFormSubmitted = "external_form_submitted"
)

// SubmittedByKey is the run context key that records who submitted the external form that
// started the run, when the form requires sign-in.
const SubmittedByKey = "__submitted_by"

// Bounds of an external form's fields.
const (
	maxFormName        = 200
	maxFormDescription = 4000
	maxFormMessage     = 2000
	maxFormURL         = 2048
	maxFormFooter      = 1000
	// MaxFrameAncestors bounds settings.frameAncestors: a header, not a directory.
	MaxFrameAncestors = 20
)

const externalFormPrefix = "frm-"

var (
	hexColour  = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
	formSuffix = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ExternalFormInput is a form as POST and PUT /external-forms take it: PUT replaces every
// field.
type ExternalFormInput struct {
	Name              string
	Description       string
	IsPublic          bool
	ExpiresAt         *time.Time
	TriggerWorkflowID string
	TriggerProcessID  string
	// Schema is a form_schema_v1 document, or one of the older shapes forms.Normalize reads;
	// it is stored normalised.
	Schema   json.RawMessage
	Settings svctype.ExternalFormSettings
}

// PublicSubmission is a submission through the public route.
type PublicSubmission struct {
	// Payload is the flat {key: value} the person submitted.
	Payload map[string]any
	// SubmittedBy is the signed-in person the gateway vouched for ("" when none).
	SubmittedBy string
}

func newExternalFormID(orgID string) string {
	return externalFormPrefix + base64.RawURLEncoding.EncodeToString([]byte(orgID)) + "." +
		strings.ReplaceAll(uuid.NewString(), "-", "")
}

// ExternalFormOrg returns the organization an external form id names, and whether the id
// has the shape of one. It reads nothing: the id may name no form.
func ExternalFormOrg(formID string) (string, bool) {
	rest, ok := strings.CutPrefix(formID, externalFormPrefix)
	if !ok || len(formID) > 256 {
		return "", false
	}
	enc, suffix, ok := strings.Cut(rest, ".")
	if !ok || !formSuffix.MatchString(suffix) {
		return "", false
	}
	org, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !core.ValidOrgID(string(org)) {
		return "", false
	}
	return string(org), true
}

// checkExternalForm validates in for orgID (the trigger workflow read through q: the store,
// or a transaction) and returns the form it describes, schema normalised.
func checkExternalForm(ctx context.Context, q Triggers, orgID string, in ExternalFormInput) (*svctype.ExternalForm, error) {
	f := &svctype.ExternalForm{OrgID: orgID, Name: strings.TrimSpace(in.Name), Description: in.Description,
		IsPublic: in.IsPublic, TriggerWorkflowID: in.TriggerWorkflowID, TriggerProcessID: in.TriggerProcessID}
	var ps []core.Problem
	switch {
	case f.Name == "":
		ps = append(ps, core.Problem{Pointer: "/name", Message: "required"})
	case utf8.RuneCountInString(f.Name) > maxFormName || hasControl(f.Name):
		ps = append(ps, core.Problem{Pointer: "/name", Message: fmt.Sprintf("at most %d characters, no control characters", maxFormName)})
	}
	if utf8.RuneCountInString(in.Description) > maxFormDescription {
		ps = append(ps, core.Problem{Pointer: "/description", Message: fmt.Sprintf("at most %d characters", maxFormDescription)})
	}
	if in.ExpiresAt != nil {
		at := in.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !core.StorableTime(at) {
			ps = append(ps, core.Problem{Pointer: "/expires_at", Message: "a time between 1970 and 9999"})
		}
		f.ExpiresAt = &at
	}
	switch {
	case in.TriggerWorkflowID != "" && in.TriggerProcessID != "":
		const both = "set at most one trigger: trigger_workflow_id or trigger_process_id"
		ps = append(ps, core.Problem{Pointer: "/trigger_workflow_id", Message: both}, core.Problem{Pointer: "/trigger_process_id", Message: both})
	case in.TriggerProcessID != "":
		p, err := q.GetProcess(ctx, orgID, in.TriggerProcessID)
		if err == nil && p.WorkflowID != "" {
			// A process whose workflow was deleted (before that was refused) runs nothing
			// until it is published again.
			_, err = q.GetWorkflow(ctx, orgID, p.WorkflowID)
		}
		switch {
		case errors.Is(err, core.ErrNotFound) || (err == nil && p.WorkflowID == ""):
			ps = append(ps, core.Problem{Pointer: "/trigger_process_id", Message: "no published process has this id in the organization"})
		case err != nil:
			return nil, err
		}
	case in.TriggerWorkflowID != "":
		if _, err := q.GetWorkflow(ctx, orgID, in.TriggerWorkflowID); errors.Is(err, core.ErrNotFound) {
			ps = append(ps, core.Problem{Pointer: "/trigger_workflow_id", Message: "no workflow with this id in the organization"})
		} else if err != nil {
			return nil, err
		}
	}
	if schema, more := checkFormSchema(in.Schema); len(more) > 0 {
		ps = append(ps, more...)
	} else if f.Schema, _ = json.Marshal(schema); len(f.Schema) == 0 {
		return nil, errors.New("external form: schema not encodable")
	}
	var more []core.Problem
	f.Settings, more = checkFormSettings(in.Settings)
	ps = append(ps, more...)
	if len(ps) > 0 {
		return nil, &core.ValidationError{Problems: ps}
	}
	return f, nil
}

// checkFormSchema normalises and validates an external form's schema.
func checkFormSchema(raw json.RawMessage) (*forms.Schema, []core.Problem) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, []core.Problem{{Pointer: "/schema", Message: "required: a form_schema_v1 document"}}
	}
	s, err := forms.Normalize(raw)
	if err != nil {
		return nil, []core.Problem{{Pointer: "/schema", Message: err.Error()}}
	}
	var ps []core.Problem
	for _, p := range forms.Validate(s) {
		ps = append(ps, core.Problem{Pointer: "/schema" + p.Pointer, Message: p.Message})
	}
	if len(ps) == 0 && !hasSubmittableField(s) {
		ps = append(ps, core.Problem{Pointer: "/schema/pages", Message: "the form has no field a person can fill in"})
	}
	return s, ps
}

func hasSubmittableField(s *forms.Schema) bool {
	for _, p := range s.Pages {
		for _, f := range p.Fields {
			if !f.Type.DisplayOnly() {
				return true
			}
		}
	}
	return false
}

// checkFormSettings validates the page settings: URLs absolute (the logo https), the accent
// a hex colour, texts bounded.
func checkFormSettings(s svctype.ExternalFormSettings) (svctype.ExternalFormSettings, []core.Problem) {
	var ps []core.Problem
	if utf8.RuneCountInString(s.SuccessMessage) > maxFormMessage {
		ps = append(ps, core.Problem{Pointer: "/settings/successMessage", Message: fmt.Sprintf("at most %d characters", maxFormMessage)})
	}
	if s.RedirectURL != "" {
		if msg := checkPageURL(s.RedirectURL, false); msg != "" {
			ps = append(ps, core.Problem{Pointer: "/settings/redirectUrl", Message: msg})
		}
	}
	if b := s.Branding; b != nil {
		if utf8.RuneCountInString(b.Name) > maxFormName || hasControl(b.Name) {
			ps = append(ps, core.Problem{Pointer: "/settings/branding/name", Message: fmt.Sprintf("at most %d characters, no control characters", maxFormName)})
		}
		if b.LogoURL != "" {
			if msg := checkPageURL(b.LogoURL, true); msg != "" {
				ps = append(ps, core.Problem{Pointer: "/settings/branding/logoUrl", Message: msg})
			}
		}
		if b.Accent != "" && !hexColour.MatchString(b.Accent) {
			ps = append(ps, core.Problem{Pointer: "/settings/branding/accent", Message: "a hex colour: #rgb or #rrggbb"})
		}
		if utf8.RuneCountInString(b.Footer) > maxFormFooter {
			ps = append(ps, core.Problem{Pointer: "/settings/branding/footer", Message: fmt.Sprintf("at most %d characters", maxFormFooter)})
		}
		if *b == (svctype.ExternalFormBrand{}) {
			s.Branding = nil
		}
	}
	if len(s.FrameAncestors) > MaxFrameAncestors {
		ps = append(ps, core.Problem{Pointer: "/settings/frameAncestors", Message: fmt.Sprintf("at most %d origins", MaxFrameAncestors)})
	}
	var origins []string
	for i, raw := range s.FrameAncestors {
		o, ok := FrameAncestor(raw)
		if !ok {
			ps = append(ps, core.Problem{Pointer: fmt.Sprintf("/settings/frameAncestors/%d", i),
				Message: "an origin: https://host or https://host:port (http only for localhost), no path; *.host for its subdomains"})
			continue
		}
		if !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	s.FrameAncestors = origins
	return s, ps
}

// frameHost is a host name (optionally "*." for its subdomains), or an IPv4 address.
var frameHost = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// FrameAncestor reads an origin that may frame a form's hosted page (settings.frameAncestors)
// and returns it as the page's Content-Security-Policy names it (lowercase, no trailing
// slash). An origin is https://host[:port]; http only for localhost and 127.0.0.1, for
// development; a host may start with "*." for its subdomains. It goes into a header, so
// nothing else is taken: no path, query, user, IPv6 literal or space.
func FrameAncestor(raw string) (string, bool) {
	if len(raw) > 300 {
		return "", false
	}
	scheme, rest, ok := strings.Cut(strings.ToLower(raw), "://")
	if !ok {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "/")
	host, port, hasPort := strings.Cut(rest, ":")
	if !frameHost.MatchString(host) || len(host) > 253 {
		return "", false
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", false
		}
	}
	switch {
	case scheme == "https":
	case scheme == "http" && (host == "localhost" || host == "127.0.0.1"):
	default:
		return "", false
	}
	return scheme + "://" + rest, true
}

// checkPageURL says what is wrong with an absolute URL a page links to ("" when fine).
func checkPageURL(raw string, httpsOnly bool) string {
	want := "an absolute http or https URL"
	if httpsOnly {
		want = "an absolute https URL"
	}
	u, err := url.Parse(raw)
	if err != nil || len(raw) > maxFormURL || u.Host == "" || hasControl(raw) {
		return want + fmt.Sprintf(" of at most %d characters", maxFormURL)
	}
	if u.Scheme != "https" && (httpsOnly || u.Scheme != "http") {
		return want
	}
	return ""
}

// CreateExternalForm validates and stores a new form and emits external_form_created.
func (e *Forms) CreateExternalForm(ctx context.Context, orgID string, in ExternalFormInput) (*svctype.ExternalForm, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	var f *svctype.ExternalForm
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		var err error
		f, err = e.createExternalFormTx(ctx, stx, orgID, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (e *Forms) createExternalFormTx(ctx context.Context, stx storage.Tx, orgID string, in ExternalFormInput) (*svctype.ExternalForm, error) {
	tx := Tx(stx)
	f, err := checkExternalForm(ctx, tx, orgID, in)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC().Truncate(time.Microsecond) // as stored, so the answer equals a later read
	f.ID, f.CreatedAt, f.UpdatedAt = newExternalFormID(orgID), now, now
	if err := tx.CreateExternalForm(ctx, f); err != nil {
		return nil, err
	}
	return f, e.formEvent(ctx, stx, orgID, EventExternalFormCreated, map[string]any{
		"form_id": f.ID, "form_name": f.Name, "is_public": f.IsPublic, "created_at": now,
	})
}

// GetExternalForm returns one of the organization's forms.
func (e *Forms) GetExternalForm(ctx context.Context, orgID, id string) (*svctype.ExternalForm, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	return e.store.GetExternalForm(ctx, orgID, id)
}

// ListExternalForms pages the organization's forms newest first.
func (e *Forms) ListExternalForms(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.ExternalForm], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.ExternalForm]{}, err
	}
	return e.store.ListExternalForms(ctx, orgID, opts)
}

// ReplaceExternalForm replaces every field of a form (PUT) and emits external_form_updated
// with the parts that changed, when any did.
func (e *Forms) ReplaceExternalForm(ctx context.Context, orgID, id string, in ExternalFormInput) (*svctype.ExternalForm, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	var f *svctype.ExternalForm
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		old, err := tx.LockExternalForm(ctx, orgID, id, true)
		if err != nil {
			return err
		}
		if f, err = checkExternalForm(ctx, tx, orgID, in); err != nil {
			return err
		}
		f.ID, f.CreatedAt, f.UpdatedAt = old.ID, old.CreatedAt, e.now().UTC().Truncate(time.Microsecond)
		changes := externalFormChanges(old, f)
		if len(changes) == 0 {
			f.UpdatedAt = old.UpdatedAt
			return nil
		}
		if err := tx.ReplaceExternalForm(ctx, f); err != nil {
			return err
		}
		return e.formEvent(ctx, stx, orgID, EventExternalFormUpdated, map[string]any{
			"form_id": f.ID, "form_name": f.Name, "changes": changes,
		})
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// externalFormChanges names the parts of a form that differ: top-level fields by their
// wire names, settings by theirs (settings.branding as one part).
func externalFormChanges(old, f *svctype.ExternalForm) []string {
	var out []string
	add := func(changed bool, name string) {
		if changed {
			out = append(out, name)
		}
	}
	add(old.Name != f.Name, "name")
	add(old.Description != f.Description, "description")
	add(old.IsPublic != f.IsPublic, "is_public")
	add(!sameTime(old.ExpiresAt, f.ExpiresAt), "expires_at")
	add(old.TriggerWorkflowID != f.TriggerWorkflowID, "trigger_workflow_id")
	add(old.TriggerProcessID != f.TriggerProcessID, "trigger_process_id")
	// Both schemas are json.Marshal of a normalised forms.Schema: equal forms, equal bytes.
	add(!bytes.Equal(old.Schema, f.Schema), "schema")
	os, ns := old.Settings, f.Settings
	add(os.RequireAuth != ns.RequireAuth, "settings.requireAuth")
	add(os.SuccessMessage != ns.SuccessMessage, "settings.successMessage")
	add(os.RedirectURL != ns.RedirectURL, "settings.redirectUrl")
	add(!sameBrand(os.Branding, ns.Branding), "settings.branding")
	add(!slices.Equal(os.FrameAncestors, ns.FrameAncestors), "settings.frameAncestors")
	return out
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func sameBrand(a, b *svctype.ExternalFormBrand) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// DeleteExternalForm removes a form and its submissions (the runs they started stay) and
// emits external_form_deleted.
func (e *Forms) DeleteExternalForm(ctx context.Context, orgID, id string) error {
	if err := core.CheckOrg(orgID); err != nil {
		return err
	}
	return e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		f, err := tx.LockExternalForm(ctx, orgID, id, true)
		if err != nil {
			return err
		}
		if err := tx.DeleteExternalForm(ctx, orgID, id); err != nil {
			return err
		}
		return e.formEvent(ctx, stx, orgID, EventExternalFormDeleted, map[string]any{
			"form_id": f.ID, "form_name": f.Name, "deleted_at": e.now().UTC(),
		})
	})
}

// ListFormSubmissions pages a form's submissions newest first (core.ErrNotFound when the
// organization has no such form).
func (e *Forms) ListFormSubmissions(ctx context.Context, orgID, formID string, opts svctype.ListOptions) (svctype.Page[svctype.FormSubmission], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.FormSubmission]{}, err
	}
	if _, err := e.store.GetExternalForm(ctx, orgID, formID); err != nil {
		return svctype.Page[svctype.FormSubmission]{}, err
	}
	return e.store.ListFormSubmissions(ctx, orgID, formID, opts)
}

// PublicForm returns a public form by its id alone (the id names the organization) and
// whether it takes submissions now: core.ErrNotFound when there is none or it is not public.
func (e *Forms) PublicForm(ctx context.Context, formID string) (*svctype.ExternalForm, bool, error) {
	f, err := e.publicForm(ctx, formID)
	if err != nil {
		return nil, false, err
	}
	return f, f.ExpiresAt == nil || e.now().Before(*f.ExpiresAt), nil
}

func (e *Forms) publicForm(ctx context.Context, formID string) (*svctype.ExternalForm, error) {
	orgID, ok := ExternalFormOrg(formID)
	if !ok {
		return nil, fmt.Errorf("external form: %w", core.ErrNotFound)
	}
	f, err := e.store.GetExternalForm(ctx, orgID, formID)
	if err != nil {
		return nil, err
	}
	if !f.IsPublic {
		return nil, fmt.Errorf("external form: %w", core.ErrNotFound)
	}
	return f, nil
}

// SubmitPublicForm takes a submission to a public form: core.ErrNotFound for a form that is
// missing or not public, ErrFormExpired after its expires_at, ErrFormSigninRequired when it
// requires sign-in and sub names nobody, a *ValidationError naming each problem of the
// payload (pointers into the flat payload), ErrFormTriggerMissing when its workflow was
// deleted. On success the submission, the triggered run (with SubmittedByKey in its context
// when sign-in was required) and external_form_submitted commit together; on any error
// nothing is written.
func (e *Forms) SubmitPublicForm(ctx context.Context, formID string, sub PublicSubmission) (*SubmittedForm, error) {
	orgID, ok := ExternalFormOrg(formID)
	if !ok {
		return nil, fmt.Errorf("external form: %w", core.ErrNotFound)
	}
	var s *svctype.FormSubmission
	var settings svctype.ExternalFormSettings
	var run *svctype.Run
	var job *svctype.Job
	var extra expr.Vars
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		f, err := tx.LockExternalForm(ctx, orgID, formID, false)
		if err != nil {
			return err
		}
		if !f.IsPublic {
			return fmt.Errorf("external form: %w", core.ErrNotFound)
		}
		settings = f.Settings
		now := e.now().UTC().Truncate(time.Microsecond)
		if f.ExpiresAt != nil && !now.Before(*f.ExpiresAt) {
			return ErrFormExpired
		}
		by := strings.TrimSpace(sub.SubmittedBy)
		if !f.Settings.RequireAuth {
			by = "" // recorded only when sign-in was required
		} else if by == "" {
			return ErrFormSigninRequired
		}
		payload, err := checkPublicPayload(f, sub.Payload)
		if err != nil {
			return err
		}
		s = &svctype.FormSubmission{ID: "sub_" + uuid.NewString(), OrgID: orgID, FormID: f.ID,
			Payload: payload, SubmittedBy: by, SubmittedAt: now}
		workflowID, opts := f.TriggerWorkflowID, core.ExecuteOptions{}
		if f.TriggerProcessID != "" {
			// The version the process published, as of this submission (not a later edit of
			// its workflow outside the studio).
			p, err := tx.GetProcess(ctx, orgID, f.TriggerProcessID)
			if errors.Is(err, core.ErrNotFound) || (err == nil && p.WorkflowID == "") {
				return ErrFormTriggerMissing
			}
			if err != nil {
				return err
			}
			workflowID, opts.WorkflowVersion = p.WorkflowID, p.WorkflowVersion
		}
		if workflowID != "" {
			r, j, err := e.core.StartTx(ctx, stx, orgID, workflowID, payload, opts)
			if errors.Is(err, core.ErrNotFound) {
				return ErrFormTriggerMissing
			}
			if err != nil {
				return err
			}
			if by != "" {
				who, _ := json.Marshal(by)
				if err := tx.PutContext(ctx, orgID, r.ID, SubmittedByKey, who); err != nil {
					return err
				}
				extra = expr.Vars{SubmittedByKey: by}
			}
			run, job = r, j
			s.TriggeredRunID, s.TriggeredExecutionType = run.ID, svctype.ExecutionWorkflowRun
		}
		if err := tx.CreateFormSubmission(ctx, s); err != nil {
			return err
		}
		payloadEvent := map[string]any{
			"form_id": f.ID, "form_name": f.Name, "submission_id": s.ID, "submitted_at": now,
			"triggered_run_id": nilIfEmpty(s.TriggeredRunID), "triggered_execution_type": nilIfEmpty(s.TriggeredExecutionType),
			"has_triggered_workflow": s.TriggeredRunID != "",
		}
		if by != "" {
			payloadEvent["submitted_by"] = by
		}
		return e.formEvent(ctx, stx, orgID, EventExternalFormSubmitted, payloadEvent)
	})
	if err != nil {
		return nil, err
	}
	if job != nil {
		e.core.Started(run, job, extra)
	}
	return &SubmittedForm{Submission: *s, Settings: settings}, nil
}

// SubmittedForm is a stored submission and the settings of its form (the page shows the
// success message or follows the redirect).
type SubmittedForm struct {
	Submission svctype.FormSubmission
	Settings   svctype.ExternalFormSettings
}

// checkPublicPayload validates a flat payload against the form's schema; problems point
// into the payload (/email).
func checkPublicPayload(f *svctype.ExternalForm, payload map[string]any) (json.RawMessage, error) {
	schema, err := forms.Normalize(f.Schema)
	if err != nil {
		return nil, fmt.Errorf("external form %s: stored schema: %w", f.ID, err)
	}
	if payload == nil {
		payload = map[string]any{}
	}
	var ps []core.Problem
	for _, p := range forms.ValidateSubmission(schema, payload) {
		ps = append(ps, core.Problem{Pointer: strings.TrimPrefix(p.Pointer, "/data"), Message: p.Message})
	}
	if len(ps) > 0 {
		return nil, &core.ValidationError{Problems: ps}
	}
	return json.Marshal(payload)
}

// formEvent appends an external form event (no run) in stx.
func (e *Forms) formEvent(ctx context.Context, stx storage.Tx, orgID, name string, payload map[string]any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%s payload: %w", name, err)
	}
	return e.core.Emit(ctx, stx, []svctype.Event{{
		DeliveryID: "dlv_" + uuid.NewString(), OrgID: orgID, Event: name, Timestamp: e.now().UTC(), Payload: b,
	}}, nil)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}
