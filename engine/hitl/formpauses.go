package hitl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcflow/svcflow/engine/core"
	"github.com/svcflow/svcflow/engine/orgconfig"
	"github.com/svcflow/svcflow/engine/storage"
	"github.com/svcflow/svcflow/engine/svctype"
	"github.com/svcflow/svcflow/forms"
)

// Form pauses. A PbotForm step pauses its run the way an approval does (pauseRun): in the
// step's transaction it writes the pause (expected keys, the resolved form_schema_v1,
// expiry, reminders), emits form_pause_created and enqueues the pause's timers (its expiry
// and one job per reminder) as jobs. The first valid submit adds each submitted key to the
// run's context, emits form_submitted and resumes the run, in one transaction; any later
// submit is 409. An expiry closes the pause, emits form_expired, and the run goes on without
// submission data. A reminder emits form_reminder unless the form was submitted first.

// FormStep is the step type that waits for a person's submission.
const FormStep = "PbotForm"

// Form pause job kinds (payload {form_pause_id, reminder_index?}).
const (
	JobFormExpire   = "form_expire"
	JobFormReminder = "form_reminder"
)

// Form pause events (spec section 6; form_reminder as DESIGN.md names it).
const (
	EventFormPauseCreated = "form_pause_created"
	EventFormSubmitted    = "form_submitted"
	EventFormExpired      = "form_expired"
	EventFormReminder     = "form_reminder"
)

type formTimerPayload struct {
	FormPauseID   string `json:"form_pause_id"`
	ReminderIndex int    `json:"reminder_index,omitempty"`
}

// formSchema resolves the schema of a pause that no model drafts: the schema authored for
// the step (any shape forms.Normalize reads), else one text field per expected key.
func formSchema(props map[string]any, expected []string) (*forms.Schema, error) {
	s := blankForm()
	if raw, ok := props["schema"]; ok && raw != nil {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		if s, err = forms.Normalize(b); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	return withKeys(s, expected)
}

// withKeys makes every expected key a field of s (forms.EnsureKeys) and checks the result.
func withKeys(s *forms.Schema, expected []string) (*forms.Schema, error) {
	s = forms.EnsureKeys(s, expected)
	if problems := forms.Validate(s); len(problems) > 0 {
		return nil, fmt.Errorf("schema%s: %s", problems[0].Pointer, problems[0].Message)
	}
	return s, nil
}

// Where a pause's schema came from: the result of the step's form_schema decision.
const (
	FormSchemaAuthored   = "authored"
	FormSchemaTextFields = "text_fields"
	FormSchemaGenerated  = "generated"
	FormSchemaCached     = "generated_cached"
	FormSchemaFallback   = "generated_fallback"
)

// pauseSchema resolves the schema of the pause of step (at index) in the spec's order. The
// first place, a schema attribute on the SDK's element, is the browser's business; then
//
//  1. the schema authored for the step (its schema property);
//  2. with the agent_forms feature, the schema generated for the step: the one kept for
//     this step of this workflow version, else one the organization's model drafts. The
//     draft is the step's IO call (io.go): pauseSchema stops the unit with needIO, its
//     transaction rolls back, the call is made holding no transaction and no step slot,
//     and the unit runs again, finding the call's result here. Only the model's own form is
//     kept (with the pause, in the step's transaction); a fallback serves this pause only,
//     so a later run asks the model again;
//  3. one text field per expected key.
//
// Every expected key is a field. The source is recorded as the step's form_schema decision.
func (e *HITL) pauseSchema(ctx context.Context, tx Tx, p *core.PauseCall, props map[string]any, expected []string) (*forms.Schema, error) {
	decide := func(source, reason string) {
		p.AddDecision(svctype.Decision{Kind: "form_schema", Result: source, Reason: reason})
	}
	if raw, ok := props["schema"]; ok && raw != nil {
		decide(FormSchemaAuthored, "")
		return formSchema(props, expected)
	}
	features, err := tx.GetOrgFeatures(ctx, p.Run.OrgID)
	if err != nil {
		return nil, err
	}
	if !features.AgentForms {
		decide(FormSchemaTextFields, "")
		return formSchema(props, expected)
	}
	at := svctype.FormSchemaKey{OrgID: p.Run.OrgID, WorkflowID: p.Run.WorkflowID, WorkflowVersion: p.Run.WorkflowVersion,
		StepIndex: p.Index, OnFalse: onFalseDepth(p.Top, p.Step)}
	schema, err := tx.GeneratedFormSchema(ctx, at)
	if err == nil {
		decide(FormSchemaCached, "")
		return keptSchema(schema, expected)
	}
	if !errors.Is(err, core.ErrNotFound) {
		return nil, err
	}
	r, err := p.Outside(e.formDraftKind(formGeneration(props, expected)), props)
	if err != nil {
		return nil, err
	}
	g, _ := r.Out.(*GeneratedForm)
	switch {
	case r.Err != nil:
		e.log.WarnContext(ctx, "drafting a form pause's schema failed; one text field per expected key",
			"org_id", p.Run.OrgID, "run_id", p.Run.ID, "step_index", p.Index, "err", r.Err)
		decide(FormSchemaFallback, "the model call failed: "+r.Err.Error())
		return formSchema(props, expected)
	case g == nil || g.Source != "llm":
		reason := "the organization has no " + orgconfig.LLMAPIKey
		if g != nil && g.ModelCalls > 0 {
			reason = fmt.Sprintf("no valid form from the model in %d attempts", g.Attempts)
		}
		decide(FormSchemaFallback, reason)
		return formSchema(props, expected)
	}
	raw, err := json.Marshal(g.Schema)
	if err != nil {
		return nil, err
	}
	if schema, err = tx.KeepGeneratedFormSchema(ctx, &svctype.GeneratedFormSchema{FormSchemaKey: at, Schema: raw,
		Attempts: g.Attempts, CreatedAt: e.now().UTC()}); err != nil {
		return nil, err
	}
	decide(FormSchemaGenerated, "")
	return keptSchema(schema, expected)
}

// keptSchema is a generated schema as a pause shows it: every expected key a field.
func keptSchema(kept *svctype.GeneratedFormSchema, expected []string) (*forms.Schema, error) {
	s, err := forms.Normalize(kept.Schema)
	if err != nil {
		return nil, fmt.Errorf("the schema generated for step %d of workflow %s version %d: %w",
			kept.StepIndex, kept.WorkflowID, kept.WorkflowVersion, err)
	}
	return withKeys(s, expected)
}

// formGeneration is what the model is asked to draft for a PbotForm step: the form for its
// intent property (else "Collect: <expected keys>"), with its expected keys and hints.
func formGeneration(props map[string]any, expected []string) FormGeneration {
	intent, _ := props["intent"].(string)
	if strings.TrimSpace(intent) == "" {
		intent = "Collect: " + strings.Join(expected, ", ")
	}
	hints, _ := props["hints"].(map[string]any)
	return FormGeneration{Intent: intent, ExpectedKeys: expected, Hints: hints}
}

// onFalseDepth is where step sits in the onFalse chain under top: 0 when it is top.
func onFalseDepth(top, step *svctype.Step) int {
	n := 0
	for s := top; s != nil && s != step; s = s.OnFalse {
		n++
	}
	return n
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, el := range arr {
		if s, ok := el.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// requestForm pauses a run at a PbotForm step (core.PauseKind.Pause): in the step's
// transaction it records the pause, its timers and its event.
func (e *HITL) requestForm(ctx context.Context, stx storage.Tx, pc *core.PauseCall) error {
	tx := Tx(stx)
	props, err := pc.Properties(ctx)
	if err != nil {
		return err
	}
	expected := stringList(props["expected_keys"])
	schema, err := e.pauseSchema(ctx, tx, pc, props, expected)
	if err != nil {
		return err
	}
	run := pc.Run
	now := e.now().UTC()
	p := svctype.FormPause{ID: "fp_" + uuid.NewString(), OrgID: run.OrgID, RunID: run.ID, WorkflowID: run.WorkflowID,
		StepIndex: pc.Index, Status: svctype.FormPauseOpen, ExpectedKeys: expected, CreatedAt: now, UpdatedAt: now}
	p.AssigneeRole, _ = props["assignee_role"].(string)
	if p.Schema, err = json.Marshal(schema); err != nil {
		return err
	}
	if ttl, ok := svctype.Float(props["ttl_seconds"]); ok && ttl > 0 {
		at := now.Add(time.Duration(ttl * float64(time.Second)))
		p.ExpiresAt = &at
		if err := e.formJob(ctx, tx, &p, JobFormExpire, formTimerPayload{FormPauseID: p.ID}, at.Sub(now)); err != nil {
			return err
		}
	}
	reminders, _ := props["reminder_intervals"].([]any)
	for i, v := range reminders {
		secs, _ := svctype.Float(v)
		p.ReminderIntervals = append(p.ReminderIntervals, secs)
		if p.ExpiresAt != nil && !now.Add(time.Duration(secs*float64(time.Second))).Before(*p.ExpiresAt) {
			continue // due when the form has closed: a reminder of nothing
		}
		if err := e.formJob(ctx, tx, &p, JobFormReminder, formTimerPayload{FormPauseID: p.ID, ReminderIndex: i},
			time.Duration(secs*float64(time.Second))); err != nil {
			return err
		}
	}
	if err := tx.CreateFormPause(ctx, &p); err != nil {
		return err
	}
	pc.Emit(
		pc.Event(core.EventStepStarted, map[string]any{"run_id": run.ID, "step_index": pc.Index, "step_type": pc.Step.Type}),
		pc.Event(EventFormPauseCreated, withRole(map[string]any{
			"form_pause_id": p.ID, "run_id": run.ID, "step_id": strconv.Itoa(pc.Index), "expected_keys": expected, "expires_at": p.ExpiresAt,
		}, p.AssigneeRole)))
	pc.SetInputSummary(withRole(map[string]any{"expected_keys": expected, "ttl_seconds": props["ttl_seconds"]}, p.AssigneeRole))
	pc.AddEffect(svctype.Effect{Kind: "form_pause_created", Target: p.ID,
		Detail: withRole(withExpiry(map[string]any{"expected_keys": expected}, p.ExpiresAt), p.AssigneeRole)})
	return nil
}

// withRole adds a pause's assignee_role to m when the step names one.
// withExpiry adds expires_at to an effect's detail when there is one: a pause without a
// deadline says nothing of it, as every other optional field of a detail.
func withExpiry(m map[string]any, at *time.Time) map[string]any {
	if at != nil {
		m["expires_at"] = at
	}
	return m
}

func withRole(m map[string]any, role string) map[string]any {
	if role != "" {
		m["assignee_role"] = role
	}
	return m
}

// formJob enqueues a timer of pause p due wait after it was created (the engine's clock,
// which is its store's: store.WithNow).
func (e *HITL) formJob(ctx context.Context, tx Tx, p *svctype.FormPause, kind string, payload formTimerPayload, wait time.Duration) error {
	b, _ := json.Marshal(payload)
	return tx.EnqueueJob(ctx, &svctype.Job{OrgID: p.OrgID, Kind: kind, RunID: p.RunID, RunAt: p.CreatedAt.Add(wait), Payload: b})
}

// FormPause returns the run's pause at stepIndex (its latest).
func (e *HITL) FormPause(ctx context.Context, orgID, runID string, stepIndex int) (*svctype.FormPause, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	if _, err := e.store.GetRun(ctx, orgID, runID); err != nil {
		return nil, err
	}
	return e.store.FormPauseAt(ctx, orgID, runID, stepIndex)
}

// PendingForms pages the organization's open pauses, newest first.
func (e *HITL) PendingForms(ctx context.Context, orgID string, opts svctype.ListOptions) (svctype.Page[svctype.FormPause], error) {
	if err := core.CheckOrg(orgID); err != nil {
		return svctype.Page[svctype.FormPause]{}, err
	}
	return e.store.ListFormPauses(ctx, orgID, svctype.FormPauseOpen, opts)
}

// FormSubmission is a submit of a form pause.
type FormSubmission struct {
	Data map[string]any
	// ClaimedBy is the signed-in person who submitted (from the gateway), if any.
	ClaimedBy string
}

// SubmitForm submits the pause a run waits at, at stepIndex: a submit missing an expected
// key (or failing the schema) is a ValidationError naming each problem and changes nothing;
// the first valid submit adds each key to the run's context and resumes the run; any later
// one is core.ErrConflict, also when two race. Another organization's run is core.ErrNotFound.
func (e *HITL) SubmitForm(ctx context.Context, orgID, runID string, stepIndex int, sub FormSubmission) (*svctype.FormPause, error) {
	if err := core.CheckOrg(orgID); err != nil {
		return nil, err
	}
	var out *svctype.FormPause
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		run, err := tx.GetRun(ctx, orgID, runID)
		if err != nil {
			return err
		}
		p, err := tx.FormPauseAt(ctx, orgID, runID, stepIndex)
		if errors.Is(err, core.ErrNotFound) {
			return fmt.Errorf("%w: run %s has no form at step %d", core.ErrConflict, runID, stepIndex)
		}
		if err != nil {
			return err
		}
		if p.Status != svctype.FormPauseOpen || run.Status != svctype.RunPaused {
			return fmt.Errorf("%w: the form of run %s at step %d is %s", core.ErrConflict, runID, stepIndex, p.Status)
		}
		now := e.now().UTC()
		if p.ExpiresAt != nil && !now.Before(*p.ExpiresAt) {
			return ErrFormPauseExpired
		}
		if err := checkSubmission(p, sub.Data); err != nil {
			return err
		}
		p.Status, p.SubmissionID, p.SubmittedAt, p.ClaimedBy, p.UpdatedAt = svctype.FormPauseSubmitted, "sub_"+uuid.NewString(), &now, sub.ClaimedBy, now
		if p.Submission, err = json.Marshal(sub.Data); err != nil {
			return err
		}
		if err := tx.CloseFormPause(ctx, p); err != nil {
			return err
		}
		for k, v := range sub.Data {
			b, _ := json.Marshal(v)
			if err := tx.PutContext(ctx, orgID, runID, k, b); err != nil {
				return err
			}
		}
		payload := map[string]any{"form_pause_id": p.ID, "submission_id": p.SubmissionID, "run_id": runID, "step_id": strconv.Itoa(stepIndex)}
		if sub.ClaimedBy != "" {
			payload["claimed_by"] = sub.ClaimedBy
		}
		if err := e.resumeAfterForm(ctx, stx, run, p, EventFormSubmitted, payload, now); err != nil {
			return err
		}
		out = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.core.Resumed(orgID, runID)
	return out, nil
}

// checkSubmission: every expected key present, none the engine owns, and the data valid
// against the schema.
func checkSubmission(p *svctype.FormPause, data map[string]any) error {
	var problems []core.Problem
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if core.OwnedContextKey(k) {
			problems = append(problems, core.Problem{Pointer: "/data/" + k, Message: ownedKeyMessage})
		}
	}
	var missing []string
	for _, k := range p.ExpectedKeys {
		if v, ok := data[k]; !ok || v == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, core.Problem{Pointer: "/data", Message: "missing expected keys: " + strings.Join(missing, ", ")})
	}
	var schema forms.Schema
	if err := json.Unmarshal(p.Schema, &schema); err == nil {
		for _, pr := range forms.ValidateSubmission(&schema, data) {
			problems = append(problems, core.Problem{Pointer: pr.Pointer, Message: pr.Message})
		}
	}
	if len(problems) > 0 {
		return &core.ValidationError{Problems: problems}
	}
	return nil
}

// resumeAfterForm closes the step of pause p and resumes the run past it, in stx: the
// pause's remaining timers removed, then the core's resumption with event.
func (e *HITL) resumeAfterForm(ctx context.Context, stx storage.Tx, run *svctype.Run, p *svctype.FormPause, event string, payload map[string]any, now time.Time) error {
	tx := Tx(stx)
	rec := svctype.StepRecord{RunID: run.ID, Index: p.StepIndex, Type: FormStep, Status: svctype.StepCompleted, FinishedAt: &now,
		Output:  core.MustJSON(map[string]any{"form_pause_id": p.ID, "status": p.Status, "submission_id": p.SubmissionID}),
		Effects: []svctype.Effect{{Kind: "form_" + string(p.Status), Target: p.ID}}}
	for _, kind := range []string{JobFormExpire, JobFormReminder} {
		if err := tx.DeleteJobs(ctx, run.OrgID, kind, run.ID, ""); err != nil {
			return err
		}
	}
	return e.core.ResumeTx(ctx, stx, run, core.Resume{Step: rec, Events: []svctype.Event{e.core.Event(run, event, payload)}})
}

// formTimer runs a form pause's expiry or reminder job: only while the pause is open.
func (e *HITL) formTimer(ctx context.Context, job *svctype.Job) error {
	var pl formTimerPayload
	_ = json.Unmarshal(job.Payload, &pl)
	var changed *svctype.Run
	err := e.core.Store().InTx(ctx, func(ctx context.Context, stx storage.Tx) error {
		tx := Tx(stx)
		if err := tx.RenewJob(ctx, job, e.core.Lease()); err != nil {
			return err
		}
		if err := tx.CompleteJob(ctx, job); err != nil {
			return err
		}
		p, err := tx.GetFormPause(ctx, job.OrgID, pl.FormPauseID)
		if errors.Is(err, core.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		run, err := tx.GetRun(ctx, job.OrgID, p.RunID)
		if err != nil {
			return err
		}
		if p.Status != svctype.FormPauseOpen || run.Status != svctype.RunPaused {
			return nil
		}
		if job.Kind == JobFormReminder {
			if i := pl.ReminderIndex; p.ExpiresAt != nil && i < len(p.ReminderIntervals) &&
				!p.CreatedAt.Add(time.Duration(p.ReminderIntervals[i]*float64(time.Second))).Before(*p.ExpiresAt) {
				return nil // due at or after the expiry (a job enqueued before that rule): no reminder of a closed form
			}
			return e.core.Emit(ctx, stx, []svctype.Event{e.core.Event(run, EventFormReminder, map[string]any{
				"run_id": run.ID, "step_id": strconv.Itoa(p.StepIndex), "form_pause_id": p.ID,
				"reminder_index": pl.ReminderIndex, "expires_at": p.ExpiresAt,
			})}, nil)
		}
		now := e.now().UTC()
		p.Status, p.UpdatedAt = svctype.FormPauseExpired, now
		if err := tx.CloseFormPause(ctx, p); err != nil {
			return err
		}
		changed = run
		return e.resumeAfterForm(ctx, stx, run, p, EventFormExpired, map[string]any{"run_id": run.ID, "step_id": strconv.Itoa(p.StepIndex)}, now)
	})
	if err == nil && changed != nil {
		e.core.Resumed(changed.OrgID, changed.ID)
	}
	return err
}

// formProblems checks a PbotForm step's properties at create time.
func formProblems(props map[string]any, at string) []core.Problem {
	var out []core.Problem
	keys, ok := props["expected_keys"].([]any)
	if !ok || len(keys) == 0 {
		out = append(out, core.Problem{Pointer: at + "/expected_keys", Message: "required: an array of the keys a submission must carry"})
	}
	var expected []string
	for i, k := range keys {
		s, isString := k.(string)
		if !isString || !forms.ValidKey(s) {
			out = append(out, core.Problem{Pointer: fmt.Sprintf("%s/expected_keys/%d", at, i), Message: "a snake_case key (letters, digits, _; starting with a letter)"})
			continue
		}
		if core.OwnedContextKey(s) {
			out = append(out, core.Problem{Pointer: fmt.Sprintf("%s/expected_keys/%d", at, i), Message: ownedKeyMessage})
			continue
		}
		expected = append(expected, s)
	}
	if v, ok := props["ttl_seconds"]; ok {
		if n, isNumber := svctype.Float(v); !isNumber || n < 0 || n > maxPauseSeconds {
			out = append(out, core.Problem{Pointer: at + "/ttl_seconds", Message: "a number of seconds, 0 or more (0: never expires), at most 315,360,000 (ten years)"})
		}
	}
	if v, ok := props["reminder_intervals"]; ok {
		arr, isArray := v.([]any)
		if !isArray {
			out = append(out, core.Problem{Pointer: at + "/reminder_intervals", Message: "an array of seconds after the pause opens"})
		}
		for i, el := range arr {
			if n, isNumber := svctype.Float(el); !isNumber || n <= 0 || n > maxPauseSeconds {
				out = append(out, core.Problem{Pointer: fmt.Sprintf("%s/reminder_intervals/%d", at, i), Message: "a number of seconds greater than 0, at most 315,360,000 (ten years)"})
			}
		}
	}
	if v, ok := props["assignee_role"]; ok {
		if s, isString := v.(string); !isString || !validRole(s) {
			out = append(out, core.Problem{Pointer: at + "/assignee_role", Message: "a role name: 1-100 characters, no surrounding spaces: the role whose people may take the form"})
		}
	}
	if v, ok := props["intent"]; ok {
		if s, isString := v.(string); !isString || len(s) > 4000 {
			out = append(out, core.Problem{Pointer: at + "/intent", Message: "a string of at most 4,000 characters: what the form is for, for a generated schema"})
		}
	}
	if v, ok := props["hints"]; ok {
		if _, isObject := v.(map[string]any); !isObject {
			out = append(out, core.Problem{Pointer: at + "/hints", Message: "an object of hints for a generated schema"})
		}
	}
	if _, ok := props["schema"]; ok && len(out) == 0 {
		s, err := formSchema(props, expected)
		if err != nil {
			out = append(out, core.Problem{Pointer: at + "/schema", Message: err.Error()})
		}
		for _, pg := range schemaPages(s) {
			for _, f := range pg.Fields {
				if core.OwnedContextKey(f.Key) {
					out = append(out, core.Problem{Pointer: at + "/schema", Message: fmt.Sprintf("field %q: %s", f.Key, ownedKeyMessage)})
				}
			}
		}
	}
	return out
}

// ownedKeyMessage says why a form may not collect a key the engine owns.
const ownedKeyMessage = "a key the engine owns (input, or one starting with __): a submission cannot set it"

func schemaPages(s *forms.Schema) []forms.Page {
	if s == nil {
		return nil
	}
	return s.Pages
}
